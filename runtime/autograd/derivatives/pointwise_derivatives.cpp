// Derivative formulas of the pointwise family (Note [Gradient shapes] in derivative.h): the
// arithmetic ops and their in-place twins, the float functions, pow, gelu, the selecting ops
// (clamp, maximum/minimum, where, masked_fill), rounding and remainders, the activations and
// lerp. They follow PyTorch's derivatives.yaml, so
// gradients at kinks and ties (relu at 0, abs at 0, maximum on equal operands) match torch.
//
// Every formula is built from dispatcher ops, so create_graph differentiates it again and the
// tracer records it. A formula returns the broadcast-shaped gradient; the engine reduces it.
#include <initializer_list>
#include <string_view>

#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/kernels/pointwise_activation_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;
using Grads = std::vector<Tensor>;

constexpr uint32_t kSelf = save_bit(0);
constexpr uint32_t kOther = save_bit(1);

// x - 1 and -x for a Scalar, keeping its kind so that an integer exponent stays integral.
Scalar scalar_minus_one(const Scalar& s) {
  return s.is_floating() ? Scalar(s.to_double() - 1) : Scalar(s.to_int() - 1);
}
Scalar scalar_neg(const Scalar& s) {
  return s.is_floating() ? Scalar(-s.to_double()) : Scalar(-s.to_int());
}

// grad * alpha, without a multiplication when alpha is 1 (the common case of add and sub).
Tensor scaled(const Tensor& grad, const Scalar& alpha) {
  return alpha.to_double() == 1.0 ? grad : grad * alpha;
}

// ---- single-input ops: the formula gives the gradient of input 0 ----

template <Tensor (*F)(const GradArgs&)>
Grads unary(const GradArgs& a) {
  return {a.needs(0) ? F(a) : Tensor()};
}

const Tensor& self_of(const GradArgs& a) {
  return a.inputs[0];
}
const Tensor& result_of(const GradArgs& a) {
  return a.outputs[0];
}

Tensor identity_grad(const GradArgs& a) {
  return a.grad();
}
Tensor neg_grad(const GradArgs& a) {
  return -a.grad();
}
Tensor exp_grad(const GradArgs& a) {
  return a.grad() * result_of(a);
}
Tensor log_grad(const GradArgs& a) {
  return a.grad() / self_of(a);
}
// d tanh = 1 - tanh^2, from the saved result.
Tensor tanh_grad(const GradArgs& a) {
  const Tensor& r = result_of(a);
  return a.grad() * (1 - r * r);
}
// d sigmoid = s (1 - s), from the saved result.
Tensor sigmoid_grad(const GradArgs& a) {
  const Tensor& r = result_of(a);
  return a.grad() * (r * (1 - r));
}
// As torch's threshold_backward: the gradient passes where the result is positive, so relu's
// gradient at 0 is 0. Reading the result lets relu_ save no copy of its input.
Tensor relu_grad(const GradArgs& a) {
  return a.grad().masked_fill(result_of(a) <= 0, 0);
}
Tensor log1p_grad(const GradArgs& a) {
  return a.grad() / (self_of(a) + 1);
}
Tensor expm1_grad(const GradArgs& a) {
  return a.grad() * (result_of(a) + 1);
}
Tensor sqrt_grad(const GradArgs& a) {
  return a.grad() / (result_of(a) * 2);
}
// rsqrt(x) = x^(-1/2): the derivative -x^(-3/2) / 2 is -r^3 / 2.
Tensor rsqrt_grad(const GradArgs& a) {
  const Tensor& r = result_of(a);
  return a.grad() * (r * r * r * -0.5);
}
// abs' is sign(x), which is 0 at 0 (torch's subgradient).
Tensor abs_grad(const GradArgs& a) {
  return a.grad() * sign(self_of(a));
}
// sign, floor, ceil, round and trunc are piecewise constant: a zero gradient, independent of
// grad's values (inf stays 0), as torch.
Tensor zero_grad(const GradArgs& a) {
  return zeros_like(a.grad());
}
// silu(x) = x s(x): the derivative s (1 + x (1 - s)).
Tensor silu_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  Tensor s = sigmoid(x);
  return a.grad() * (s * (1 + x * (1 - s)));
}
Tensor sin_grad(const GradArgs& a) {
  return a.grad() * cos(self_of(a));
}
Tensor cos_grad(const GradArgs& a) {
  return a.grad() * -sin(self_of(a));
}
// erf'(x) = 2 / sqrt(pi) exp(-x^2).
Tensor erf_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  return a.grad() * (exp(-(x * x)) * 1.12837916709551257390);
}

