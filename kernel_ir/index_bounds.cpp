#include "kiln/kernel_ir/index_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kiln/base/dtype.h"

namespace kiln::kir {
namespace {

IndexRange unbounded(std::string why) {
  IndexRange r;
  r.why = std::move(why);
  return r;
}

IndexRange exact(int64_t lo, int64_t hi) {
  return {lo, hi, {}};
}

// The hull of op applied to the corners of two ranges; unbounded when a corner overflows. Exact
// for operators monotone in each operand over the ranges (add, sub, mul, truncating division by
// a divisor range without zero).
template <class Op>
IndexRange corners(const IndexRange& a, const IndexRange& b, Op op, std::string_view what) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int64_t x : {a.lo, a.hi}) {
    for (int64_t y : {b.lo, b.hi}) {
      int64_t r = 0;
      if (!op(x, y, &r)) return unbounded(fmt::format("{} may overflow i64", what));
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
  }
  return exact(lo, hi);
}

// Range of x % y (the remainder of truncating division): its sign is x's and |x % y| < |y|.
IndexRange remainder(const IndexRange& x, const IndexRange& y) {
  if (y.lo <= 0 && y.hi >= 0) return unbounded("rem may divide by zero");
  // The largest |y| - 1, computed without negating INT64_MIN.
  int64_t m = y.lo > 0 ? y.hi - 1 : -(y.lo + 1);
  int64_t min_abs = y.lo > 0 ? y.lo
                    : y.hi == std::numeric_limits<int64_t>::min()
                        ? std::numeric_limits<int64_t>::max()
                        : -y.hi;
  if (x.lo >= 0 && x.hi < min_abs) return x;  // x % y == x
  return exact(x.lo >= 0 ? 0 : std::max(x.lo, -m), x.hi <= 0 ? 0 : std::min(x.hi, m));
}

}  // namespace

void IndexBounds::define(VarId v, IndexRange r) {
  if (static_cast<size_t>(v) >= vars_.size()) vars_.resize(static_cast<size_t>(v) + 1);
  vars_[static_cast<size_t>(v)] = std::move(r);
}

const IndexRange& IndexBounds::range(ExprId e) {
  auto& slot = cache_[static_cast<size_t>(e)];
  if (!slot) slot = compute(e);
  return *slot;
}

// Note [Clamped indices]
// An index read from data (nll_loss's target) has no bound, but clamped it has one, whatever the
// data: with lo and hi bounded, min(max(u, lo), hi) lies in [min(lo.lo, hi.lo), hi.hi] and
// max(min(u, hi), lo) in [lo.lo, max(lo.hi, hi.hi)]. Used only where u has no bound of its own.
std::optional<IndexRange> IndexBounds::clamp(const Expr& e) {
  auto op = static_cast<BinaryOp>(e.op);
  if (op != BinaryOp::Min && op != BinaryOp::Max) return std::nullopt;
  BinaryOp inner_op = op == BinaryOp::Min ? BinaryOp::Max : BinaryOp::Min;
  for (int side = 0; side < 2; ++side) {
    const Expr& inner = k_.exprs[static_cast<size_t>(e.args[side])];
    if (inner.kind != ExprKind::Binary || static_cast<BinaryOp>(inner.op) != inner_op) continue;
    const IndexRange& outer_bound = range(e.args[1 - side]);
    if (!outer_bound.bounded()) continue;
    for (int s = 0; s < 2; ++s) {
      const IndexRange& inner_bound = range(inner.args[s]);
      if (!inner_bound.bounded()) continue;
      if (op == BinaryOp::Min)  // min(max(u, inner_bound), outer_bound)
        return exact(std::min(inner_bound.lo, outer_bound.lo), outer_bound.hi);
      return exact(outer_bound.lo, std::max(inner_bound.hi, outer_bound.hi));
    }
  }
  return std::nullopt;
}

