// Advanced indexing (torch's aten::index and index_put): the attribute structs and the geometry
// that the shape rules and the CPU and CUDA kernels share.
//
// Note [Advanced index schema]
// torch takes a list of optional index tensors, one per leading dim of self, absent entries
// being full slices. The op table has no optional tensor inputs, so `index` is variadic:
// (self, i_0, ..., i_{n-1}) with IndexAttrs::dims[k] the dim of self that i_k indexes (strictly
// increasing); `index_put` and `index_put_` are (self, values, i_0, ...). Bool masks never reach
// the ops: the API expands a mask over m dims into the m columns of mask.nonzero()
// (runtime/api/advanced_index_ops.cpp), as torch does, so every index input is int64.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

struct IndexAttrs {
  Shape dims;  // the dim of self that each index input indexes, increasing
  bool operator==(const IndexAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dims", s.dims);
  }
};

struct IndexPutAttrs {
  Shape dims;
  // false: values overwrite (of duplicate indices, the last in row-major order of the
  // broadcast indices wins on the CPU; torch leaves the order unspecified). true: values add.
  bool accumulate = false;
  bool operator==(const IndexPutAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dims", s.dims);
    v("accumulate", s.accumulate);
  }
};

// Where the indexed dims land (torch's rule): the index tensors broadcast to one shape B. When
// the indexed dims are adjacent, B replaces them in place; otherwise B comes first, followed by
// the dims of self that are not indexed, in order.
// Over integer sizes (Shape) or symbolic ones (SymShape): the shape rules are written once over
// both (Note [Symbolic sizes]).
template <class Sizes>
struct BasicIndexGeometry {
  Sizes index_shape;  // B
  Sizes result;
  // Per result dim: the dim of self it walks, or -1 for a dim of B.
  Shape self_dim;
};
using IndexGeometry = BasicIndexGeometry<Shape>;

// Checks the dims (increasing, within self), the index dtypes (int64) and that the index shapes
// broadcast, with torch's messages, naming `op`. Over symbols, index shapes that broadcast only
// for some values of the symbols throw.
IndexGeometry index_geometry(std::string_view op, ShapeRef self, std::span<const ShapeRef> indices,
                             std::span<const DType> index_dtypes, ShapeRef dims);
BasicIndexGeometry<SymShape> index_geometry(std::string_view op, std::span<const SymInt> self,
                                            std::span<const std::span<const SymInt>> indices,
                                            std::span<const DType> index_dtypes, ShapeRef dims);

// Per result dim, the stride to step `self_strides` (0 for dims of B) and the row-major stride
// of B (0 for dims of self): an element at result coordinates c is at
// sum_j c_j * self_step[j] + offsets[sum_j c_j * b_step[j]].
struct IndexSteps {
  Shape self_step;
  Shape b_step;
};
IndexSteps index_steps(const IndexGeometry& g, ShapeRef self_strides);

// For each position b of B (row-major), the offset into a tensor with `strides` (self's sizes)
// of the element the index tensors pick, sum_k i_k[b] * strides[dims[k]], with negative indices
// wrapped; an index outside its dim throws "index 5 is out of bounds for dimension 0 with size
// 3" naming `op`. Reads the index tensors on the host (CPU tensors).
std::vector<int64_t> index_offsets(std::string_view op, const IndexGeometry& g, ShapeRef sizes,
                                   ShapeRef strides, std::span<const Tensor> indices,
                                   ShapeRef dims);

}  // namespace kiln
