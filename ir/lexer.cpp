#include "kiln/ir/lexer.h"

#include <fmt/format.h>

#include "kiln/base/error.h"

namespace kiln::ir {
namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// Bytes are quoted as they are when printable ASCII, else as \xNN, so that a message about
// garbage input stays readable (and valid UTF-8).
std::string quote_bytes(std::string_view s, size_t max_len = 32) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b]))
    ++b;
  while (e > b && is_space(s[e - 1]))
    --e;
  return std::string(s.substr(b, e - b));
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  LexResult run() {
    LexResult r;
    int tokens_line = 0;  // the last line that holds a token
    while (true) {
      skip_space();
      if (pos_ >= s_.size()) break;
      char c = s_[pos_];
      if (c == '#') {
        size_t end = s_.find('\n', pos_);
        if (end == std::string_view::npos) end = s_.size();
        if (tokens_line == line_)
          r.trailing_comments[line_] = trim(s_.substr(pos_ + 1, end - pos_ - 1));
        advance(end - pos_);
        continue;
      }
      r.tokens.push_back(next_token());
      tokens_line = line_;
    }
    Token end;
    end.line = line_;
    end.column = column_;
    r.tokens.push_back(std::move(end));
    return r;
  }

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_) {
      if (s_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    }
  }
  void skip_space() {
    while (pos_ < s_.size() && is_space(s_[pos_]))
      advance();
  }
  [[noreturn]] void fail(const std::string& message) const { parse_error(line_, column_, message); }

  Token make(TokenKind kind, size_t start, int line, int column) {
    Token t;
    t.kind = kind;
    t.text = std::string(s_.substr(start, pos_ - start));
    t.line = line;
    t.column = column;
    return t;
  }

  bool at_number_start() const {
    char c = peek();
    if (is_digit(c)) return true;
    if (c != '-' && c != '+') return false;
    return is_digit(peek(1)) || s_.substr(pos_ + 1, 3) == "inf" || s_.substr(pos_ + 1, 3) == "nan";
  }

  Token next_token() {
    int line = line_, column = column_;
    size_t start = pos_;
    char c = peek();
    auto single = [&](TokenKind k) {
      advance();
      return make(k, start, line, column);
    };
    switch (c) {
      case '(':
        return single(TokenKind::LParen);
      case ')':
        return single(TokenKind::RParen);
      case '[':
        return single(TokenKind::LBracket);
      case ']':
        return single(TokenKind::RBracket);
      case '{':
        return single(TokenKind::LBrace);
      case '}':
        return single(TokenKind::RBrace);
      case ',':
        return single(TokenKind::Comma);
      case ':':
        return single(TokenKind::Colon);
      case '=':
        // "==" is a relation (the facts of an assuming(...) clause); "=" binds a name.
        if (peek(1) == '=') {
          advance();
          return single(TokenKind::Operator);
        }
        return single(TokenKind::Equals);
      case '<':
      case '>':
      case '!':
        // Relations: <, <=, >, >=, != (Note [Assumed size facts]).
        if (peek(1) == '=') {
          advance();
          return single(TokenKind::Operator);
        }
        if (c == '!') break;
        return single(TokenKind::Operator);
      case '*':
        return single(TokenKind::Operator);
      case '"':
        return string_token();
      case '%': {
        advance();
        size_t name_start = pos_;
        while (is_ident_char(peek()))
          advance();
        std::string_view name = s_.substr(name_start, pos_ - name_start);
        // %identifier or %N: a name that starts with a digit is all digits.
        bool ok = !name.empty() && (!is_digit(name[0]) ||
                                    name.find_first_not_of("0123456789") == std::string_view::npos);
        if (!ok) {
          std::string found =
              !name.empty()      ? fmt::format("'{}'", quote_bytes(s_.substr(start, pos_ - start)))
              : pos_ < s_.size() ? fmt::format("'{}'", quote_bytes(s_.substr(pos_, 1)))
                                 : std::string("end of input");
          parse_error(
              line, column,
              fmt::format("expected a value name (%identifier or %N) after '%', found {}", found));
        }
        return make(TokenKind::ValueName, name_start, line, column);
      }
      default:
        break;
    }
    if (at_number_start()) return number_token(line, column);
    if (c == '+' || c == '-') return single(TokenKind::Operator);
    if (is_ident_start(c)) {
      while (is_ident_char(peek()) || (peek() == '.' && is_ident_start(peek(1))))
        advance();
      return make(TokenKind::Ident, start, line, column);
    }
    fail(fmt::format("unexpected character '{}'", quote_bytes(s_.substr(pos_, 1))));
  }

  Token number_token(int line, int column) {
    size_t start = pos_;
    bool is_float = false;
    if (peek() == '-' || peek() == '+') advance();
    if (s_.substr(pos_, 3) == "inf" || s_.substr(pos_, 3) == "nan") {
      advance(3);
      is_float = true;
    } else {
      while (is_digit(peek()))
        advance();
      if (peek() == '.') {
        is_float = true;
        advance();
        while (is_digit(peek()))
          advance();
      }
      if (peek() == 'e' || peek() == 'E') {
        is_float = true;
        advance();
        if (peek() == '-' || peek() == '+') advance();
        if (!is_digit(peek()))
          fail(fmt::format("expected the digits of an exponent, found '{}'",
                           quote_bytes(s_.substr(pos_, 1))));
        while (is_digit(peek()))
          advance();
      }
    }
    if (is_ident_char(peek()))
      fail(fmt::format("expected the end of the number '{}', found '{}'",
                       quote_bytes(s_.substr(start, pos_ - start)),
                       quote_bytes(s_.substr(pos_, 1))));
    return make(is_float ? TokenKind::Float : TokenKind::Int, start, line, column);
  }

  Token string_token() {
    int line = line_, column = column_;
    advance();  // the opening quote
    std::string value;
    while (true) {
      if (pos_ >= s_.size() || peek() == '\n')
        parse_error(line, column, "unterminated string: expected a closing '\"' on the same line");
      char c = peek();
      if (c == '"') {
        advance();
        break;
      }
      if (c == '\\') {
        char e = peek(1);
        if (e == '"' || e == '\\') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else {
          fail(fmt::format("expected an escape \\\", \\\\ or \\n in a string, found '\\{}'",
                           quote_bytes(s_.substr(pos_ + 1, 1))));
        }
        advance(2);
        continue;
      }
      value += c;
      advance();
    }
    Token t;
    t.kind = TokenKind::String;
    t.text = std::move(value);
    t.line = line;
    t.column = column;
    return t;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

void parse_error(int line, int column, const std::string& message) {
  KILN_ERROR("parse error at line {}, column {}: {}", line, column, message);
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End:
      return "end of input";
    case TokenKind::ValueName:
      return fmt::format("'%{}'", quote_bytes(t.text));
    case TokenKind::String:
      return fmt::format("the string \"{}\"", quote_bytes(t.text));
    default:
      return fmt::format("'{}'", quote_bytes(t.text));
  }
}

LexResult tokenize(std::string_view text) {
  return Lexer(text).run();
}

}  // namespace kiln::ir
