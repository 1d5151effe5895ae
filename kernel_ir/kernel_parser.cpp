#include "kiln/kernel_ir/kernel_parser.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "kiln/base/dtype.h"
#include "kiln/base/error.h"

namespace kiln::kir {
namespace {

// ---- tokens ----

enum class Tok : uint8_t { End, Ident, Name, Temp, Number, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier, %name without '%', $N without '$', number, punctuation
  int line = 1;
  int column = 1;
};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  Token next() {
    skip_space_and_comments();
    Token t;
    t.line = line_;
    t.column = static_cast<int>(pos_ - line_start_) + 1;
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    auto take_while = [&](size_t from, auto pred) {
      size_t p = from;
      while (p < s_.size() && pred(s_[p]))
        ++p;
      return p;
    };
    if ((c == '%' || c == '$') && pos_ + 1 < s_.size() && name_char(s_[pos_ + 1]) &&
        s_[pos_ + 1] != '.') {
      size_t end = take_while(pos_ + 1, name_char);
      t.kind = c == '%' ? Tok::Name : Tok::Temp;
      t.text = std::string(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end;
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t p =
          take_while(pos_, [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      // A fraction only when a digit follows the '.': `0..3` is 0, `..`, 3.
      if (p + 1 < s_.size() && s_[p] == '.' && std::isdigit(static_cast<unsigned char>(s_[p + 1])))
        p = take_while(p + 1, [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
        size_t q = p + 1;
        if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
        if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q])))
          p = take_while(q, [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      }
      t.kind = Tok::Number;
      t.text = std::string(s_.substr(pos_, p - pos_));
      pos_ = p;
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = take_while(pos_, name_char);
      t.kind = Tok::Ident;
      t.text = std::string(s_.substr(pos_, end - pos_));
      pos_ = end;
      return t;
    }
    static constexpr std::string_view kTwo[] = {"..", "==", "!=", "<=", "&&", "||", "+=", "*="};
    for (std::string_view two : kTwo) {
      if (s_.substr(pos_, 2) == two) {
        t.kind = Tok::Punct;
        t.text = std::string(two);
        pos_ += 2;
        return t;
      }
    }
    t.kind = Tok::Punct;
    t.text = std::string(1, c);
    ++pos_;
    return t;
  }

 private:
  void skip_space_and_comments() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n')
          ++pos_;
      } else {
        return;
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

// ---- expressions as written, before their dtypes are known ----

enum class Ast : uint8_t { Number, Bool, Var, Temp, Load, Unary, Binary, Select, Cast };

struct Node {
  Ast kind = Ast::Number;
  std::string text;  // Number: the literal, with its sign
  bool floating = false;
  bool value = false;  // Bool
  VarId var = -1;
  ExprId temp = kNoExpr;
  BufferId buffer = -1;
  uint8_t op = 0;
  DType dtype = kFloat32;  // Cast: the target
  std::vector<std::unique_ptr<Node>> args;
};
using NodePtr = std::unique_ptr<Node>;

std::optional<UnaryOp> unary_by_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(UnaryOp::GeluExact); ++i) {
    auto op = static_cast<UnaryOp>(i);
    if (op != UnaryOp::Neg && op != UnaryOp::Not && unary_op_name(op) == name) return op;
  }
  return std::nullopt;
}

bool is_comparison_or_logic(BinaryOp op) {
  return is_comparison(op) || op == BinaryOp::And || op == BinaryOp::Or;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) { advance(); }

  std::vector<Kernel> kernels() {
    std::vector<Kernel> out;
    while (tok_.kind != Tok::End)
      out.push_back(kernel());
    return out;
  }

 private:
  // ---- token helpers ----
  void advance() { tok_ = lex_.next(); }
  [[noreturn]] void fail(const std::string& what) const {
    std::string got = tok_.kind == Tok::End    ? "the end of the text"
                      : tok_.kind == Tok::Name ? "'%" + tok_.text + "'"
                      : tok_.kind == Tok::Temp ? "'$" + tok_.text + "'"
                                               : "'" + tok_.text + "'";
    KILN_ERROR("kernel-IR parser: line {}, column {}: expected {}, got {}", tok_.line, tok_.column,
               what, got);
  }
  bool at(std::string_view punct_or_ident) const {
    return (tok_.kind == Tok::Punct || tok_.kind == Tok::Ident) && tok_.text == punct_or_ident;
  }
  void expect(std::string_view s) {
    if (!at(s)) fail(fmt::format("'{}'", s));
    advance();
  }
  std::string take(Tok kind, const char* what) {
    if (tok_.kind != kind) fail(what);
    std::string s = std::move(tok_.text);
    advance();
    return s;
  }
  int64_t integer(const char* what) {
    if (tok_.kind != Tok::Number || tok_.text.find_first_of(".eE") != std::string::npos) fail(what);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(tok_.text.c_str(), &end, 10);
    if (errno == ERANGE) fail(fmt::format("{} that fits in 64 bits", what));
    advance();
    return v;
  }
  DType dtype() {
    DType t{};
    if (tok_.kind != Tok::Ident || !dtype_from_short_name(tok_.text, &t))
      fail("a dtype (b8 i32 i64 f16 bf16 f32 f64)");
    advance();
    return t;
  }

