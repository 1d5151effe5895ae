#include "kiln/runtime/api/shape_ops.h"

#include <algorithm>

#include "kiln/base/call_site.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, std::source_location loc) {
  CallSiteScope site(loc);
  DimAttrs attrs{dim};
  return std::move(call_op(KILN_OP("cat"), tensors, &attrs)[0]);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(!tensors.empty(), "stack: expects a non-empty list of tensors");
  // Sizes compared as expressions first, so that symbolic ones stay symbolic (Note [Size reads
  // while tracing]); only a mismatch between expressions compares the integers.
  SymShape first = tensors[0].sym_sizes();
  for (size_t i = 1; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].sym_sizes() == first || tensors[i].sizes() == tensors[0].sizes(),
               "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at "
               "entry {}",
               shape_str(tensors[0].sizes()), shape_str(tensors[i].sizes()), i);
  }
  int64_t d = wrap_dim("stack", dim, static_cast<int64_t>(first.size()) + 1);
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors)
    expanded.push_back(t.unsqueeze(d));
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim,
                          std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(x.dim() > 0, "split: cannot split a 0-dim tensor");
  int64_t d = wrap_dim("split", dim, x.dim());
  int64_t size = x.size(d);
  KILN_CHECK(split_size > 0 || (split_size == 0 && size == 0),
             "split: split_size must be positive, got {} (shape {})", split_size,
             shape_str(x.sizes()));
  std::vector<Tensor> parts;
  if (size == 0) {
    parts.push_back(x);
    return parts;
  }
  for (int64_t start = 0; start < size; start += split_size) {
    parts.push_back(x.slice(d, start, std::min(size, start + split_size)));
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(chunks > 0, "chunk: number of chunks must be positive, got {}", chunks);
  KILN_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  int64_t size = x.size(wrap_dim("chunk", dim, x.dim()));
  int64_t split_size = (size + chunks - 1) / chunks;
  return split(x, std::max<int64_t>(split_size, size == 0 ? 0 : 1), dim);
}

}  // namespace kiln
