// Sizes and strides, and the arithmetic on them that every layer shares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

using Shape = std::vector<int64_t>;
using ShapeRef = std::span<const int64_t>;

// The number of elements; throws when the product of the sizes overflows int64 (a size of 0
// anywhere makes it 0 whatever the others are).
int64_t shape_numel(ShapeRef sizes);
// The element count and byte count of a new tensor of these sizes, checked: every size
// non-negative and neither count past int64. Throws naming the op.
int64_t checked_numel(std::string_view op, ShapeRef sizes);
size_t checked_nbytes(std::string_view op, ShapeRef sizes, size_t element_size);
Shape contiguous_strides(ShapeRef sizes);
bool strides_are_contiguous(ShapeRef sizes, ShapeRef strides);
// Wraps a possibly negative dim into [0, ndim), or throws naming the op.
int64_t wrap_dim(std::string_view op, int64_t dim, int64_t ndim);
// torch-style "[2, 3]".
std::string shape_str(ShapeRef sizes);
// The broadcast of two shapes, or throws naming the op and both shapes.
Shape broadcast_shapes(std::string_view op, ShapeRef a, ShapeRef b);

}  // namespace kiln
