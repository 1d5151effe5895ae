#include "kiln/frontend/reduction_ops.h"

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor sum(const Tensor& x, Shape dims, bool keepdim) {
  return call_op1(KILN_OP("sum"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor mean(const Tensor& x, Shape dims, bool keepdim) {
  return call_op1(KILN_OP("mean"), {x}, ReduceAttrs{std::move(dims), keepdim});
}

}  // namespace kiln
