// Indexing: embedding, index_select, gather, scatter_add. Index tensors are int64; an index
// outside the indexed dimension throws kiln::Error naming the op, the index and the size.
#pragma once

#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// Rows of weight [num_embeddings, dim] picked by `indices` (any shape): indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::source_location loc = std::source_location::current());
// The entries of x along `dim` at the positions of the 1-D `index`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index,
                    std::source_location loc = std::source_location::current());
// out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (likewise for other dims); out has
// index's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index,
              std::source_location loc = std::source_location::current());
// Out-of-place torch.scatter_add: a copy of x with out[index[i][j][k]][j][k] += src[i][j][k]
// for dim 0 (likewise for other dims); duplicate indices accumulate.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   std::source_location loc = std::source_location::current());

}  // namespace kiln