  // ---- kernels and statements ----
  Kernel kernel() {
    expect("kernel");
    Kernel k;
    k.name = take(Tok::Ident, "the kernel's name");
    k_ = &k;
    vars_.clear();
    buffers_.clear();
    temps_.clear();
    expect("(");
    bool first = true;
    while (!at(")")) {
      if (!first) expect(",");
      first = false;
      Buffer b;
      b.name = take(Tok::Name, "a buffer '%name'");
      expect(":");
      if (at("size")) {  // a size parameter (Note [Size parameters])
        advance();
        VarId v = declare(b.name, kInt64);
        k.vars[static_cast<size_t>(v)].size = true;
        continue;
      }
      b.dtype = dtype();
      expect("[");
      if (at("?")) {
        advance();
        b.extent = kRuntimeExtent;
      } else {
        b.extent = integer("the buffer's extent or '?'");
      }
      expect("]");
      if (at("out")) {
        advance();
        b.output = true;
      }
      if (!buffers_.emplace(b.name, static_cast<BufferId>(k.buffers.size())).second)
        KILN_ERROR("kernel-IR parser: kernel {}: buffer %{} is declared twice", k.name, b.name);
      k.buffers.push_back(std::move(b));
    }
    expect(")");
    expect("{");
    k.body = block();
    expect("}");
    k_ = nullptr;
    return k;
  }

  std::vector<Stmt> block() {
    std::vector<Stmt> out;
    while (!at("}") && tok_.kind != Tok::End) {
      if (std::optional<Stmt> s = stmt()) out.push_back(std::move(*s));
    }
    return out;
  }

  VarId declare(const std::string& name, DType t) {
    auto id = static_cast<VarId>(k_->vars.size());
    if (!vars_.emplace(name, id).second)
      KILN_ERROR("kernel-IR parser: kernel {}: variable %{} is defined twice", k_->name, name);
    k_->vars.push_back(Var{name, t});
    return id;
  }
  // The variable named by the current token, which it consumes.
  VarId take_var() {
    int line = tok_.line;
    std::string name = take(Tok::Name, "a '%variable'");
    auto it = vars_.find(name);
    if (it == vars_.end())
      KILN_ERROR("kernel-IR parser: line {}: kernel {}: variable %{} is not defined before its use",
                 line, k_->name, name);
    return it->second;
  }
  // The buffer named by the current token, which it consumes.
  BufferId take_buffer(const char* what) {
    int line = tok_.line;
    std::string name = take(Tok::Name, what);
    auto it = buffers_.find(name);
    if (it == buffers_.end())
      KILN_ERROR("kernel-IR parser: line {}: kernel {}: no buffer %{}", line, k_->name, name);
    return it->second;
  }