IndexRange IndexBounds::compute(ExprId id) {
  const Expr& e = k_.exprs[static_cast<size_t>(id)];
  if (e.dtype == kBool) return exact(0, 1);
  if (!is_integral(e.dtype, false)) {
    return unbounded(fmt::format("it computes in {}", dtype_short_name(e.dtype)));
  }
  auto arg = [&](int i) -> const IndexRange& { return range(e.args[i]); };
  IndexRange r;
  switch (e.kind) {
    case ExprKind::Const:
      r = exact(e.ivalue, e.ivalue);
      break;
    case ExprKind::Var: {
      auto v = static_cast<size_t>(e.var);
      if (v < vars_.size() && vars_[v]) {
        r = *vars_[v];
      } else {
        r = unbounded(fmt::format("it reads %{}", k_.vars[v].name));
      }
      break;
    }
    case ExprKind::Load:
      return unbounded(
          fmt::format("it reads buffer %{} (indices that depend on data are not "
                      "bounded)",
                      k_.buffers[static_cast<size_t>(e.buffer)].name));
    case ExprKind::Unary: {
      const IndexRange& a = arg(0);
      if (!a.bounded()) return a;
      if (a.lo == std::numeric_limits<int64_t>::min()) return unbounded("neg may overflow i64");
      if (static_cast<UnaryOp>(e.op) == UnaryOp::Neg) {
        r = exact(-a.hi, -a.lo);
      } else if (a.lo >= 0) {
        r = a;
      } else if (a.hi <= 0) {
        r = exact(-a.hi, -a.lo);
      } else {
        r = exact(0, std::max(-a.lo, a.hi));
      }
      break;
    }
    case ExprKind::Binary: {
      const IndexRange &a = arg(0), &b = arg(1);
      if (!a.bounded() || !b.bounded()) {
        if (std::optional<IndexRange> c = clamp(e)) {
          r = *c;
          break;
        }
      }
      if (!a.bounded()) return a;
      if (!b.bounded()) return b;
      switch (static_cast<BinaryOp>(e.op)) {
        case BinaryOp::Add:
          r = corners(
              a, b,
              [](int64_t x, int64_t y, int64_t* o) { return !__builtin_add_overflow(x, y, o); },
              "add");
          break;
        case BinaryOp::Sub:
          r = corners(
              a, b,
              [](int64_t x, int64_t y, int64_t* o) { return !__builtin_sub_overflow(x, y, o); },
              "sub");
          break;
        case BinaryOp::Mul:
          r = corners(
              a, b,
              [](int64_t x, int64_t y, int64_t* o) { return !__builtin_mul_overflow(x, y, o); },
              "mul");
          break;
        case BinaryOp::Div:
          if (b.lo <= 0 && b.hi >= 0) return unbounded("div may divide by zero");
          r = corners(
              a, b,
              [](int64_t x, int64_t y, int64_t* o) {
                if (y == -1 && x == std::numeric_limits<int64_t>::min()) return false;
                *o = x / y;
                return true;
              },
              "div");
          break;
        case BinaryOp::Rem:
          r = remainder(a, b);
          break;
        case BinaryOp::Max:
          r = exact(std::max(a.lo, b.lo), std::max(a.hi, b.hi));
          break;
        case BinaryOp::Min:
          r = exact(std::min(a.lo, b.lo), std::min(a.hi, b.hi));
          break;
        default:
          return unbounded(fmt::format("{} is not bounded by the verifier",
                                       binary_op_name(static_cast<BinaryOp>(e.op))));
      }
      break;
    }
    case ExprKind::Select: {
      const IndexRange &a = arg(1), &b = arg(2);
      if (!a.bounded()) return a;
      if (!b.bounded()) return b;
      r = exact(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
      break;
    }
    case ExprKind::Cast:
      r = arg(0);
      if (!r.bounded()) return r;
      break;
  }
  if (!r.bounded()) return r;
  if (e.dtype == kInt32 && (r.lo < INT32_MIN || r.hi > INT32_MAX)) {
    return unbounded(fmt::format("a value in [{}, {}] may wrap in i32", r.lo, r.hi));
  }
  return r;
}

}  // namespace kiln::kir
