// The activations of torch.nn.functional beyond relu, gelu and silu (leaky_relu, elu, softplus,
// hardtanh, hardswish, mish), reciprocal, lerp, and clamp with tensor bounds (clamp_min,
// clamp_max, clamp_tensor); and the in-place twins torch has (all but softplus_ and the
// clamps). The math is in base/pointwise_activations.h.
#include "kiln/base/pointwise_activations.h"
#include "kiln/runtime/kernels/pointwise_activation_attrs.h"
#include "kiln/runtime/kernels/pointwise_kernels.h"

namespace kiln::pointwise {
namespace {

KILN_MATH1(ReciprocalMath, math::reciprocal(x))
KILN_MATH1(HardswishMath, math::hardswish(x))
KILN_MATH1(MishMath, math::mish(x))

// The parameterized activations: each functor holds its attribute struct, and its constants
// become V's as the eager kernel converts them (to the compute type).
struct LeakyReluMath {
  LeakyReluAttrs a;
  template <class V>
  V operator()(V x) const {
    return math::leaky_relu(x, V(a.negative_slope));
  }
};
struct EluMath {
  EluAttrs a;
  template <class V>
  V operator()(V x) const {
    return math::elu(x, V(a.alpha));
  }
};
struct SoftplusMath {
  SoftplusAttrs a;
  template <class V>
  V operator()(V x) const {
    return math::softplus(x, V(a.beta), V(a.threshold));
  }
};
struct HardtanhMath {
  HardtanhAttrs a;
  template <class V>
  V operator()(V x) const {
    return math::clamp(x, V(a.min_val), V(a.max_val));
  }
};

template <class Math, class A>
kir::Val unary_attrs_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                          DType result) {
  return math_expr(result, [&] { return Math{attrs_as<A>(attrs)}(operand_expr(in[0], result)); });
}

template <class Math, class A>
void def_activation(OpTable& table, const std::string& name, const std::string& attrs_name) {
  OpDef& u = table.add<A>(name, {"self"}, kPointwise | kRecomputable, attrs_name);
  u.shape = rules::same_shape;
  u.dtype = unary_dtype_rule<Promote::IntToFloat>;
  u.compute[kCpuKey] = unary_kernel<Math, A>;
  u.expr = unary_attrs_expr<Math, A>;
  // torch has leaky_relu_, elu_ and hardtanh_, but no softplus_.
  if (name != "softplus")
    def_in_place_twin<A, unary_kernel<Math, A>, unary_dtype_rule<Promote::IntToFloat>>(table, u);
}

// ---- lerp ----

// As torch: self and end share a floating dtype; the weight may differ only where type promotion
// keeps that dtype (a 0-dim weight, or a Python number).
DType lerp_dtype(const OpDef& op, std::span<const MetaRef> inputs, const Scalar* weight) {
  DType self = inputs[0].dtype;
  KILN_CHECK(inputs[1].dtype == self,
             "{}: expected end (shape {}) to have the dtype of self (shape {}, dtype {}), got {}",
             op.name, shape_str(inputs[1].sizes), shape_str(inputs[0].sizes), self,
             inputs[1].dtype);
  KILN_CHECK(is_floating(self), "{}: expected floating inputs, got self of shape {} and dtype {}",
             op.name, shape_str(inputs[0].sizes), self);
  DType t = result_type(inputs, weight);
  KILN_CHECK(t == self,
             "{}: expected weight to have the dtype of self ({}), got {} (self shape {}, weight "
             "shape {})",
             op.name, self, inputs.size() > 2 ? dtype_name(inputs[2].dtype) : "a number",
             shape_str(inputs[0].sizes),
             inputs.size() > 2 ? shape_str(inputs[2].sizes) : std::string("[]"));
  return t;
}
DType lerp_tensor_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  return lerp_dtype(op, inputs, nullptr);
}
DType lerp_scalar_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                        size_t) {
  return lerp_dtype(op, inputs, &attrs_as<LerpAttrs>(attrs).weight);
}

// A three-operand op, all broadcast and converted to the result dtype: Math is
// `operator()(V a, V b, V c)`.
template <class Math>
void ternary_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void*) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  KILN_DISPATCH_NUMERIC(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    nary_loop<T, T, T, T>(it, [](C a, C b, C c) { return Math()(a, b, c); });
  });
}

template <class Math>
kir::Val ternary_expr(const OpDef&, std::span<const kir::Val> in, const void*, DType result) {
  return math_expr(result, [&] {
    return Math()(operand_expr(in[0], result), operand_expr(in[1], result),
                  operand_expr(in[2], result));
  });
}

struct LerpMath {
  template <class V>
  V operator()(V self, V end, V weight) const {
    return math::lerp(self, end, weight);
  }
};

