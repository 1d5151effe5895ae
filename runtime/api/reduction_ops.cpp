#include "kiln/runtime/api/reduction_ops.h"

#include <fmt/format.h>

#include "kiln/runtime/api/pointwise_ops.h"

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

namespace {
// The composites check their dims themselves, so that an error names them, not the table op
// they are made of.
void check_dims(const char* op, const Tensor& x, const Shape& dims) {
  int64_t ndim = std::max<int64_t>(x.dim(), 1);
  std::vector<bool> seen(static_cast<size_t>(ndim));
  for (int64_t d : dims) {
    auto w = static_cast<size_t>(wrap_dim(op, d, ndim));
    KILN_CHECK(!seen[w],
               "{}: dim {} appears multiple times in the list of dims [{}] (input shape {})", op, d,
               fmt::join(dims, ", "), shape_str(x.sizes()));
    seen[w] = true;
  }
}
}  // namespace

Tensor std(const Tensor& x, Shape dims, double correction, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  check_dims("std", x, dims);
  KILN_CHECK(is_floating(x.dtype()),
             "std: expected a floating input, but got a tensor of dtype {} and shape {}", x.dtype(),
             shape_str(x.sizes()));
  return sqrt(var(x, std::move(dims), correction, keepdim));
}
// Counting rather than amax/amin over bools: a count is defined over no elements (any of
// nothing is false, all of nothing is true), where amax/amin refuse an empty reduction.
Tensor any(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  check_dims("any", x, dims);
  return gt(sum(ne(x, 0), std::move(dims), keepdim), 0);
}
Tensor all(const Tensor& x, Shape dims, bool keepdim, std::source_location loc) {
  CallSiteScope site(loc);
  check_dims("all", x, dims);
  return eq(sum(eq(x, 0), std::move(dims), keepdim), 0);
}

// max(x)/min(x) are amax/amin over every dim; torch refuses an empty input here.
Tensor max(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  // A symbolic numel is never 0 (every symbol is at least 2): reading it keeps the symbols.
  KILN_CHECK(!(x.sym_numel() == 0),
             "max(): Expected reduction dim to be specified for input.numel() == 0 (input "
             "shape {})",
             shape_str(x.sizes()));
  return amax(x);
}
Tensor min(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(!(x.sym_numel() == 0),
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
