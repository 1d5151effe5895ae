// Rounding and remainders: floor, ceil, round, trunc (identity on integers, as torch), and fmod
// and remainder with tensor or scalar divisors. The math is in base/pointwise_rounding.h.
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "kiln/base/pointwise_rounding.h"
#include "kiln/runtime/kernels/pointwise_activation_attrs.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"

// fmod for the math templates instantiated with kernel-IR values (found by argument-dependent
// lookup): the kernel IR's Rem, which is C's fmod on floats in every backend and flags integer
// division by zero (Note [Rounding by fmod]). Only this file's templates call it, so it lives
// here rather than among kernel_ir.h's primitives.
namespace kiln::kir {
inline Val fmod(Val a, Val b) {
  return MathScope::builder().binary(BinaryOp::Rem, a.id(), b.id());
}
}  // namespace kiln::kir

namespace kiln::pointwise {
namespace {

// ---- floor, ceil, round, trunc ----

KILN_MATH1(FloorMath, math::floor_(x))
KILN_MATH1(CeilMath, math::ceil_(x))
KILN_MATH1(TruncMath, math::trunc_(x))
KILN_MATH1(RoundMath, math::round_(x))

// Integers are already integral: their result is a copy (torch's), and only floats round.
template <class Math>
void rounding_kernel(const OpDef& op, std::span<const Tensor> outputs,
                     std::span<const Tensor> inputs, const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      unary_loop<T, T>(it, [](C x) { return x; });
    } else {
      unary_loop<T, T>(it, [](C x) { return Math()(x); });
    }
  });
}

template <class Math>
kir::Val rounding_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math_expr(result, [&] {
    kir::Val x = operand_expr(in[0], result);
    return is_floating(result) ? Math()(x) : x;
  });
}

DType round_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs, size_t) {
  DType t = check_promotion<Promote::NoBool>(op, result_type(inputs));
  int64_t decimals = attrs_as<RoundAttrs>(attrs).decimals;
  KILN_CHECK(decimals == 0 || is_floating(t),
             "{}: decimals={} is only supported for floating inputs (input of shape {} and dtype "
             "{})",
             op.name, decimals, shape_str(inputs[0].sizes), inputs[0].dtype);
  return t;
}

// 10^|decimals|, as torch scales by it.
double round_scale(int64_t decimals) {
  return std::pow(10.0, static_cast<double>(std::llabs(decimals)));
}

void round_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void* attrs) {
  int64_t decimals = attrs_as<RoundAttrs>(attrs).decimals;
  if (decimals == 0) {
    rounding_kernel<RoundMath>(op, outputs, inputs, attrs);
    return;
  }
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_FLOATING(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C scale = static_cast<C>(round_scale(decimals));
    bool negative = decimals < 0;
    unary_loop<T, T>(it,
                     [scale, negative](C x) { return math::round_decimals(x, scale, negative); });
  });
}

kir::Val round_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs, DType result) {
  int64_t decimals = attrs_as<RoundAttrs>(attrs).decimals;
  return math_expr(result, [&] {
    kir::Val x = operand_expr(in[0], result);
    if (!is_floating(result)) return x;
    if (decimals == 0) return math::round_(x);
    return math::round_decimals(x, kir::Val(round_scale(decimals)), decimals < 0);
  });
}

// ---- fmod, remainder ----

struct FmodMath {
  template <class V>
  KILN_ALWAYS_INLINE V operator()(V a, V b) const {
    return math::fmod_(a, b);
  }
};
struct RemainderMath {
  template <class V>
  KILN_ALWAYS_INLINE V operator()(V a, V b) const {
    return math::remainder(a, b);
  }
};

[[noreturn]] void zero_division(const OpDef& op, std::span<const Tensor> inputs, DType dtype) {
  KILN_ERROR(
      "{}: ZeroDivisionError: integer division by zero (self of shape {}, divisor {}, "
      "dtype {})",
      op.name, shape_str(inputs[0].sizes()),
      inputs.size() > 1 ? "of shape " + shape_str(inputs[1].sizes()) : std::string("0"), dtype);
}

