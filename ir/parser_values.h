// The value level of the IR text parser (ir/parser.cpp): the token cursor with its error
// helpers, types, attribute values and constant data. The graph level (graphs, nodes, names)
// lives in parser.cpp.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ir/lexer.h"

namespace kiln::ir {

// An op's attribute struct, default-initialized, owned until the node copies it.
class OwnedAttrs {
 public:
  explicit OwnedAttrs(const AttrVTable* vt)
      : vt_(vt), p_(vt != nullptr ? vt->make_default() : nullptr) {}
  OwnedAttrs(const OwnedAttrs&) = delete;
  OwnedAttrs& operator=(const OwnedAttrs&) = delete;
  OwnedAttrs(OwnedAttrs&& o) noexcept : vt_(o.vt_), p_(o.p_) { o.p_ = nullptr; }
  OwnedAttrs& operator=(OwnedAttrs&&) = delete;
  ~OwnedAttrs() {
    if (p_ != nullptr) vt_->destroy(p_);
  }
  void* get() const { return p_; }
  std::vector<AttrField> fields() const {
    return p_ != nullptr ? vt_->fields(p_) : std::vector<AttrField>{};
  }

 private:
  const AttrVTable* vt_;
  void* p_;
};

class TokenCursor {
 public:
  explicit TokenCursor(LexResult lex)
      : tokens_(std::move(lex.tokens)), trailing_comments_(std::move(lex.trailing_comments)) {}

 protected:
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(TokenKind k) {
    if (peek().kind != k) return false;
    next();
    return true;
  }
  // Consumes a token of kind `k`, or throws "expected <what>, found <token>".
  const Token& expect(TokenKind k, std::string_view what);
  [[noreturn]] void fail_at(const Token& t, const std::string& message) const;

  // DTYPE[d0, ...] [strided[s0, ...]] [device] [requires_grad]. A size or stride may be
  // symbolic (2*s0 + 1); such a type's hint values are filled in when symbols_known_ is set,
  // else by a later evaluate_symbolic (a graph's inputs come before its symbols clause).
  TensorType parse_type();
  // One size: an integer, or an expression over symbols as SymInt::str prints it.
  SymInt parse_sym_size(std::string_view what);
  // "[s0, 32]": a list of sizes as sym_shape_str prints it.
  SymShape parse_sym_list(std::string_view what);
  // Sets the hint values of a symbolic type from hints_, checking them as parse_type checks
  // integer sizes; errors point at `at`.
  void evaluate_symbolic(TensorType& t, const Token& at) const;
  Device parse_device(std::string_view what);
  Shape parse_int_list(std::string_view what);
  int64_t parse_int(std::string_view what);
  double parse_double(std::string_view what);
  Scalar parse_scalar(std::string_view what);
  // Reads the value of one attribute field of op `kind` into the field.
  void parse_field(const AttrField& f, std::string_view kind);
  // `[e0, e1, ...]` with exactly numel elements, as a tensor of `type`.
  Tensor parse_constant_value(const TensorType& type);
  static Tensor empty_meta(const TensorType& type);
  static std::string format_type_of(const TensorType& type);

  // The symbol hints of the graph being read (Graph::symbol_hints), and whether its symbols
  // clause has been read.
  std::vector<int64_t> hints_;
  bool symbols_known_ = true;
  // Its assuming clause's facts (Graph::symbol_facts).
  std::vector<SymFact> facts_;

  std::vector<Token> tokens_;  // never empty: ends with an End token
  size_t pos_ = 0;
  std::unordered_map<int, std::string> trailing_comments_;
};

}  // namespace kiln::ir
