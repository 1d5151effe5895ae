// Loops the indexing kernels share: row-major multi-indices, strided offsets and raw element
// copies. Header-only so that each kernel's loop body inlines.
#pragma once

#include <cstdint>

#include "kiln/base/shape.h"

namespace kiln::index_loops {

// Calls f(i, idx) for i in [begin, end), with idx the row-major multi-index of i in `sizes`.
template <class F>
void for_each_index(ShapeRef sizes, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  Shape idx(sizes.size());
  int64_t rem = begin;
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = rem % sizes[d];
    rem /= sizes[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(i, idx);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

inline int64_t offset_of(const Shape& idx, ShapeRef strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d)
    off += idx[d] * strides[d];
  return off;
}

// The strides that read a tensor of (sizes, strides) broadcast to a shape of `rank` dims: its
// dims aligned to the trailing ones, 0 where it has size 1 or no dim.
inline Shape broadcast_strides(ShapeRef sizes, ShapeRef strides, size_t rank) {
  Shape s(rank, 0);
  size_t lead = rank - sizes.size();
  for (size_t j = 0; j < sizes.size(); ++j)
    if (sizes[j] != 1) s[lead + j] = strides[j];
  return s;
}

// Runs f.template operator()<U>() with U an unsigned integer type as wide as one element.
template <class F>
void with_element_bytes(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    default:
      return f.template operator()<uint64_t>();
  }
}

}  // namespace kiln::index_loops
