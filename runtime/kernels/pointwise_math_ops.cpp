// Pointwise math ops beyond the arithmetic of pointwise_ops.cpp: pow, the float functions
// (log1p ... erf, gelu and its backward, silu), abs, sign and clamp. The math is in
// base/pointwise_math.h.
#include <optional>

#include "kiln/base/pointwise_math.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"

namespace kiln::pointwise {
namespace {

KILN_MATH1(Log1pMath, math::log1p_(x))
KILN_MATH1(Expm1Math, math::expm1_(x))
KILN_MATH1(SqrtMath, math::sqrt_(x))
KILN_MATH1(RsqrtMath, math::rsqrt(x))
KILN_MATH1(AbsMath, math::abs_(x))
KILN_MATH1(SignMath, math::sign(x))
KILN_MATH1(SiluMath, math::silu(x))
KILN_MATH1(ErfMath, math::erf_(x))
KILN_MATH1(GeluErfMath, math::gelu_erf(x))
KILN_MATH1(GeluTanhMath, math::gelu_tanh(x))
// A unary op whose float32 math has a reduced-range vectorized form `reduced` within |x| <=
// `limit` (Note [Reduced-range float loops]); `expr` is the math for every value type.
#define KILN_MATH1_REDUCED(Name, expr, reduced_expr, limit)                       \
  struct Name {                                                                   \
    static constexpr float kReducedLimit = limit;                                 \
    [[gnu::always_inline]] static float reduced(float x) { return reduced_expr; } \
    template <class V>                                                            \
    V operator()(V x) const {                                                     \
      return expr;                                                                \
    }                                                                             \
  };
// sin and cos: the float32 polynomial within its range, libm beyond (Note [sin and cos by one
// polynomial]).
KILN_MATH1_REDUCED(SinMath, math::sin_(x), math::sin_reduced(x), math::kSinCosReducedLimit)
KILN_MATH1_REDUCED(CosMath, math::cos_(x), math::cos_reduced(x), math::kSinCosReducedLimit)
#undef KILN_MATH1_REDUCED

// ---- pow ----

DType pow_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  return check_promotion<Promote::NoBool>(op, result_type(inputs));
}

DType pow_scalar_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                       size_t) {
  const Scalar& e = attrs_as<ScalarOtherAttrs>(attrs).other;
  DType t = check_promotion<Promote::NoBool>(op, result_type(inputs, &e));
  KILN_CHECK(!is_integral(t, false) || e.is_bool() || e.to_int() >= 0,
             "{}: integers to negative integer powers are not allowed (self dtype {}, exponent "
             "{})",
             op.name, inputs[0].dtype, e);
  return t;
}

void pow_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    // Forced inline: float pow's template is too large for GCC to inline the lambda into the
    // loop by itself, and a call per element stops the vectorizer. float32 pow is compute bound:
    // its contiguous loop takes the AVX-512 clone (twice as fast there).
    auto f = [](compute_t<T> a, compute_t<T> b)
                 KILN_ALWAYS_INLINE_LAMBDA { return math::pow_(a, b); };
    binary_loop<T, T>(it, f, /*clone_f32=*/true);
  });
}

void pow_scalar_kernel(const OpDef& op, std::span<const Tensor> outputs,
                       std::span<const Tensor> inputs, const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const Scalar& e = attrs_as<ScalarOtherAttrs>(attrs).other;
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C ev = scalar_value<T>(e);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      bool done = math::visit_pow_by_constant(e.to<double>(), [&]<math::PowByConstant K>() {
        unary_loop<T, T>(it, [](C x) { return math::pow_constant<K>(x); });
      });
      if (done) return;
    }
    unary_loop<T, T>(it, [ev](C x) KILN_ALWAYS_INLINE_LAMBDA { return math::pow_(x, ev); });
  });
}

kir::Val pow_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math_expr(
      result, [&] { return math::pow_(operand_expr(in[0], result), operand_expr(in[1], result)); });
}

kir::Val pow_scalar_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                         DType result) {
  const Scalar& e = attrs_as<ScalarOtherAttrs>(attrs).other;
  return math_expr(result, [&] {
    kir::Val x = operand_expr(in[0], result);
    // As the eager kernel (Note [pow by a constant exponent]).
    if (result == kFloat32 || result == kFloat64) {
      std::optional<kir::Val> by;
      math::visit_pow_by_constant(e.to<double>(),
                                  [&]<math::PowByConstant K>() { by = math::pow_constant<K>(x); });
      if (by) return *by;
    }
    return math::pow_(x, scalar_expr(e, result));
  });
}

