#include "kiln/runtime/api/pointwise_ops.h"

#include <algorithm>

#include "kiln/base/call_site.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/pointwise_activation_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("add"), {a, b}, AlphaAttrs{alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("add_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("sub"), {a, b}, AlphaAttrs{alpha});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("sub_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor mul(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("mul"), {a, b}, AlphaAttrs{});
}
Tensor mul(const Tensor& a, const Scalar& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("mul_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor div(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("div"), {a, b}, AlphaAttrs{});
}
Tensor div(const Tensor& a, const Scalar& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("div_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor neg(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("neg"), {x}, NoAttrs{});
}
Tensor exp(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("exp"), {x}, NoAttrs{});
}
Tensor log(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("log"), {x}, NoAttrs{});
}
Tensor tanh(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("tanh"), {x}, NoAttrs{});
}
Tensor sigmoid(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("sigmoid"), {x}, NoAttrs{});
}
Tensor relu(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("relu"), {x}, NoAttrs{});
}

Tensor pow(const Tensor& self, const Tensor& exponent, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("pow"), {self, exponent}, NoAttrs{});
}
Tensor pow(const Tensor& self, const Scalar& exponent, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("pow_scalar"), {self}, ScalarOtherAttrs{exponent});
}

#define KILN_UNARY(fn)                                   \
  Tensor fn(const Tensor& x, std::source_location loc) { \
    CallSiteScope site(loc);                             \
    return call_op1(KILN_OP(#fn), {x}, NoAttrs{});       \
  }
KILN_UNARY(log1p)
KILN_UNARY(expm1)
KILN_UNARY(sqrt)
KILN_UNARY(rsqrt)
KILN_UNARY(silu)
KILN_UNARY(sin)
KILN_UNARY(cos)
KILN_UNARY(erf)
KILN_UNARY(abs)
KILN_UNARY(sign)
KILN_UNARY(logical_not)
KILN_UNARY(floor)
KILN_UNARY(ceil)
KILN_UNARY(trunc)
KILN_UNARY(reciprocal)
KILN_UNARY(hardswish)
KILN_UNARY(mish)
#undef KILN_UNARY

Tensor gelu(const Tensor& x, const std::string& approximate, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("gelu"), {x}, GeluAttrs{approximate});
}
Tensor gelu_backward(const Tensor& grad_output, const Tensor& x, const std::string& approximate,
                     std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("gelu_backward"), {grad_output, x}, GeluAttrs{approximate});
}
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("clamp"), {x}, ClampAttrs{min, max});
}
namespace {
Tensor clamp_bound(const OpDef& op, const Tensor& x, const Tensor& bound) {
  KILN_CHECK(bound.defined(),
             "clamp: at least one of 'min' or 'max' must be defined (input of shape {} and dtype "
             "{})",
             shape_str(x.sizes()), x.dtype());
  return call_op1(op, {x, bound}, NoAttrs{});
}
}  // namespace

Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, std::source_location loc) {
  CallSiteScope site(loc);
  if (!max.defined()) return clamp_min(x, min, loc);
  if (!min.defined()) return clamp_max(x, max, loc);
  return call_op1(KILN_OP("clamp_tensor"), {x, min, max}, NoAttrs{});
}
Tensor clamp_min(const Tensor& x, const Tensor& min, std::source_location loc) {
  CallSiteScope site(loc);
  return clamp_bound(KILN_OP("clamp_min"), x, min);
}
Tensor clamp_max(const Tensor& x, const Tensor& max, std::source_location loc) {
  CallSiteScope site(loc);
  return clamp_bound(KILN_OP("clamp_max"), x, max);
}
Tensor round(const Tensor& x, int64_t decimals, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("round"), {x}, RoundAttrs{decimals});
}
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("lerp"), {self, end, weight}, NoAttrs{});
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("lerp_scalar"), {self, end}, LerpAttrs{weight});
}
Tensor leaky_relu(const Tensor& x, double negative_slope, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("leaky_relu"), {x}, LeakyReluAttrs{negative_slope});
}
Tensor elu(const Tensor& x, double alpha, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("elu"), {x}, EluAttrs{alpha});
}
Tensor softplus(const Tensor& x, double beta, double threshold, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("softplus"), {x}, SoftplusAttrs{beta, threshold});
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("hardtanh"), {x}, HardtanhAttrs{min_val, max_val});
}
Tensor maximum(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("maximum"), {a, b}, NoAttrs{});
}
Tensor minimum(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("minimum"), {a, b}, NoAttrs{});
}
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("where"), {cond, a, b}, NoAttrs{});
}

