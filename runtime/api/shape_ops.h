// Joining and splitting tensors, and the composites that rearrange elements (triangles,
// flips, rolls, repeats).
#pragma once

#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- joining and splitting ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0,
           std::source_location loc = std::source_location::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0,
             std::source_location loc = std::source_location::current());
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0,
                          std::source_location loc = std::source_location::current());
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0,
                          std::source_location loc = std::source_location::current());

// ---- rearranging ----
// The lower / upper triangle of the last two dims (batched): elements with
// col - row <= diagonal (tril) or >= diagonal (triu) are kept, the others are zero.
Tensor tril(const Tensor& x, int64_t diagonal = 0,
            std::source_location loc = std::source_location::current());
Tensor triu(const Tensor& x, int64_t diagonal = 0,
            std::source_location loc = std::source_location::current());
// The elements in reverse order along each of `dims`.
Tensor flip(const Tensor& x, Shape dims,
            std::source_location loc = std::source_location::current());
// Rotates by shifts[i] along dims[i] (elements leaving one end come back at the other); without
// dims, rolls the flattened tensor by the single shift and restores the shape.
Tensor roll(const Tensor& x, Shape shifts, Shape dims = {},
            std::source_location loc = std::source_location::current());
// Tiles x sizes[i] times along dim i; x gains leading size-1 dims when sizes has more entries.
Tensor repeat(const Tensor& x, Shape sizes,
              std::source_location loc = std::source_location::current());

}  // namespace kiln