// ---- gelu ----

DType gelu_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs, size_t) {
  const std::string& approx = attrs_as<GeluAttrs>(attrs).approximate;
  KILN_CHECK(approx == "none" || approx == "tanh",
             "{}: approximate must be \"none\" or \"tanh\", got \"{}\" (input of shape {} and "
             "dtype {})",
             op.name, approx, shape_str(inputs[0].sizes), inputs[0].dtype);
  return check_promotion<Promote::IntToFloat>(op, result_type(inputs));
}

void gelu_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                 const void* attrs) {
  if (attrs_as<GeluAttrs>(attrs).approximate == "tanh") {
    unary_kernel<GeluTanhMath>(op, outputs, inputs, attrs);
  } else {
    unary_kernel<GeluErfMath>(op, outputs, inputs, attrs);
  }
}

kir::Val gelu_expr(const OpDef& op, std::span<const kir::Val> in, const void* attrs, DType result) {
  if (attrs_as<GeluAttrs>(attrs).approximate == "tanh") {
    return unary_expr<GeluTanhMath>(op, in, attrs, result);
  }
  return unary_expr<GeluErfMath>(op, in, attrs, result);
}

// ---- gelu_backward ----

// grad_output times gelu'(self), both operands broadcast and promoted as gelu promotes its input.
template <class Math>
void gelu_backward_loop(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                        const OpDef& op) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    // Forced inline and the AVX-512 clone, as pow: erf and exp (or tanh) make it compute bound.
    auto f = [](compute_t<T> g, compute_t<T> x) KILN_ALWAYS_INLINE_LAMBDA { return Math()(g, x); };
    binary_loop<T, T>(it, f, /*clone_f32=*/true);
  });
}
#define KILN_MATH2(Name, expr)                        \
  struct Name {                                       \
    template <class V>                                \
    KILN_ALWAYS_INLINE V operator()(V g, V x) const { \
      return expr;                                    \
    }                                                 \
  };
KILN_MATH2(GeluErfBackwardMath, math::gelu_erf_backward(g, x))
KILN_MATH2(GeluTanhBackwardMath, math::gelu_tanh_backward(g, x))
#undef KILN_MATH2

void gelu_backward_kernel(const OpDef& op, std::span<const Tensor> outputs,
                          std::span<const Tensor> inputs, const void* attrs) {
  if (attrs_as<GeluAttrs>(attrs).approximate == "tanh") {
    gelu_backward_loop<GeluTanhBackwardMath>(outputs, inputs, op);
  } else {
    gelu_backward_loop<GeluErfBackwardMath>(outputs, inputs, op);
  }
}

kir::Val gelu_backward_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                            DType result) {
  bool tanh = attrs_as<GeluAttrs>(attrs).approximate == "tanh";
  return math_expr(result, [&] {
    kir::Val g = operand_expr(in[0], result), x = operand_expr(in[1], result);
    return tanh ? GeluTanhBackwardMath()(g, x) : GeluErfBackwardMath()(g, x);
  });
}

// ---- clamp ----

// As torch: the bounds take part in type promotion like Python numbers (an int tensor clamped
// to 0.5 becomes float). Only their category matters, so the highest one stands for both.
DType clamp_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs, size_t) {
  const auto& a = attrs_as<ClampAttrs>(attrs);
  KILN_CHECK(a.min || a.max,
             "{}: at least one of 'min' or 'max' must not be None (input of shape {} and dtype {})",
             op.name, shape_str(inputs[0].sizes), inputs[0].dtype);
  const Scalar* bound = &*(a.min ? a.min : a.max);
  if (a.min && a.max && static_cast<int>(a.max->kind()) > static_cast<int>(a.min->kind())) {
    bound = &*a.max;
  }
  return check_promotion<Promote::NoBool>(op, result_type(inputs, bound));
}

void clamp_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                  const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const auto& a = attrs_as<ClampAttrs>(attrs);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    if (a.min && a.max) {
      C lo = a.min->to<C>(), hi = a.max->to<C>();
      unary_loop<T, T>(it, [lo, hi](C x) { return math::clamp(x, lo, hi); });
    } else if (a.min) {
      C lo = a.min->to<C>();
      unary_loop<T, T>(it, [lo](C x) { return math::clamp_min(x, lo); });
    } else {
      C hi = a.max->to<C>();
      unary_loop<T, T>(it, [hi](C x) { return math::clamp_max(x, hi); });
    }
  });
}

