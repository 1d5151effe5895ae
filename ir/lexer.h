// The tokens of the IR text format (ir/README.md). The whole text is tokenized up front; the
// parser then reads the token vector with unbounded lookahead and without re-scanning.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::ir {

enum class TokenKind {
  End,
  Ident,      // graph, f32, add, prim.constant, true, none, inf ...
  ValueName,  // %x or %3; `text` excludes the '%'
  Int,        // -12
  Float,      // 1.0, -2e-05, -inf (signed inf and nan only; bare ones lex as Ident)
  String,     // "a\"b"; `text` is the decoded contents
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equals,
  Operator,  // * + - in a symbolic size (2*s0 + 1), and the relations == != < <= > >= of a fact;
             // a sign before digits is part of the number
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int line = 1;
  int column = 1;
};

struct LexResult {
  std::vector<Token> tokens;  // always ends with an End token
  // Comments that follow other text on their line, by line: the call sites of node lines.
  std::unordered_map<int, std::string> trailing_comments;
};

// Throws kiln::Error ("parse error at line L, column C: ...") on bytes that form no token.
LexResult tokenize(std::string_view text);

// A token as an error message quotes it: "'%x'", "end of input".
std::string describe(const Token& t);

// Throws kiln::Error with the parse error prefix for the given position.
[[noreturn]] void parse_error(int line, int column, const std::string& message);

}  // namespace kiln::ir