namespace {
int category(DType t) {
  return is_floating(t) ? 2 : t == kBool ? 0 : 1;
}
int category(const Scalar& s) {
  return s.is_floating() ? 2 : s.is_bool() ? 0 : 1;
}
// A number beside a tensor keeps the tensor's dtype unless it is of a higher category (torch's
// wrapped numbers), also where the tensor is 0-dim: so a 0-dim tensor of that dtype.
Tensor wrapped_number(const Scalar& s, const Tensor& like) {
  DType t = category(s) > category(like.dtype()) ? s.default_dtype() : like.dtype();
  return full({}, s, TensorOptions(t).device(like.device()));
}
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, std::source_location loc) {
  CallSiteScope site(loc);
  return where(cond, a, wrapped_number(b, a));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return where(cond, wrapped_number(a, b), b);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b, std::source_location loc) {
  CallSiteScope site(loc);
  TensorOptions on = TensorOptions().device(cond.device());
  return where(cond, full({}, a, on.dtype(a.default_dtype())),
               full({}, b, on.dtype(b.default_dtype())));
}

// Ops with a tensor form and a `_scalar` twin taking a ScalarOtherAttrs.
#define KILN_TENSOR_OR_SCALAR(fn)                                         \
  Tensor fn(const Tensor& a, const Tensor& b, std::source_location loc) { \
    CallSiteScope site(loc);                                              \
    return call_op1(KILN_OP(#fn), {a, b}, NoAttrs{});                     \
  }                                                                       \
  Tensor fn(const Tensor& a, const Scalar& b, std::source_location loc) { \
    CallSiteScope site(loc);                                              \
    return call_op1(KILN_OP(#fn "_scalar"), {a}, ScalarOtherAttrs{b});    \
  }
KILN_TENSOR_OR_SCALAR(eq)
KILN_TENSOR_OR_SCALAR(ne)
KILN_TENSOR_OR_SCALAR(lt)
KILN_TENSOR_OR_SCALAR(le)
KILN_TENSOR_OR_SCALAR(gt)
KILN_TENSOR_OR_SCALAR(ge)
KILN_TENSOR_OR_SCALAR(fmod)
KILN_TENSOR_OR_SCALAR(remainder)
#undef KILN_TENSOR_OR_SCALAR

Tensor logical_and(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("logical_and"), {a, b}, NoAttrs{});
}
Tensor logical_or(const Tensor& a, const Tensor& b, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("logical_or"), {a, b}, NoAttrs{});
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value,
                   std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("masked_fill"), {x, mask}, MaskedFillAttrs{value});
}

// ---- in-place: the dispatcher aliases output 0 to self and bumps its version ----

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha,
                   std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("add_"), {self, other}, AlphaAttrs{alpha});
  return self;
}
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha,
                   std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("add_scalar_"), {self}, ScalarOperandAttrs{other, alpha});
  return self;
}
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha,
                   std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("sub_"), {self, other}, AlphaAttrs{alpha});
  return self;
}
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha,
                   std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("sub_scalar_"), {self}, ScalarOperandAttrs{other, alpha});
  return self;
}
const Tensor& mul_(const Tensor& self, const Tensor& other, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("mul_"), {self, other}, AlphaAttrs{});
  return self;
}
const Tensor& mul_(const Tensor& self, const Scalar& other, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("mul_scalar_"), {self}, ScalarOperandAttrs{other});
  return self;
}
const Tensor& div_(const Tensor& self, const Tensor& other, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("div_"), {self, other}, AlphaAttrs{});
  return self;
}
const Tensor& div_(const Tensor& self, const Scalar& other, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("div_scalar_"), {self}, ScalarOperandAttrs{other});
  return self;
}
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min,
                     const std::optional<Scalar>& max, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("clamp_"), {self}, ClampAttrs{min, max});
  return self;
}
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value,
                           std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("masked_fill_"), {self, mask}, MaskedFillAttrs{value});
  return self;
}
const Tensor& relu_(const Tensor& self, std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(KILN_OP("relu_"), {self}, NoAttrs{});
  return self;
}

}  // namespace kiln
