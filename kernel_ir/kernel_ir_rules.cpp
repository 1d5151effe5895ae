#include "kiln/kernel_ir/kernel_ir_rules.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "kiln/base/dtype.h"

namespace kiln::kir {
namespace {

// The dtypes that exist only as loads and casts (Note [Kernel IR dtypes]).
bool is_storage_only(DType t) {
  return t == kFloat16 || t == kBFloat16 || is_small_integral(t);
}
bool is_float_compute(DType t) {
  return t == kFloat32 || t == kFloat64;
}
bool is_numeric_compute(DType t) {
  return is_compute_dtype(t) && t != kBool;
}

}  // namespace

int expr_arity(ExprKind kind) {
  switch (kind) {
    case ExprKind::Const:
    case ExprKind::Var:
      return 0;
    case ExprKind::Load:
    case ExprKind::Unary:
    case ExprKind::Cast:
      return 1;
    case ExprKind::Binary:
      return 2;
    case ExprKind::Select:
      return 3;
  }
  return -1;
}

namespace {

std::string_view kind_name(ExprKind kind) {
  switch (kind) {
    case ExprKind::Const:
      return "constant";
    case ExprKind::Var:
      return "variable reference";
    case ExprKind::Load:
      return "load";
    case ExprKind::Unary:
      return "unary";
    case ExprKind::Binary:
      return "binary";
    case ExprKind::Select:
      return "select";
    case ExprKind::Cast:
      return "cast";
  }
  return "?";
}

std::string unary_problem(const Expr& e, DType a) {
  auto op = static_cast<UnaryOp>(e.op);
  if (e.op > static_cast<uint8_t>(UnaryOp::GeluExact))
    return fmt::format("unknown unary op {}", e.op);
  std::string_view name = unary_op_name(op);
  if (a != e.dtype) {
    return fmt::format("{} of operand dtype {} is typed {}; it must keep its operand's dtype", name,
                       dtype_short_name(a), dtype_short_name(e.dtype));
  }
  if (op == UnaryOp::Not) {
    if (a != kBool) return fmt::format("not takes a b8 operand, got {}", dtype_short_name(a));
  } else if (op == UnaryOp::Neg || op == UnaryOp::Abs) {
    if (!is_numeric_compute(a)) {
      return fmt::format("{} takes an i32, i64, f32 or f64 operand, got {}", name,
                         dtype_short_name(a));
    }
  } else if (!is_float_compute(a)) {
    return fmt::format("{} takes an f32 or f64 operand, got {}", name, dtype_short_name(a));
  }
  return {};
}

std::string binary_problem(const Expr& e, DType a, DType b) {
  auto op = static_cast<BinaryOp>(e.op);
  if (e.op > static_cast<uint8_t>(BinaryOp::Or)) return fmt::format("unknown binary op {}", e.op);
  std::string_view name = binary_op_name(op);
  if (a != b) {
    return fmt::format("{} of {} and {} operands: both operands must have one dtype", name,
                       dtype_short_name(a), dtype_short_name(b));
  }
  DType result = is_comparison(op) ? kBool : a;
  if (e.dtype != result) {
    return fmt::format("{} of {} operands is typed {}; it must be {}", name, dtype_short_name(a),
                       dtype_short_name(e.dtype), dtype_short_name(result));
  }
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    if (a != kBool) return fmt::format("{} takes b8 operands, got {}", name, dtype_short_name(a));
  } else if (op == BinaryOp::Div || op == BinaryOp::Rem || op == BinaryOp::Pow) {
    if (!is_numeric_compute(a)) {
      return fmt::format("{} takes i32, i64, f32 or f64 operands, got {}", name,
                         dtype_short_name(a));
    }
  } else if (!is_compute_dtype(a)) {
    return fmt::format("{} takes b8, i32, i64, f32 or f64 operands, got {}", name,
                       dtype_short_name(a));
  }
  return {};
}

}  // namespace

bool is_compute_dtype(DType t) {
  return t == kBool || t == kInt32 || t == kInt64 || t == kFloat32 || t == kFloat64;
}