  std::optional<Stmt> stmt() {
    Stmt s;
    if (at("parallel") || at("vector") || at("for")) {
      s.kind = StmtKind::Loop;
      if (at("parallel")) s.loop_kind = LoopKind::Parallel;
      if (at("vector")) s.loop_kind = LoopKind::Vector;
      if (!at("for")) advance();
      expect("for");
      std::string name = take(Tok::Name, "the loop's '%variable'");
      expect("in");
      if (integer("0, the loop's start") != 0) fail("a loop starting at 0");
      expect("..");
      if (tok_.kind == Tok::Name) {
        s.extent_size = take_var();
      } else {
        s.extent = integer("the loop's extent or a size parameter");
      }
      s.var = declare(name, kInt64);
      expect("{");
      s.body = block();
      expect("}");
      return s;
    }
    if (at("store")) {
      advance();
      s.kind = StmtKind::Store;
      s.buffer = take_buffer("the stored buffer's '%name'");
      expect("[");
      s.index = build(*expr(), kInt64);
      expect("]");
      expect("=");
      NodePtr v = expr();
      s.value = build(*v, infer(*v).value_or(k_->buffers[static_cast<size_t>(s.buffer)].dtype));
      return s;
    }
    if (at("let")) {
      advance();
      if (tok_.kind == Tok::Temp) {  // a printer temporary: text only, no statement
        std::string name = take(Tok::Temp, "");
        expect(":");
        DType t = dtype();
        expect("=");
        temps_[name] = build(*expr(), t);
        return std::nullopt;
      }
      std::string name = take(Tok::Name, "the let's '%variable' or '$N'");
      expect(":");
      DType t = dtype();
      expect("=");
      s.kind = StmtKind::Let;
      s.value = build(*expr(), t);
      s.var = declare(name, t);
      return s;
    }
    if (at("acc")) {
      advance();
      std::string name = take(Tok::Name, "the accumulator's '%variable'");
      expect(":");
      DType t = dtype();
      expect("=");
      s.kind = StmtKind::Accumulator;
      int line = tok_.line;
      s.reduce = reduce_op(take(Tok::Ident, "sum, prod, max or min"), line);
      s.var = declare(name, t);
      return s;
    }
    if (at("if")) {
      advance();
      s.kind = StmtKind::If;
      s.cond = build(*expr(), kBool);
      expect("{");
      s.body = block();
      expect("}");
      if (at("else")) {
        advance();
        expect("{");
        s.else_body = block();
        expect("}");
      }
      return s;
    }
    if (tok_.kind == Tok::Name) {
      s.kind = StmtKind::Accumulate;
      s.var = take_var();
      if (at("+=") || at("*=")) {
        s.reduce = at("+=") ? ReduceOp::Sum : ReduceOp::Prod;
        advance();
      } else if (at("max") || at("min")) {
        s.reduce = at("max") ? ReduceOp::Max : ReduceOp::Min;
        advance();
        expect("=");
      } else {
        fail("'+=', '*=', 'max=' or 'min='");
      }
      s.value = build(*expr(), k_->vars[static_cast<size_t>(s.var)].dtype);
      return s;
    }
    fail("a statement (for, store, let, acc, if, or '%acc += ...')");
  }

