#include "kiln/runtime/api/reduction_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor sum(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("sum"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor mean(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("mean"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor prod(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("prod"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor amax(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("amax"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor amin(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("amin"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor logsumexp(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("logsumexp"), {x}, ReduceAttrs{std::move(dims), keepdim});
}
Tensor var(const Tensor& x, Shape dims, double correction, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("var"), {x}, VarAttrs{std::move(dims), correction, keepdim});
}

// max(x)/min(x) are amax/amin over every dim; torch refuses an empty input here.
Tensor max(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(x.numel() > 0,
             "max(): Expected reduction dim to be specified for input.numel() == 0 (input "
             "shape {})",
             shape_str(x.sizes()));
  return amax(x);
}
Tensor min(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(x.numel() > 0,
             "min(): Expected reduction dim to be specified for input.numel() == 0 (input "
             "shape {})",
             shape_str(x.sizes()));
  return amin(x);
}

namespace {
std::tuple<Tensor, Tensor> two(std::vector<Tensor> out) {
  return {std::move(out[0]), std::move(out[1])};
}
}  // namespace

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim,
                               std::source_location loc) {
  CallSiteScope site(loc);
  DimIndexAttrs a{dim, keepdim};
  const Tensor in[] = {x};
  return two(call_op(KILN_OP("max"), in, &a));
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim,
                               std::source_location loc) {
  CallSiteScope site(loc);
  DimIndexAttrs a{dim, keepdim};
  const Tensor in[] = {x};
  return two(call_op(KILN_OP("min"), in, &a));
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("argmax"), {x}, DimIndexAttrs{dim, keepdim});
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("argmin"), {x}, DimIndexAttrs{dim, keepdim});
}

}  // namespace kiln
