#include "kiln/runtime/api/indexing_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor embedding(const Tensor& weight, const Tensor& indices, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("embedding"), {weight, indices}, NoAttrs{});
}
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("index_select"), {x, index}, DimAttrs{dim});
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("gather"), {x, index}, DimAttrs{dim});
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("scatter_add"), {x, index, src}, DimAttrs{dim});
}

}  // namespace kiln