// gelu's derivative in one pass: the gelu_backward op (for the tanh form, the derivative of the
// function the forward computed).
Tensor gelu_grad(const GradArgs& a) {
  return gelu_backward(a.grad(), self_of(a), a.attrs_as<GeluAttrs>().approximate);
}

// gelu_backward(g, x) = g gelu'(x): its gradients are gg gelu'(x) for g and gg g gelu''(x) for x,
// with gelu''(x) = phi(x) (2 - x^2) for "none" and, for "tanh" (t = tanh(u), u' = du/dx),
// (1 - t^2) (u' - x t u'^2 + 3 kappa beta x^2).
Grads gelu_backward_backward(const GradArgs& a) {
  const Tensor& g = a.inputs[0];
  const Tensor& x = a.inputs[1];
  const std::string& approximate = a.attrs_as<GeluAttrs>().approximate;
  Grads out(2);
  if (a.needs(0)) out[0] = gelu_backward(a.grad(), x, approximate);
  if (a.needs(1)) {
    // In float32 for 16-bit x: there x^2 and x u'^2 overflow where (1 - t^2) or phi is already 0,
    // and inf * 0 would give NaN (the engine casts the gradient back to x's dtype).
    Tensor xs = element_size(x.dtype()) < 4 ? x.to(kFloat32) : x;
    Tensor second;
    if (approximate == "tanh") {
      constexpr double kBeta = 0.79788456080286535588;  // sqrt(2 / pi)
      constexpr double kKappa = 0.044715;
      Tensor x2 = xs * xs;
      Tensor t = tanh(xs * (x2 * kKappa + 1) * kBeta);
      Tensor du = (x2 * (3 * kKappa) + 1) * kBeta;
      second = (1 - t * t) * (du - xs * t * du * du + x2 * (3 * kKappa * kBeta));
    } else {
      constexpr double kInvSqrt2Pi = 0.39894228040143267794;
      Tensor x2 = xs * xs;
      second = exp(x2 * -0.5) * kInvSqrt2Pi * (2 - x2);
    }
    out[1] = a.grad() * g * second;
  }
  return out;
}

// pow(x, e) for a scalar e: e x^(e-1), and a zero gradient for e == 0 (as torch, which avoids
// the 0 * inf of x^-1 at x == 0).
Tensor pow_scalar_grad(const GradArgs& a) {
  const Scalar& e = a.attrs_as<ScalarOtherAttrs>().other;
  if (e.to_double() == 0.0) return zeros_like(a.grad());
  return a.grad() * (self_of(a).pow(scalar_minus_one(e)) * e);
}

// clamp passes the gradient where min <= x <= max (both ends included, NaN excluded), as
// torch's clamp_backward.
Tensor clamp_grad(const GradArgs& a) {
  const auto& at = a.attrs_as<ClampAttrs>();
  const Tensor& x = self_of(a);
  Tensor inside;
  if (at.min) inside = x >= *at.min;
  if (at.max) inside = inside.defined() ? logical_and(inside, x <= *at.max) : x <= *at.max;
  return a.grad().masked_fill(logical_not(inside), 0);
}

// ---- arithmetic with two tensor operands ----