// A bound in the compute type, as the eager kernel converts it: not through the storage type,
// where uint8's -1 would wrap to 255 (torch compares with -1).
kir::Val bound_expr(const Scalar& s, DType result) {
  return kir::cast(scalar_const(s, kir::compute_dtype(result)), arith_dtype(result));
}

kir::Val clamp_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs, DType result) {
  const auto& a = attrs_as<ClampAttrs>(attrs);
  return math_expr(result, [&] {
    kir::Val x = operand_expr(in[0], result);
    if (a.min && a.max) {
      return math::clamp(x, bound_expr(*a.min, result), bound_expr(*a.max, result));
    }
    if (a.min) return math::clamp_min(x, bound_expr(*a.min, result));
    return math::clamp_max(x, bound_expr(*a.max, result));
  });
}

}  // namespace

void register_pointwise_math_ops(OpTable& table) {
  def_unary<Log1pMath, Promote::IntToFloat>(table, "log1p");
  def_unary<Expm1Math, Promote::IntToFloat>(table, "expm1");
  def_unary<SqrtMath, Promote::IntToFloat>(table, "sqrt");
  def_unary<RsqrtMath, Promote::IntToFloat>(table, "rsqrt");
  def_unary<AbsMath, Promote::NoBool>(table, "abs");
  def_unary<SignMath, Promote::NoBool>(table, "sign");
  def_unary<SiluMath, Promote::IntToFloat>(table, "silu");
  def_in_place_twin<NoAttrs, unary_kernel<SiluMath>, unary_dtype_rule<Promote::IntToFloat>>(
      table, table.get("silu"));
  def_unary<SinMath, Promote::IntToFloat>(table, "sin");
  def_unary<CosMath, Promote::IntToFloat>(table, "cos");
  def_unary<ErfMath, Promote::IntToFloat>(table, "erf");

  OpDef& pow =
      table.add<NoAttrs>("pow", {"self", "exponent"}, kPointwise | kRecomputable, "NoAttrs");
  pow.shape = rules::broadcast_shape;
  pow.dtype = pow_dtype;
  pow.compute[kCpuKey] = pow_kernel;
  pow.expr = pow_expr;

  OpDef& pow_s = table.add<ScalarOtherAttrs>("pow_scalar", {"self"}, kPointwise | kRecomputable,
                                             "ScalarOtherAttrs");
  pow_s.shape = rules::same_shape;
  pow_s.dtype = pow_scalar_dtype;
  pow_s.compute[kCpuKey] = pow_scalar_kernel;
  pow_s.expr = pow_scalar_expr;

  OpDef& gelu = table.add<GeluAttrs>("gelu", {"self"}, kPointwise | kRecomputable, "GeluAttrs");
  gelu.shape = rules::same_shape;
  gelu.dtype = gelu_dtype;
  gelu.compute[kCpuKey] = gelu_kernel;
  gelu.expr = gelu_expr;

  OpDef& gelu_bw = table.add<GeluAttrs>("gelu_backward", {"grad_output", "self"},
                                        kPointwise | kRecomputable | kInternal, "GeluAttrs");
  gelu_bw.shape = rules::broadcast_shape;
  gelu_bw.dtype = gelu_dtype;
  gelu_bw.compute[kCpuKey] = gelu_backward_kernel;
  gelu_bw.expr = gelu_backward_expr;

  OpDef& clamp = table.add<ClampAttrs>("clamp", {"self"}, kPointwise | kRecomputable, "ClampAttrs");
  clamp.shape = rules::same_shape;
  clamp.dtype = clamp_dtype;
  clamp.compute[kCpuKey] = clamp_kernel;
  clamp.expr = clamp_expr;

  OpDef& clamp_ = table.add<ClampAttrs>("clamp_", {"self"}, kInPlace, "ClampAttrs");
  clamp_.shape = rules::same_shape;
  clamp_.dtype = inplace_dtype_rule<clamp_dtype>;
  clamp_.compute[kCpuKey] = inplace_kernel<clamp_kernel, clamp_dtype>;
}

}  // namespace kiln::pointwise
