#include "kiln/runtime/shape.h"

#include <algorithm>

#include "kiln/runtime/error.h"

namespace kiln {

int64_t shape_numel(ShapeRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

Shape contiguous_strides(ShapeRef sizes) {
  Shape strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

bool strides_are_contiguous(ShapeRef sizes, ShapeRef strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t wrap_dim(std::string_view op, int64_t dim, int64_t ndim) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  KILN_CHECK(dim >= lo && dim <= hi,
             "{}: dimension out of range (expected to be in range of [{}, {}], but got {})", op, lo,
             hi, dim);
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

std::string shape_str(ShapeRef sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

Shape broadcast_shapes(std::string_view op, ShapeRef a, ShapeRef b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1,
               "{}: shapes {} and {} cannot be broadcast together (size {} vs {} at dim {})", op,
               shape_str(a), shape_str(b), da, db, i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace kiln
