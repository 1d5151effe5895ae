#include "kiln/runtime/kernels/advanced_index.h"

#include <fmt/ranges.h>

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/index_loops.h"

namespace kiln {

namespace {

template <class Size>
BasicIndexGeometry<std::vector<Size>> index_geometry_of(
    std::string_view op, std::span<const Size> self, std::span<const std::span<const Size>> indices,
    std::span<const DType> index_dtypes, ShapeRef dims) {
  using Sizes = std::vector<Size>;
  auto nd = static_cast<int64_t>(self.size());
  KILN_CHECK(indices.size() == dims.size(), "{}: {} index tensors for {} indexed dims", op,
             indices.size(), dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    KILN_CHECK(dims[k] < nd, "{}: too many indices for tensor of dimension {} (got {})", op, nd,
               dims[k] + 1);
    KILN_CHECK(dims[k] >= 0 && (k == 0 || dims[k] > dims[k - 1]),
               "{}: the indexed dims {} must be increasing and non-negative", op,
               shape_str(Shape(dims.begin(), dims.end())));
    KILN_CHECK(index_dtypes[k] == kInt64,
               "{}: tensors used as indices must be long, int or bool tensors (index {} has "
               "dtype {} and shape {})",
               op, k, index_dtypes[k], shape_str(indices[k]));
  }
  BasicIndexGeometry<Sizes> g;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (k == 0) {
      g.index_shape = Sizes(indices[0].begin(), indices[0].end());
      continue;
    }
    try {
      g.index_shape = broadcast_shapes(op, g.index_shape, indices[k]);
    } catch (const Error&) {
      std::vector<std::string> shapes;
      for (std::span<const Size> s : indices)
        shapes.push_back(shape_str(s));
      KILN_ERROR(
          "{}: shape mismatch: indexing tensors could not be broadcast together with "
          "shapes {}",
          op, fmt::join(shapes, ", "));
    }
  }
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k)
    adjacent = adjacent && dims[k] == dims[k - 1] + 1;
  auto b_dims = [&] {
    for (size_t j = 0; j < g.index_shape.size(); ++j) {
      g.result.push_back(g.index_shape[j]);
      g.self_dim.push_back(-1);
    }
  };
  auto indexed = [&](int64_t d) {
    for (int64_t x : dims)
      if (x == d) return true;
    return false;
  };
  // Non-adjacent (or no) index tensors: B first; adjacent: B where the indexed dims were.
  int64_t b_at = dims.empty() ? 0 : (adjacent ? dims[0] : 0);
  for (int64_t d = 0; d <= nd; ++d) {
    if (d == b_at && !dims.empty()) b_dims();
    if (d == nd || indexed(d)) continue;
    g.result.push_back(self[static_cast<size_t>(d)]);
    g.self_dim.push_back(d);
  }
  return g;
}

}  // namespace

IndexGeometry index_geometry(std::string_view op, ShapeRef self, std::span<const ShapeRef> indices,
                             std::span<const DType> index_dtypes, ShapeRef dims) {
  std::vector<std::span<const int64_t>> spans(indices.begin(), indices.end());
  return index_geometry_of<int64_t>(op, self, spans, index_dtypes, dims);
}

BasicIndexGeometry<SymShape> index_geometry(std::string_view op, std::span<const SymInt> self,
                                            std::span<const std::span<const SymInt>> indices,
                                            std::span<const DType> index_dtypes, ShapeRef dims) {
  return index_geometry_of<SymInt>(op, self, indices, index_dtypes, dims);
}

IndexSteps index_steps(const IndexGeometry& g, ShapeRef self_strides) {
  IndexSteps s;
  Shape b_strides = contiguous_strides(g.index_shape);
  size_t b = 0;
  for (int64_t d : g.self_dim) {
    s.self_step.push_back(d < 0 ? 0 : self_strides[static_cast<size_t>(d)]);
    s.b_step.push_back(d < 0 ? b_strides[b++] : 0);
  }
  return s;
}

std::vector<int64_t> index_offsets(std::string_view op, const IndexGeometry& g, ShapeRef sizes,
                                   ShapeRef strides, std::span<const Tensor> indices,
                                   ShapeRef dims) {
  int64_t nb = shape_numel(g.index_shape);
  std::vector<int64_t> out(static_cast<size_t>(nb), 0);
  size_t rank = g.index_shape.size();
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& index = indices[k];
    Shape along = index_loops::broadcast_strides(index.sizes(), index.strides(), rank);
    auto d = static_cast<size_t>(dims[k]);
    int64_t size = sizes[d], stride = strides[d];
    const int64_t* p = index.data_ptr<int64_t>();
    index_loops::for_each_index(g.index_shape, 0, nb, [&](int64_t b, const Shape& idx) {
      int64_t v = p[index_loops::offset_of(idx, along)];
      KILN_CHECK(v >= -size && v < size,
                 "{}: index {} is out of bounds for dimension {} with size {}", op, v, d, size);
      out[static_cast<size_t>(b)] += (v < 0 ? v + size : v) * stride;
    });
  }
  return out;
}

}  // namespace kiln