Grads add_backward(const GradArgs& a) {
  const Scalar& alpha = a.attrs_as<AlphaAttrs>().alpha;
  return {a.needs(0) ? a.grad() : Tensor(), a.needs(1) ? scaled(a.grad(), alpha) : Tensor()};
}
Grads sub_backward(const GradArgs& a) {
  const Scalar& alpha = a.attrs_as<AlphaAttrs>().alpha;
  return {a.needs(0) ? a.grad() : Tensor(), a.needs(1) ? a.grad() * scalar_neg(alpha) : Tensor()};
}
Grads mul_backward(const GradArgs& a) {
  return {a.needs(0) ? a.grad() * a.inputs[1] : Tensor(),
          a.needs(1) ? a.grad() * a.inputs[0] : Tensor()};
}
// d(x / y)/dy = -x / y^2, from self rather than the result (as torch), so that div_ followed by
// another in-place op on the same tensor keeps a valid saved value.
Grads div_backward(const GradArgs& a) {
  const Tensor& self = a.inputs[0];
  const Tensor& other = a.inputs[1];
  return {a.needs(0) ? a.grad() / other : Tensor(),
          a.needs(1) ? -a.grad() * (self / other / other) : Tensor()};
}

// ---- arithmetic with a Scalar operand (ScalarOperandAttrs) ----

Tensor mul_scalar_grad(const GradArgs& a) {
  return a.grad() * a.attrs_as<ScalarOperandAttrs>().other;
}
Tensor div_scalar_grad(const GradArgs& a) {
  return a.grad() / a.attrs_as<ScalarOperandAttrs>().other;
}

// pow(x, e) with a tensor exponent. For x: e x^(e-1), zero where e == 0. For e: result log(x),
// zero where x == 0 and e >= 0 (the limit of x^e log x there; torch masks the same points).
Grads pow_backward(const GradArgs& a) {
  const Tensor& self = a.inputs[0];
  const Tensor& exponent = a.inputs[1];
  Grads g(2);
  if (a.needs(0)) {
    g[0] = (a.grad() * (exponent * self.pow(exponent - 1))).masked_fill(exponent == 0, 0);
  }
  if (a.needs(1)) {
    Tensor zero_base = logical_and(self == 0, exponent >= 0);
    g[1] = (a.grad() * (result_of(a) * log(self))).masked_fill(zero_base, 0);
  }
  return g;
}

// maximum/minimum: the larger (smaller) operand takes the gradient, and ties split it in half,
// as torch. `self_loses` is where self is not selected.
Grads select_backward(const GradArgs& a, const Tensor& self_loses, const Tensor& other_loses) {
  const Tensor& self = a.inputs[0];
  const Tensor& other = a.inputs[1];
  Tensor shared = where(self == other, a.grad() / 2, a.grad());
  return {a.needs(0) ? shared.masked_fill(self_loses, 0) : Tensor(),
          a.needs(1) ? shared.masked_fill(other_loses, 0) : Tensor()};
}
Grads maximum_backward(const GradArgs& a) {
  return select_backward(a, a.inputs[0]<a.inputs[1], a.inputs[0]> a.inputs[1]);
}
Grads minimum_backward(const GradArgs& a) {
  return select_backward(a, a.inputs[0] > a.inputs[1], a.inputs[0] < a.inputs[1]);
}

// where(condition, self, other): the condition is not differentiable.
Grads where_backward(const GradArgs& a) {
  const Tensor& cond = a.inputs[0];
  return {Tensor(), a.needs(1) ? a.grad().masked_fill(logical_not(cond), 0) : Tensor(),
          a.needs(2) ? a.grad().masked_fill(cond, 0) : Tensor()};
}

// masked_fill(self, mask, value): the filled elements no longer depend on self.
Grads masked_fill_backward(const GradArgs& a) {
  return {a.needs(0) ? a.grad().masked_fill(a.inputs[1], 0) : Tensor(), Tensor()};
}

// ---- rounding, remainders, the activations, lerp, clamp with tensor bounds ----