  static ReduceOp reduce_op(const std::string& name, int line) {
    for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min})
      if (reduce_op_name(r) == name) return r;
    KILN_ERROR("kernel-IR parser: line {}: '{}' is not a reduction (sum, prod, max or min)", line,
               name);
  }

  // ---- expressions: precedence climbing over the printer's operators ----
  static int prec(std::string_view op) {
    if (op == "||") return 1;
    if (op == "&&") return 2;
    if (op == "==" || op == "!=" || op == "<" || op == "<=") return 3;
    if (op == "+" || op == "-") return 4;
    if (op == "*" || op == "/" || op == "%") return 5;
    return 0;
  }
  static BinaryOp binary_op(std::string_view op) {
    if (op == "||") return BinaryOp::Or;
    if (op == "&&") return BinaryOp::And;
    if (op == "==") return BinaryOp::Eq;
    if (op == "!=") return BinaryOp::Ne;
    if (op == "<") return BinaryOp::Lt;
    if (op == "<=") return BinaryOp::Le;
    if (op == "+") return BinaryOp::Add;
    if (op == "-") return BinaryOp::Sub;
    if (op == "*") return BinaryOp::Mul;
    if (op == "/") return BinaryOp::Div;
    return BinaryOp::Rem;
  }

  NodePtr expr(int min_prec = 1) {
    NodePtr lhs = prefix();
    while (tok_.kind == Tok::Punct && prec(tok_.text) >= min_prec) {
      std::string op = tok_.text;
      int p = prec(op);
      advance();
      // Comparisons do not chain (the printer parenthesizes a comparison under one).
      NodePtr rhs = expr(p + 1);
      auto n = std::make_unique<Node>();
      n->kind = Ast::Binary;
      n->op = static_cast<uint8_t>(binary_op(op));
      n->args.push_back(std::move(lhs));
      n->args.push_back(std::move(rhs));
      lhs = std::move(n);
      if (p == 3 && tok_.kind == Tok::Punct && prec(tok_.text) == 3)
        fail("an operator other than a second comparison (parenthesize it)");
    }
    return lhs;
  }

  NodePtr prefix() {
    if (at("-") || at("!")) {
      bool neg = at("-");
      advance();
      if (neg && (tok_.kind == Tok::Number || at("inf") || at("nan"))) {
        NodePtr n = atom();  // a negative constant (Note [Kernel-IR constants in text])
        n->text = "-" + n->text;
        return n;
      }
      auto n = std::make_unique<Node>();
      n->kind = Ast::Unary;
      n->op = static_cast<uint8_t>(neg ? UnaryOp::Neg : UnaryOp::Not);
      n->args.push_back(prefix());
      return n;
    }
    return atom();
  }

  std::vector<NodePtr> call_args(size_t count, const std::string& callee) {
    expect("(");
    std::vector<NodePtr> args;
    for (size_t i = 0; i < count; ++i) {
      if (i) expect(",");
      args.push_back(expr());
    }
    if (!at(")")) fail(fmt::format("')' after the {} operands of {}", count, callee));
    advance();
    return args;
  }

  NodePtr atom() {
    auto n = std::make_unique<Node>();
    if (tok_.kind == Tok::Number || at("inf") || at("nan")) {
      n->kind = Ast::Number;
      n->text = tok_.text;
      n->floating = tok_.kind == Tok::Ident || tok_.text.find_first_of(".eE") != std::string::npos;
      advance();
      return n;
    }
    if (at("true") || at("false")) {
      n->kind = Ast::Bool;
      n->value = at("true");
      advance();
      return n;
    }
    if (at("(")) {
      advance();
      NodePtr inner = expr();
      expect(")");
      return inner;
    }
    if (tok_.kind == Tok::Name) {
      n->kind = Ast::Var;
      n->var = take_var();
      return n;
    }
    if (tok_.kind == Tok::Temp) {
      int line = tok_.line;
      std::string name = take(Tok::Temp, "");
      auto it = temps_.find(name);
      if (it == temps_.end())
        KILN_ERROR("kernel-IR parser: line {}: ${} is used before its 'let ${}' line", line, name,
                   name);
      n->kind = Ast::Temp;
      n->temp = it->second;
      return n;
    }
    if (tok_.kind != Tok::Ident) fail("an expression");
    int line = tok_.line;
    std::string name = take(Tok::Ident, "");
    DType cast_to{};
    if (name == "load") {
      n->kind = Ast::Load;
      n->buffer = take_buffer("the loaded buffer's '%name'");
      expect("[");
      n->args.push_back(expr());
      expect("]");
    } else if (name == "select") {
      n->kind = Ast::Select;
      n->args = call_args(3, name);
    } else if (name == "pow" || name == "max" || name == "min") {
      n->kind = Ast::Binary;
      n->op = static_cast<uint8_t>(name == "pow"   ? BinaryOp::Pow
                                   : name == "max" ? BinaryOp::Max
                                                   : BinaryOp::Min);
      n->args = call_args(2, name);
    } else if (std::optional<UnaryOp> u = unary_by_name(name)) {
      n->kind = Ast::Unary;
      n->op = static_cast<uint8_t>(*u);
      n->args = call_args(1, name);
    } else if (dtype_from_short_name(name, &cast_to)) {
      n->kind = Ast::Cast;
      n->dtype = cast_to;
      n->args = call_args(1, name);
    } else {
      KILN_ERROR("kernel-IR parser: line {}: '{}' is not an operation of the kernel IR", line,
                 name);
    }
    return n;
  }

  // ---- dtypes, then the expressions themselves ----

  const Expr& at_id(ExprId e) const { return k_->exprs[static_cast<size_t>(e)]; }

  // The dtype a node has whatever its context, when its own operands fix it.
  std::optional<DType> infer(const Node& n) const {
    switch (n.kind) {
      case Ast::Number:
        return std::nullopt;
      case Ast::Bool:
        return kBool;
      case Ast::Var:
        return k_->vars[static_cast<size_t>(n.var)].dtype;
      case Ast::Temp:
        return at_id(n.temp).dtype;
      case Ast::Load:
        return k_->buffers[static_cast<size_t>(n.buffer)].dtype;
      case Ast::Cast:
        return n.dtype;
      case Ast::Unary:
        if (static_cast<UnaryOp>(n.op) == UnaryOp::Not) return kBool;
        return infer(*n.args[0]);
      case Ast::Binary:
        if (is_comparison_or_logic(static_cast<BinaryOp>(n.op))) return kBool;
        if (auto t = infer(*n.args[0])) return t;
        return infer(*n.args[1]);
      case Ast::Select:
        if (auto t = infer(*n.args[1])) return t;
        return infer(*n.args[2]);
    }
    return std::nullopt;
  }
  static bool has_float_literal(const Node& n) {
    if (n.kind == Ast::Number) return n.floating;
    for (const NodePtr& a : n.args)
      if (has_float_literal(*a)) return true;
    return false;
  }

  ExprId raw(Expr e) { return Builder(*k_).raw(e); }

  ExprId build(const Node& n, DType want) {
    Builder b(*k_);
    switch (n.kind) {
      case Ast::Number:
        return constant(n, want);
      case Ast::Bool:
        return b.iconstant(n.value ? 1 : 0, kBool);
      case Ast::Var:
        return b.var_ref(n.var);
      case Ast::Temp:
        return n.temp;
      case Ast::Load:
        return b.load(n.buffer, build(*n.args[0], kInt64));
      case Ast::Cast: {
        const Node& x = *n.args[0];
        DType from =
            infer(x).value_or(has_float_literal(x) ? (n.dtype == kFloat64 ? kFloat32 : kFloat64)
                                                   : (n.dtype == kInt64 ? kInt32 : kInt64));
        Expr e;
        e.kind = ExprKind::Cast;
        e.dtype = n.dtype;
        e.args[0] = build(x, from);
        return raw(e);
      }
      case Ast::Unary: {
        auto op = static_cast<UnaryOp>(n.op);
        DType t = op == UnaryOp::Not ? kBool : infer(*n.args[0]).value_or(want);
        Expr e;
        e.kind = ExprKind::Unary;
        e.op = n.op;
        e.args[0] = build(*n.args[0], t);
        e.dtype = at_id(e.args[0]).dtype;
        return raw(e);
      }
      case Ast::Binary: {
        auto op = static_cast<BinaryOp>(n.op);
        std::optional<DType> t = infer(*n.args[0]);
        if (!t) t = infer(*n.args[1]);
        DType operands = t                                           ? *t
                         : op == BinaryOp::And || op == BinaryOp::Or ? kBool
                         : is_comparison(op) ? (has_float_literal(n) ? kFloat32 : kInt64)
                                             : want;
        Expr e;
        e.kind = ExprKind::Binary;
        e.op = n.op;
        e.args[0] = build(*n.args[0], operands);
        e.args[1] = build(*n.args[1], operands);
        e.dtype = is_comparison_or_logic(op) ? kBool : at_id(e.args[0]).dtype;
        return raw(e);
      }
      case Ast::Select: {
        std::optional<DType> t = infer(*n.args[1]);
        if (!t) t = infer(*n.args[2]);
        Expr e;
        e.kind = ExprKind::Select;
        e.args[0] = build(*n.args[0], kBool);
        e.args[1] = build(*n.args[1], t.value_or(want));
        e.args[2] = build(*n.args[2], t.value_or(want));
        e.dtype = at_id(e.args[1]).dtype;
        return raw(e);
      }
    }
    return kNoExpr;
  }

  ExprId constant(const Node& n, DType want) {
    Builder b(*k_);
    if (!n.floating) {
      if (is_floating(want) || want == kBool) want = kInt64;
      errno = 0;
      long long v = std::strtoll(n.text.c_str(), nullptr, 10);
      if (errno == ERANGE)
        KILN_ERROR("kernel-IR parser: kernel {}: integer constant {} does not fit in 64 bits",
                   k_->name, n.text);
      return b.iconstant(v, want);
    }
    if (!is_floating(want)) want = kFloat32;
    std::string_view t = n.text;
    bool negative = !t.empty() && t[0] == '-';
    if (negative) t.remove_prefix(1);
    double v = 0;
    if (t == "inf") {
      v = std::numeric_limits<double>::infinity();
    } else if (t == "nan") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else {
      v = std::strtod(std::string(t).c_str(), nullptr);
    }
    return b.constant(negative ? -v : v, want);
  }

  Lexer lex_;
  Token tok_;
  Kernel* k_ = nullptr;
  std::unordered_map<std::string, VarId> vars_;
  std::unordered_map<std::string, BufferId> buffers_;
  std::unordered_map<std::string, ExprId> temps_;
};

}  // namespace

std::vector<Kernel> parse_kernels(std::string_view text) {
  return Parser(text).kernels();
}

bool looks_like_kernel_ir(std::string_view text) {
  Lexer lex(text);
  Token t = lex.next();
  return t.kind == Tok::Ident && t.text == "kernel";
}

}  // namespace kiln::kir
