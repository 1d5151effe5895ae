#include "kiln/runtime/api/sort_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/sort_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

std::tuple<Tensor, Tensor> pair_of(const OpDef& op, const Tensor& x, const void* attrs) {
  const Tensor in[] = {x};
  std::vector<Tensor> out = call_op(op, in, attrs);
  return {std::move(out[0]), std::move(out[1])};
}

Tensor converted(const Tensor& x, std::optional<DType> dtype) {
  return dtype.has_value() && *dtype != x.dtype() ? x.to(*dtype) : x;
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable,
                                std::source_location loc) {
  CallSiteScope site(loc);
  SortAttrs a{dim, descending, stable};
  return pair_of(KILN_OP("sort"), x, &a);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable,
               std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("argsort"), {x}, SortAttrs{dim, descending, stable});
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted,
                                std::source_location loc) {
  CallSiteScope site(loc);
  TopkAttrs a{k, dim, largest, sorted};
  return pair_of(KILN_OP("topk"), x, &a);
}

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("cumsum"), {converted(x, dtype)}, ScanAttrs{dim});
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("cumprod"), {converted(x, dtype)}, ScanAttrs{dim});
}

}  // namespace kiln