// grad where `keep` holds, 0 elsewhere (NaN comparisons are false, so they give 0).
Tensor grad_where(const Tensor& grad, const Tensor& keep) {
  return grad.masked_fill(logical_not(keep), 0);
}

// d(1/x) = -1/x^2, from the saved result.
Tensor reciprocal_grad(const GradArgs& a) {
  const Tensor& r = result_of(a);
  return -a.grad() * (r * r);
}
// The slope for x <= 0, as torch's leaky_relu_backward.
Tensor leaky_relu_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  return where(x > 0, a.grad(), a.grad() * a.attrs_as<LeakyReluAttrs>().negative_slope);
}
Tensor elu_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  return where(x > 0, a.grad(), a.grad() * (exp(x) * a.attrs_as<EluAttrs>().alpha));
}
// sigmoid(x beta) below the threshold, 1 above it (where the forward is x).
Tensor softplus_grad(const GradArgs& a) {
  const auto& at = a.attrs_as<SoftplusAttrs>();
  Tensor xb = self_of(a) * at.beta;
  return where(xb > at.threshold, a.grad(), a.grad() * sigmoid(xb));
}
// Zero at and outside the bounds, as torch's hardtanh_backward.
Tensor hardtanh_grad(const GradArgs& a) {
  const auto& at = a.attrs_as<HardtanhAttrs>();
  const Tensor& x = self_of(a);
  return grad_where(a.grad(), logical_and(x > at.min_val, x < at.max_val));
}
// 0 up to -3, x / 3 + 1/2 between, 1 from 3 on, as torch's hardswish_backward.
Tensor hardswish_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  Tensor inner = where(x < 3, a.grad() * (x / 3 + 0.5), a.grad());
  return grad_where(inner, x > -3);
}
// mish' = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2) with sp = softplus(x), as torch.
Tensor mish_grad(const GradArgs& a) {
  const Tensor& x = self_of(a);
  Tensor t = tanh(log1p(exp(x)));
  return a.grad() * (t + x * sigmoid(x) * (1 - t * t));
}

// remainder(a, b) = a - b floor(a / b) and fmod(a, b) = a - b trunc(a / b).
Grads remainder_backward(const GradArgs& a) {
  const Tensor& self = a.inputs[0];
  const Tensor& other = a.inputs[1];
  return {a.needs(0) ? a.grad() : Tensor(),
          a.needs(1) ? -a.grad() * floor(self / other) : Tensor()};
}
Grads fmod_backward(const GradArgs& a) {
  const Tensor& self = a.inputs[0];
  const Tensor& other = a.inputs[1];
  return {a.needs(0) ? a.grad() : Tensor(),
          a.needs(1) ? -a.grad() * trunc(self / other) : Tensor()};
}

Grads lerp_backward(const GradArgs& a) {
  const Tensor& self = a.inputs[0];
  const Tensor& end = a.inputs[1];
  const Tensor& weight = a.inputs[2];
  return {a.needs(0) ? a.grad() * (1 - weight) : Tensor(),
          a.needs(1) ? a.grad() * weight : Tensor(),
          a.needs(2) ? a.grad() * (end - self) : Tensor()};
}
Grads lerp_scalar_backward(const GradArgs& a) {
  double w = a.attrs_as<LerpAttrs>().weight.to_double();
  return {a.needs(0) ? a.grad() * (1 - w) : Tensor(), a.needs(1) ? a.grad() * w : Tensor()};
}

// grad where `keep` holds, halved where `tie` holds.
Tensor split_where(const Tensor& grad, const Tensor& keep, const Tensor& tie) {
  return grad_where(where(tie, grad / 2, grad), keep);
}