void lerp_scalar_kernel(const OpDef& op, std::span<const Tensor> outputs,
                        std::span<const Tensor> inputs, const void* attrs) {
  DType dtype = outputs[0].dtype();
  CastInputs cast = cast_inputs(inputs, dtype);
  TensorIterator it(outputs, cast);
  const Scalar& weight = attrs_as<LerpAttrs>(attrs).weight;
  KILN_DISPATCH_FLOATING(dtype, op.name, [&]<class T>() {
    using C = compute_t<T>;
    C w = scalar_value<T>(weight);
    binary_loop<T, T>(it, [w](C a, C b) { return math::lerp(a, b, w); });
  });
}

kir::Val lerp_scalar_expr(const OpDef&, std::span<const kir::Val> in, const void* attrs,
                          DType result) {
  const Scalar& weight = attrs_as<LerpAttrs>(attrs).weight;
  return math_expr(result, [&] {
    return math::lerp(operand_expr(in[0], result), operand_expr(in[1], result),
                      scalar_expr(weight, result));
  });
}

// ---- clamp with tensor bounds ----

struct ClampMinMath {
  template <class V>
  V operator()(V x, V lo) const {
    return math::maximum(x, lo);
  }
};
struct ClampMaxMath {
  template <class V>
  V operator()(V x, V hi) const {
    return math::minimum(x, hi);
  }
};

struct ClampTensorMath {
  template <class V>
  V operator()(V x, V lo, V hi) const {
    return math::clamp_tensor(x, lo, hi);
  }
};

OpDef& def_pointwise(OpTable& table, const std::string& name, std::vector<std::string> inputs,
                     DTypeRule dtype, ComputeKernel kernel, PointwiseExpr expr) {
  OpDef& d = table.add<NoAttrs>(name, std::move(inputs), kPointwise | kRecomputable, "NoAttrs");
  d.shape = rules::broadcast_shape;
  d.dtype = dtype;
  d.compute[kCpuKey] = kernel;
  d.expr = expr;
  return d;
}

}  // namespace

void register_pointwise_activation_ops(OpTable& table) {
  def_unary<ReciprocalMath, Promote::IntToFloat>(table, "reciprocal");
  def_unary<HardswishMath, Promote::IntToFloat>(table, "hardswish");
  def_unary<MishMath, Promote::IntToFloat>(table, "mish");
  constexpr DTypeRule kFloatRule = unary_dtype_rule<Promote::IntToFloat>;
  def_in_place_twin<NoAttrs, unary_kernel<ReciprocalMath>, kFloatRule>(table,
                                                                       table.get("reciprocal"));
  def_in_place_twin<NoAttrs, unary_kernel<HardswishMath>, kFloatRule>(table,
                                                                      table.get("hardswish"));
  def_in_place_twin<NoAttrs, unary_kernel<MishMath>, kFloatRule>(table, table.get("mish"));
  def_activation<LeakyReluMath, LeakyReluAttrs>(table, "leaky_relu", "LeakyReluAttrs");
  def_activation<EluMath, EluAttrs>(table, "elu", "EluAttrs");
  def_activation<SoftplusMath, SoftplusAttrs>(table, "softplus", "SoftplusAttrs");
  def_activation<HardtanhMath, HardtanhAttrs>(table, "hardtanh", "HardtanhAttrs");

  const OpDef& lerp = def_pointwise(table, "lerp", {"self", "end", "weight"}, lerp_tensor_dtype,
                                    ternary_kernel<LerpMath>, ternary_expr<LerpMath>);
  def_in_place_twin<NoAttrs, ternary_kernel<LerpMath>, lerp_tensor_dtype>(table, lerp);
  OpDef& lerp_s =
      table.add<LerpAttrs>("lerp_scalar", {"self", "end"}, kPointwise | kRecomputable, "LerpAttrs");
  lerp_s.shape = rules::broadcast_shape;
  lerp_s.dtype = lerp_scalar_dtype;
  lerp_s.compute[kCpuKey] = lerp_scalar_kernel;
  lerp_s.expr = lerp_scalar_expr;
  def_in_place_twin<LerpAttrs, lerp_scalar_kernel, lerp_scalar_dtype>(table, lerp_s);

  def_pointwise(table, "clamp_min", {"self", "min"}, unary_dtype_rule<Promote::NoBool>,
                binary_nocoef_kernel<ClampMinMath>, binary_nocoef_expr<ClampMinMath>);
  def_pointwise(table, "clamp_max", {"self", "max"}, unary_dtype_rule<Promote::NoBool>,
                binary_nocoef_kernel<ClampMaxMath>, binary_nocoef_expr<ClampMaxMath>);
  def_pointwise(table, "clamp_tensor", {"self", "min", "max"}, unary_dtype_rule<Promote::NoBool>,
                ternary_kernel<ClampTensorMath>, ternary_expr<ClampTensorMath>);
}

}  // namespace kiln::pointwise
