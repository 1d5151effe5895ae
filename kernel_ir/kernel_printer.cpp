#include "kiln/kernel_ir/kernel_printer.h"

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "kiln/base/dtype.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"

namespace kiln::kir {
namespace {

// Binding strength of an expression's outermost operator; a child that binds less tightly than
// its parent's operator is parenthesized.
enum Prec : int { kOr = 1, kAnd, kCompare, kAdditive, kMultiplicative, kPrefix, kAtom };

std::string_view infix(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::Rem:
      return "%";
    case BinaryOp::Eq:
      return "==";
    case BinaryOp::Ne:
      return "!=";
    case BinaryOp::Lt:
      return "<";
    case BinaryOp::Le:
      return "<=";
    case BinaryOp::And:
      return "&&";
    case BinaryOp::Or:
      return "||";
    default:
      return {};
  }
}

int binary_prec(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or:
      return kOr;
    case BinaryOp::And:
      return kAnd;
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
      return kCompare;
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return kAdditive;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Rem:
      return kMultiplicative;
    default:
      return kAtom;  // pow, max, min print as calls
  }
}

// Floating constants always show a '.', an exponent, inf or nan, so they read as floats; the
// digits are the shortest that round-trip in the constant's dtype.
std::string constant_str(const Expr& e) {
  if (e.dtype == kBool) return e.ivalue ? "true" : "false";
  if (!is_floating(e.dtype)) return std::to_string(e.ivalue);
  std::string s = e.dtype == kFloat64 ? fmt::format("{}", e.value)
                                      : fmt::format("{}", static_cast<float>(e.value));
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

class ExprPrinter {
 public:
  ExprPrinter(const Kernel& k, int64_t budget) : k_(k), budget_(budget) {}
  void set_budget(int64_t budget) { budget_ = budget; }
  // Expressions printed by name instead of in full (the statement's temporaries).
  std::unordered_map<ExprId, std::string> names;

  std::string str(ExprId e) { return str_prec(e).first; }

 private:
  bool valid(ExprId e) const { return e >= 0 && e < static_cast<ExprId>(k_.exprs.size()); }

  std::string var_name(VarId v) const {
    if (v < 0 || static_cast<size_t>(v) >= k_.vars.size()) return fmt::format("<bad var {}>", v);
    return fmt::format("%{}", k_.vars[static_cast<size_t>(v)].name);
  }
  std::string buffer_name(BufferId b) const {
    if (b < 0 || static_cast<size_t>(b) >= k_.buffers.size())
      return fmt::format("<bad buffer {}>", b);
    return fmt::format("%{}", k_.buffers[static_cast<size_t>(b)].name);
  }

  // Operand i of `self`: only earlier expressions, so a malformed (cyclic) arena still prints.
  std::pair<std::string, int> arg(ExprId self, int i) {
    ExprId a = k_.exprs[static_cast<size_t>(self)].args[i];
    if (!valid(a) || a >= self) return {fmt::format("<bad expr {}>", a), kAtom};
    return str_prec(a);
  }
  std::string wrap(std::pair<std::string, int> s, bool parens) {
    return parens ? fmt::format("({})", s.first) : s.first;
  }

  std::pair<std::string, int> str_prec(ExprId id) {
    if (!valid(id)) return {fmt::format("<bad expr {}>", id), kAtom};
    if (auto it = names.find(id); it != names.end()) return {it->second, kAtom};
    // A deeply shared DAG written out in full grows exponentially; cut it off.
    if (budget_-- <= 0) return {"...", kAtom};
    const Expr& e = k_.exprs[static_cast<size_t>(id)];
    switch (e.kind) {
      case ExprKind::Const: {
        std::string s = constant_str(e);
        return {s, s[0] == '-' ? kPrefix : kAtom};
      }
      case ExprKind::Var:
        return {var_name(e.var), kAtom};
      case ExprKind::Load:
        return {fmt::format("load {}[{}]", buffer_name(e.buffer), arg(id, 0).first), kAtom};
      case ExprKind::Cast:
        return {fmt::format("{}({})", dtype_short_name(e.dtype), arg(id, 0).first), kAtom};
      case ExprKind::Select:
        return {
            fmt::format("select({}, {}, {})", arg(id, 0).first, arg(id, 1).first, arg(id, 2).first),
            kAtom};
      case ExprKind::Unary: {
        auto op = static_cast<UnaryOp>(e.op);
        if (op == UnaryOp::Neg || op == UnaryOp::Not) {
          auto a = arg(id, 0);
          return {fmt::format("{}{}", op == UnaryOp::Neg ? '-' : '!', wrap(a, a.second < kAtom)),
                  kPrefix};
        }
        return {fmt::format("{}({})", unary_op_name(op), arg(id, 0).first), kAtom};
      }
      case ExprKind::Binary: {
        auto op = static_cast<BinaryOp>(e.op);
        int p = binary_prec(op);
        if (p == kAtom) {
          return {fmt::format("{}({}, {})", binary_op_name(op), arg(id, 0).first, arg(id, 1).first),
                  kAtom};
        }
        auto a = arg(id, 0), b = arg(id, 1);
        bool left = a.second < p || (p == kCompare && a.second == p);
        return {fmt::format("{} {} {}", wrap(a, left), infix(op), wrap(b, b.second <= p)), p};
      }
    }
    return {"<bad expr kind>", kAtom};
  }

  const Kernel& k_;
  int64_t budget_;  // expression nodes this printer still writes out in full
};

class KernelPrinter {
 public:
  explicit KernelPrinter(const Kernel& k) : k_(k), exprs_(k, 0), reads_(k.exprs.size(), -1) {}

  std::string run() {
    out_ += fmt::format("kernel {}(", k_.name);
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const Buffer& b = k_.buffers[i];
      std::string extent = b.extent == kRuntimeExtent ? "?" : fmt::format("{}", b.extent);
      out_ += fmt::format("{}%{}: {}[{}]{}", i ? ", " : "", b.name, dtype_short_name(b.dtype),
                          extent, b.output ? " out" : "");
    }
    // Size parameters after the buffers, as they are launched (Note [Size parameters]).
    bool first = k_.buffers.empty();
    for (VarId v : k_.sizes()) {
      out_ += fmt::format("{}{}: size", first ? "" : ", ", var_name(v));
      first = false;
    }
    out_ += ") {\n";
    block(k_.body, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  bool valid(ExprId e) const { return e >= 0 && e < static_cast<ExprId>(k_.exprs.size()); }
  const Expr& expr(ExprId e) const { return k_.exprs[static_cast<size_t>(e)]; }

  std::string var_decl(VarId v) const {
    if (v < 0 || static_cast<size_t>(v) >= k_.vars.size()) return fmt::format("<bad var {}>", v);
    const Var& var = k_.vars[static_cast<size_t>(v)];
    return fmt::format("%{}: {}", var.name, dtype_short_name(var.dtype));
  }
  std::string var_name(VarId v) const {
    if (v < 0 || static_cast<size_t>(v) >= k_.vars.size()) return fmt::format("<bad var {}>", v);
    return fmt::format("%{}", k_.vars[static_cast<size_t>(v)].name);
  }

  bool reads_memory(ExprId e) {
    int8_t& memo = reads_[static_cast<size_t>(e)];
    if (memo < 0) {
      const Expr& x = expr(e);
      memo = x.kind == ExprKind::Load;
      for (int i = 0; i < expr_arity(x.kind); ++i) {
        ExprId a = x.args[i];
        if (!memo && valid(a) && a < e && reads_memory(a)) memo = 1;
      }
    }
    return memo;
  }

  // Counts, for the expressions reachable from `roots`, how many operand slots (and roots)
  // refer to each; `order` lists them children first.
  void count_uses(ExprId e, std::unordered_map<ExprId, int>& uses, std::vector<ExprId>& order) {
    if (!valid(e)) return;
    if (uses[e]++ > 0) return;
    const Expr& x = expr(e);
    for (int i = 0; i < expr_arity(x.kind); ++i)
      if (valid(x.args[i]) && x.args[i] < e) count_uses(x.args[i], uses, order);
    order.push_back(e);
  }

  // Writes the temporaries of one statement: every expression its roots reach more than once,
  // except constants, variables and index arithmetic (i64 without loads), which stay inline.
  void temporaries(std::initializer_list<ExprId> roots, int depth) {
    exprs_.names.clear();
    exprs_.set_budget(100000);
    std::unordered_map<ExprId, int> uses;
    std::vector<ExprId> order;
    for (ExprId r : roots)
      count_uses(r, uses, order);
    for (ExprId e : order) {
      const Expr& x = expr(e);
      if (uses[e] < 2 || x.kind == ExprKind::Const || x.kind == ExprKind::Var) continue;
      if (x.dtype == kInt64 && !reads_memory(e)) continue;
      std::string name = fmt::format("${}", next_temp_++);
      line(depth, fmt::format("let {}: {} = {}", name, dtype_short_name(x.dtype), exprs_.str(e)));
      exprs_.names.emplace(e, std::move(name));
    }
  }

  void line(int depth, const std::string& s) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  void block(const std::vector<Stmt>& body, int depth) {
    for (const Stmt& s : body)
      stmt(s, depth);
  }

  void stmt(const Stmt& s, int depth) {
    switch (s.kind) {
      case StmtKind::Loop: {
        std::string_view kind = s.loop_kind == LoopKind::Parallel ? "parallel "
                                : s.loop_kind == LoopKind::Vector ? "vector "
                                                                  : "";
        std::string extent =
            s.extent_size >= 0 ? var_name(s.extent_size) : fmt::format("{}", s.extent);
        line(depth, fmt::format("{}for {} in 0..{} {{", kind, var_name(s.var), extent));
        block(s.body, depth + 1);
        line(depth, "}");
        return;
      }
      case StmtKind::Store: {
        temporaries({s.index, s.value}, depth);
        std::string buf = s.buffer >= 0 && static_cast<size_t>(s.buffer) < k_.buffers.size()
                              ? fmt::format("%{}", k_.buffers[static_cast<size_t>(s.buffer)].name)
                              : fmt::format("<bad buffer {}>", s.buffer);
        line(depth,
             fmt::format("store {}[{}] = {}", buf, exprs_.str(s.index), exprs_.str(s.value)));
        return;
      }
      case StmtKind::Let:
        temporaries({s.value}, depth);
        line(depth, fmt::format("let {} = {}", var_decl(s.var), exprs_.str(s.value)));
        return;
      case StmtKind::Accumulator:
        line(depth, fmt::format("acc {} = {}", var_decl(s.var), reduce_op_name(s.reduce)));
        return;
      case StmtKind::Accumulate: {
        temporaries({s.value}, depth);
        std::string_view op = s.reduce == ReduceOp::Sum    ? "+="
                              : s.reduce == ReduceOp::Prod ? "*="
                              : s.reduce == ReduceOp::Max  ? "max="
                                                           : "min=";
        line(depth, fmt::format("{} {} {}", var_name(s.var), op, exprs_.str(s.value)));
        return;
      }
      case StmtKind::If:
        temporaries({s.cond}, depth);
        line(depth, fmt::format("if {} {{", exprs_.str(s.cond)));
        block(s.body, depth + 1);
        if (!s.else_body.empty()) {
          line(depth, "} else {");
          block(s.else_body, depth + 1);
        }
        line(depth, "}");
        return;
    }
  }

  const Kernel& k_;
  ExprPrinter exprs_;
  std::vector<int8_t> reads_;  // per expression: reads a buffer (1), does not (0), unknown (-1)
  std::string out_;
  int next_temp_ = 0;
};

}  // namespace

std::string print(const Kernel& kernel) {
  return KernelPrinter(kernel).run();
}

std::ostream& operator<<(std::ostream& os, const Kernel& kernel) {
  return os << print(kernel);
}

std::string expr_str(const Kernel& kernel, ExprId e) {
  ExprPrinter p(kernel, 400);
  return p.str(e);
}

std::string Kernel::str() const {
  return print(*this);
}

}  // namespace kiln::kir