// clamp with tensor bounds, as torch (2.x) differentiates it: the output follows x inside
// [min, max], the bound beyond it, and max alone where min > max. At a tie x == min or x == max
// (with min < max) x and that bound share the gradient in halves, as maximum and minimum do; with
// min == max == x, x takes it all. NaN in x fails every comparison, so x takes the gradient.
Grads clamp_tensor_backward(const GradArgs& a) {
  const Tensor& x = a.inputs[0];
  const Tensor& lo = a.inputs[1];
  const Tensor& hi = a.inputs[2];
  Tensor at_lo = x == lo, at_hi = x == hi, ordered = lo<hi, crossed = lo> hi;
  Grads g(3);
  if (a.needs(0)) {
    g[0] = split_where(a.grad(), logical_not(logical_or(x<lo, x> hi)), at_lo != at_hi);
  }
  if (a.needs(1)) {
    Tensor active = logical_or(x < lo, logical_and(at_lo, ordered));
    g[1] = split_where(a.grad(), logical_and(active, logical_not(crossed)), at_lo);
  }
  if (a.needs(2)) {
    Tensor active = logical_or(x > hi, logical_and(at_hi, ordered));
    g[2] = where(crossed, a.grad(), split_where(a.grad(), active, at_hi));
  }
  return g;
}
// clamp with one tensor bound is maximum(x, min) or minimum(x, max), and differentiates as those
// do (torch): ties split the gradient in halves, and NaN in x gives it to both.
Grads clamp_min_backward(const GradArgs& a) {
  const Tensor& x = a.inputs[0];
  const Tensor& lo = a.inputs[1];
  Tensor tie = x == lo;
  return {a.needs(0) ? split_where(a.grad(), logical_not(x < lo), tie) : Tensor(),
          a.needs(1) ? split_where(a.grad(), logical_not(x > lo), tie) : Tensor()};
}
Grads clamp_max_backward(const GradArgs& a) {
  const Tensor& x = a.inputs[0];
  const Tensor& hi = a.inputs[1];
  Tensor tie = x == hi;
  return {a.needs(0) ? split_where(a.grad(), logical_not(x > hi), tie) : Tensor(),
          a.needs(1) ? split_where(a.grad(), logical_not(x < hi), tie) : Tensor()};
}

// Sets the formula and saved-value masks of each named op (an op and its in-place twin).
void set(OpTable& table, std::initializer_list<std::string_view> names, autograd::DerivativeFn f,
         uint32_t save_inputs, uint32_t save_outputs) {
  for (std::string_view name : names)
    table.set_derivative(name, f, save_inputs, save_outputs);
}

}  // namespace