std::string expr_problem(const Kernel& k, ExprId self, const Expr& e) {
  int n = expr_arity(e.kind);
  if (n < 0) return fmt::format("unknown expression kind {}", static_cast<int>(e.kind));
  if (static_cast<int>(e.dtype) < 0 || static_cast<int>(e.dtype) >= kNumDTypes)
    return fmt::format("unknown dtype {}", static_cast<int>(e.dtype));
  for (int i = 0; i < n; ++i) {
    if (e.args[i] < 0 || e.args[i] >= self) {
      return fmt::format(
          "{} operand {} is expression {}, which is not an earlier expression "
          "(ids 0..{})",
          kind_name(e.kind), i, e.args[i], self - 1);
    }
  }
  auto arg = [&](int i) { return k.exprs[static_cast<size_t>(e.args[i])].dtype; };
  if (is_storage_only(e.dtype) && e.kind != ExprKind::Load && e.kind != ExprKind::Cast) {
    return fmt::format(
        "{} is typed {}; 16-bit floats and 8- and 16-bit integers exist only as loads and "
        "casts (Note [Kernel IR dtypes])",
        kind_name(e.kind), dtype_short_name(e.dtype));
  }
  switch (e.kind) {
    case ExprKind::Const:
      return {};
    case ExprKind::Var: {
      if (e.var < 0 || static_cast<size_t>(e.var) >= k.vars.size())
        return fmt::format("variable id {} is out of range (the kernel has {})", e.var,
                           k.vars.size());
      const Var& v = k.vars[static_cast<size_t>(e.var)];
      if (v.dtype != e.dtype) {
        return fmt::format("reference to %{} is typed {}, but the variable is {}", v.name,
                           dtype_short_name(e.dtype), dtype_short_name(v.dtype));
      }
      return {};
    }
    case ExprKind::Load: {
      if (e.buffer < 0 || static_cast<size_t>(e.buffer) >= k.buffers.size())
        return fmt::format("load from buffer id {}, out of range (the kernel has {})", e.buffer,
                           k.buffers.size());
      const Buffer& b = k.buffers[static_cast<size_t>(e.buffer)];
      if (b.dtype != e.dtype) {
        return fmt::format("load from %{} is typed {}, but the buffer is {}", b.name,
                           dtype_short_name(e.dtype), dtype_short_name(b.dtype));
      }
      if (arg(0) != kInt64) {
        return fmt::format("load from %{} has an index of dtype {}; indices are i64", b.name,
                           dtype_short_name(arg(0)));
      }
      return {};
    }
    case ExprKind::Unary:
      return unary_problem(e, arg(0));
    case ExprKind::Binary:
      return binary_problem(e, arg(0), arg(1));
    case ExprKind::Select:
      if (arg(0) != kBool)
        return fmt::format("select condition is {}; it must be b8", dtype_short_name(arg(0)));
      if (arg(1) != arg(2) || arg(1) != e.dtype) {
        return fmt::format("select of {} and {} operands is typed {}; all three must match",
                           dtype_short_name(arg(1)), dtype_short_name(arg(2)),
                           dtype_short_name(e.dtype));
      }
      return {};
    case ExprKind::Cast:
      return {};
  }
  return {};
}

bool reads_var(const Kernel& k, ExprId e, VarId v) {
  const Expr& x = k.exprs[static_cast<size_t>(e)];
  if (x.kind == ExprKind::Var) return x.var == v;
  for (int i = 0; i < expr_arity(x.kind); ++i)
    if (reads_var(k, x.args[i], v)) return true;
  return false;
}

std::optional<int64_t> affine_coefficient(const Kernel& k, ExprId e, VarId v) {
  const Expr& x = k.exprs[static_cast<size_t>(e)];
  if (!reads_var(k, e, v)) return 0;
  if (x.kind == ExprKind::Var) return 1;
  if (x.kind == ExprKind::Unary && static_cast<UnaryOp>(x.op) == UnaryOp::Neg) {
    auto c = affine_coefficient(k, x.args[0], v);
    if (c && *c != std::numeric_limits<int64_t>::min()) return -*c;
    return std::nullopt;
  }
  if (x.kind != ExprKind::Binary) return std::nullopt;
  auto op = static_cast<BinaryOp>(x.op);
  auto a = affine_coefficient(k, x.args[0], v), b = affine_coefficient(k, x.args[1], v);
  if (!a || !b) return std::nullopt;
  int64_t r = 0;
  if (op == BinaryOp::Add && !__builtin_add_overflow(*a, *b, &r)) return r;
  if (op == BinaryOp::Sub && !__builtin_sub_overflow(*a, *b, &r)) return r;
  if (op == BinaryOp::Mul) {
    // Only (v-term) * constant stays affine.
    const Expr& ca = k.exprs[static_cast<size_t>(x.args[0])];
    const Expr& cb = k.exprs[static_cast<size_t>(x.args[1])];
    if (cb.kind == ExprKind::Const && !__builtin_mul_overflow(*a, cb.ivalue, &r)) return r;
    if (ca.kind == ExprKind::Const && !__builtin_mul_overflow(*b, ca.ivalue, &r)) return r;
  }
  return std::nullopt;
}

}  // namespace kiln::kir