// Integer division by zero throws, as torch's CPU kernels do; the loop notes it and finishes.
template <class Math>
void divmod_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      std::atomic<bool> zero{false};
      binary_loop<T, T>(it, [&zero](C a, C b) {
        if (b == 0) zero.store(true, std::memory_order_relaxed);
        return Math()(a, b);
      });
      if (zero.load()) zero_division(op, inputs, dtype);
    } else {
      binary_loop<T, T>(it, [](C a, C b) { return Math()(a, b); });
    }
  });
}

template <class Math>
void divmod_scalar_kernel(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void* attrs) {
  DType dtype = outputs[0].dtype();
  const Scalar& other = attrs_as<ScalarOtherAttrs>(attrs).other;
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C b = scalar_value<T>(other);
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) zero_division(op, inputs, dtype);
    }
    unary_loop<T, T>(it, [b](C a) { return Math()(a, b); });
  });
}

template <class Math>
kir::Val divmod_scalar_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                            DType result) {
  const Scalar& other = attrs_as<ScalarOtherAttrs>(attrs).other;
  return math_expr(result,
                   [&] { return Math()(operand_expr(in[0], result), scalar_expr(other, result)); });
}

DType divmod_scalar_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                          size_t) {
  const Scalar& other = attrs_as<ScalarOtherAttrs>(attrs).other;
  return check_promotion<Promote::NoBool>(op, result_type(inputs, &other));
}

template <class Math>
void def_divmod(OpTable& table, const std::string& name) {
  OpDef& t = table.add<NoAttrs>(name, {"self", "other"}, kPointwise | kRecomputable, "NoAttrs");
  t.shape = rules::broadcast_shape;
  t.dtype = unary_dtype_rule<Promote::NoBool>;
  t.compute[kCpuKey] = divmod_kernel<Math>;
  t.expr = binary_nocoef_expr<Math>;
  def_in_place_twin<NoAttrs, divmod_kernel<Math>, unary_dtype_rule<Promote::NoBool>>(table, t);

  OpDef& s = table.add<ScalarOtherAttrs>(name + "_scalar", {"self"}, kPointwise | kRecomputable,
                                         "ScalarOtherAttrs");
  s.shape = rules::same_shape;
  s.dtype = divmod_scalar_dtype;
  s.compute[kCpuKey] = divmod_scalar_kernel<Math>;
  s.expr = divmod_scalar_expr<Math>;
  def_in_place_twin<ScalarOtherAttrs, divmod_scalar_kernel<Math>, divmod_scalar_dtype>(table, s);
}

template <class Math>
void def_rounding(OpTable& table, const std::string& name) {
  OpDef& u = table.add<NoAttrs>(name, {"self"}, kPointwise | kRecomputable, "NoAttrs");
  u.shape = rules::same_shape;
  u.dtype = unary_dtype_rule<Promote::NoBool>;
  u.compute[kCpuKey] = rounding_kernel<Math>;
  u.expr = rounding_expr<Math>;
  def_in_place_twin<NoAttrs, rounding_kernel<Math>, unary_dtype_rule<Promote::NoBool>>(table, u);
}

}  // namespace

void register_pointwise_rounding_ops(OpTable& table) {
  def_rounding<FloorMath>(table, "floor");
  def_rounding<CeilMath>(table, "ceil");
  def_rounding<TruncMath>(table, "trunc");

  OpDef& round = table.add<RoundAttrs>("round", {"self"}, kPointwise | kRecomputable, "RoundAttrs");
  round.shape = rules::same_shape;
  round.dtype = round_dtype;
  round.compute[kCpuKey] = round_kernel;
  round.expr = round_expr;
  def_in_place_twin<RoundAttrs, round_kernel, round_dtype>(table, round);

  def_divmod<FmodMath>(table, "fmod");
  def_divmod<RemainderMath>(table, "remainder");
}

}  // namespace kiln::pointwise