void register_pointwise_derivatives(OpTable& table) {
  constexpr uint32_t kResult = save_bit(0);
  // Arithmetic; an in-place twin shares its out-of-place formula and masks.
  set(table, {"add", "add_"}, add_backward, kSaveNone, kSaveNone);
  set(table, {"sub", "sub_"}, sub_backward, kSaveNone, kSaveNone);
  set(table, {"mul", "mul_"}, mul_backward, kSelf | kOther, kSaveNone);
  set(table, {"div", "div_"}, div_backward, kSelf | kOther, kSaveNone);
  set(table, {"add_scalar", "add_scalar_", "sub_scalar", "sub_scalar_"}, unary<identity_grad>,
      kSaveNone, kSaveNone);
  set(table, {"mul_scalar", "mul_scalar_"}, unary<mul_scalar_grad>, kSaveNone, kSaveNone);
  set(table, {"div_scalar", "div_scalar_"}, unary<div_scalar_grad>, kSaveNone, kSaveNone);

  // Unary functions: those whose derivative is a function of the result save the result.
  set(table, {"neg"}, unary<neg_grad>, kSaveNone, kSaveNone);
  set(table, {"exp"}, unary<exp_grad>, kSaveNone, kResult);
  set(table, {"log"}, unary<log_grad>, kSelf, kSaveNone);
  set(table, {"tanh"}, unary<tanh_grad>, kSaveNone, kResult);
  set(table, {"sigmoid"}, unary<sigmoid_grad>, kSaveNone, kResult);
  set(table, {"relu", "relu_"}, unary<relu_grad>, kSaveNone, kResult);
  set(table, {"log1p"}, unary<log1p_grad>, kSelf, kSaveNone);
  set(table, {"expm1"}, unary<expm1_grad>, kSaveNone, kResult);
  set(table, {"sqrt"}, unary<sqrt_grad>, kSaveNone, kResult);
  set(table, {"rsqrt"}, unary<rsqrt_grad>, kSaveNone, kResult);
  set(table, {"abs"}, unary<abs_grad>, kSelf, kSaveNone);
  set(table, {"sign"}, unary<zero_grad>, kSaveNone, kSaveNone);
  set(table, {"silu", "silu_"}, unary<silu_grad>, kSelf, kSaveNone);
  set(table, {"sin"}, unary<sin_grad>, kSelf, kSaveNone);
  set(table, {"cos"}, unary<cos_grad>, kSelf, kSaveNone);
  set(table, {"erf"}, unary<erf_grad>, kSelf, kSaveNone);
  set(table, {"gelu"}, unary<gelu_grad>, kSelf, kSaveNone);
  set(table, {"gelu_backward"}, gelu_backward_backward, kSelf | kOther, kSaveNone);
  set(table, {"pow"}, pow_backward, kSelf | kOther, kResult);
  set(table, {"pow_scalar"}, unary<pow_scalar_grad>, kSelf, kSaveNone);
  set(table, {"clamp", "clamp_"}, unary<clamp_grad>, kSelf, kSaveNone);

  // Selection.
  set(table, {"maximum"}, maximum_backward, kSelf | kOther, kSaveNone);
  set(table, {"minimum"}, minimum_backward, kSelf | kOther, kSaveNone);
  set(table, {"where"}, where_backward, save_bit(0), kSaveNone);
  set(table, {"masked_fill", "masked_fill_"}, masked_fill_backward, save_bit(1), kSaveNone);

  // Rounding, remainders, the activations, lerp and the tensor clamps.
  constexpr uint32_t kThree = kSelf | kOther | save_bit(2);
  set(table, {"floor", "ceil", "round", "trunc", "floor_", "ceil_", "round_", "trunc_"},
      unary<zero_grad>, kSaveNone, kSaveNone);
  set(table, {"fmod_scalar", "remainder_scalar", "fmod_scalar_", "remainder_scalar_"},
      unary<identity_grad>, kSaveNone, kSaveNone);
  set(table, {"fmod", "fmod_"}, fmod_backward, kSelf | kOther, kSaveNone);
  set(table, {"remainder", "remainder_"}, remainder_backward, kSelf | kOther, kSaveNone);
  set(table, {"reciprocal", "reciprocal_"}, unary<reciprocal_grad>, kSaveNone, kResult);
  set(table, {"leaky_relu", "leaky_relu_"}, unary<leaky_relu_grad>, kSelf, kSaveNone);
  set(table, {"elu", "elu_"}, unary<elu_grad>, kSelf, kSaveNone);
  set(table, {"softplus"}, unary<softplus_grad>, kSelf, kSaveNone);
  set(table, {"hardtanh", "hardtanh_"}, unary<hardtanh_grad>, kSelf, kSaveNone);
  set(table, {"hardswish", "hardswish_"}, unary<hardswish_grad>, kSelf, kSaveNone);
  set(table, {"mish", "mish_"}, unary<mish_grad>, kSelf, kSaveNone);
  set(table, {"lerp", "lerp_"}, lerp_backward, kThree, kSaveNone);
  set(table, {"lerp_scalar", "lerp_scalar_"}, lerp_scalar_backward, kSaveNone, kSaveNone);
  set(table, {"clamp_tensor"}, clamp_tensor_backward, kThree, kSaveNone);
  set(table, {"clamp_min"}, clamp_min_backward, kSelf | kOther, kSaveNone);
  set(table, {"clamp_max"}, clamp_max_backward, kSelf | kOther, kSaveNone);
}

}  // namespace kiln
