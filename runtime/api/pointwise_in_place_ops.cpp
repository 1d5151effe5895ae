// The in-place twins of the rounding, remainder, reciprocal, lerp and activation ops (silu_ too):
// each is its own kInPlace table entry (Note [In-place ops], runtime/kernels/pointwise_kernels.h).
#include "kiln/base/call_site.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/pointwise_activation_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

template <class Attrs>
const Tensor& in_place(const OpDef& op, std::initializer_list<Tensor> inputs, const Attrs& attrs,
                       std::source_location loc) {
  CallSiteScope site(loc);
  call_op1(op, inputs, attrs);
  return *inputs.begin();
}

}  // namespace

#define KILN_UNARY_IN_PLACE(fn)                                    \
  const Tensor& fn##_(const Tensor& x, std::source_location loc) { \
    return in_place(KILN_OP(#fn "_"), {x}, NoAttrs{}, loc);        \
  }
KILN_UNARY_IN_PLACE(floor)
KILN_UNARY_IN_PLACE(ceil)
KILN_UNARY_IN_PLACE(trunc)
KILN_UNARY_IN_PLACE(reciprocal)
KILN_UNARY_IN_PLACE(hardswish)
KILN_UNARY_IN_PLACE(mish)
KILN_UNARY_IN_PLACE(silu)
#undef KILN_UNARY_IN_PLACE

#define KILN_TENSOR_OR_SCALAR_IN_PLACE(fn)                                                 \
  const Tensor& fn##_(const Tensor& self, const Tensor& other, std::source_location loc) { \
    return in_place(KILN_OP(#fn "_"), {self, other}, NoAttrs{}, loc);                      \
  }                                                                                        \
  const Tensor& fn##_(const Tensor& self, const Scalar& other, std::source_location loc) { \
    return in_place(KILN_OP(#fn "_scalar_"), {self}, ScalarOtherAttrs{other}, loc);        \
  }
KILN_TENSOR_OR_SCALAR_IN_PLACE(fmod)
KILN_TENSOR_OR_SCALAR_IN_PLACE(remainder)
#undef KILN_TENSOR_OR_SCALAR_IN_PLACE

const Tensor& round_(const Tensor& x, int64_t decimals, std::source_location loc) {
  return in_place(KILN_OP("round_"), {x}, RoundAttrs{decimals}, loc);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight,
                    std::source_location loc) {
  return in_place(KILN_OP("lerp_"), {self, end, weight}, NoAttrs{}, loc);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight,
                    std::source_location loc) {
  return in_place(KILN_OP("lerp_scalar_"), {self, end}, LerpAttrs{weight}, loc);
}
const Tensor& leaky_relu_(const Tensor& x, double negative_slope, std::source_location loc) {
  return in_place(KILN_OP("leaky_relu_"), {x}, LeakyReluAttrs{negative_slope}, loc);
}
const Tensor& elu_(const Tensor& x, double alpha, std::source_location loc) {
  return in_place(KILN_OP("elu_"), {x}, EluAttrs{alpha}, loc);
}
const Tensor& hardtanh_(const Tensor& x, double min_val, double max_val, std::source_location loc) {
  return in_place(KILN_OP("hardtanh_"), {x}, HardtanhAttrs{min_val, max_val}, loc);
}

}  // namespace kiln
