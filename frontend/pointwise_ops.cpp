#include "kiln/frontend/pointwise_ops.h"

#include <algorithm>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_op1(KILN_OP("add"), {a, b}, AlphaAttrs{alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call_op1(KILN_OP("add_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call_op1(KILN_OP("sub"), {a, b}, AlphaAttrs{alpha});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call_op1(KILN_OP("sub_scalar"), {a}, ScalarOperandAttrs{b, alpha});
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("mul"), {a, b}, AlphaAttrs{});
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return call_op1(KILN_OP("mul_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor div(const Tensor& a, const Tensor& b) {
  return call_op1(KILN_OP("div"), {a, b}, AlphaAttrs{});
}
Tensor div(const Tensor& a, const Scalar& b) {
  return call_op1(KILN_OP("div_scalar"), {a}, ScalarOperandAttrs{b});
}
Tensor neg(const Tensor& x) {
  return call_op1(KILN_OP("neg"), {x}, NoAttrs{});
}
Tensor exp(const Tensor& x) {
  return call_op1(KILN_OP("exp"), {x}, NoAttrs{});
}
Tensor log(const Tensor& x) {
  return call_op1(KILN_OP("log"), {x}, NoAttrs{});
}
Tensor tanh(const Tensor& x) {
  return call_op1(KILN_OP("tanh"), {x}, NoAttrs{});
}
Tensor sigmoid(const Tensor& x) {
  return call_op1(KILN_OP("sigmoid"), {x}, NoAttrs{});
}
Tensor relu(const Tensor& x) {
  return call_op1(KILN_OP("relu"), {x}, NoAttrs{});
}

}  // namespace kiln
