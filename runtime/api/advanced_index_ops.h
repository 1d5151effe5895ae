// Advanced indexing with torch's names and semantics: index (x[indices]), index_put
// (out-of-place assignment through indices, optionally accumulating), masked_select and
// nonzero. Index entries are int64 or int32 tensors (negative values count from the end) or bool
// masks (expanded to mask.nonzero(), one column per masked dim); an absent entry is a full
// slice. Index tensors broadcast together; where the indexed dims land follows torch
// (Note [Advanced index schema], runtime/kernels/advanced_index.h).
#pragma once

#include <optional>
#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

using IndexList = std::vector<std::optional<Tensor>>;

// torch's aten::index: x[indices].
Tensor index(const Tensor& x, const IndexList& indices,
             std::source_location loc = std::source_location::current());
// A copy of x with x[indices] = values (values broadcast to the indexing result's shape), or
// += values with accumulate. Without accumulate, of duplicate indices the last in row-major
// order of the broadcast indices wins on the CPU; torch does not specify which.
Tensor index_put(const Tensor& x, const IndexList& indices, const Tensor& values,
                 bool accumulate = false,
                 std::source_location loc = std::source_location::current());
// In place: x[indices] = values (or += values).
const Tensor& index_put_(const Tensor& x, const IndexList& indices, const Tensor& values,
                         bool accumulate = false,
                         std::source_location loc = std::source_location::current());
// The elements of x where mask (bool, broadcast with x) is true, as a 1-D tensor in row-major
// order. Its size depends on the data: under compile() it is a graph break (Note
// [Data-dependent output shapes]).
Tensor masked_select(const Tensor& x, const Tensor& mask,
                     std::source_location loc = std::source_location::current());
// The int64 indices [n, x.dim()] of x's nonzero elements, in row-major order; a graph break
// under compile() like masked_select.
Tensor nonzero(const Tensor& x, std::source_location loc = std::source_location::current());
// torch.nonzero(as_tuple=True) and torch.where(cond): one 1-D index tensor per dim.
std::vector<Tensor> nonzero_tuple(const Tensor& x,
                                  std::source_location loc = std::source_location::current());

}  // namespace kiln
