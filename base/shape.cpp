#include "kiln/base/shape.h"

#include "kiln/base/sym_int.h"

#include <algorithm>

#include "kiln/base/error.h"

namespace kiln {

namespace {
// The product of the sizes, or false when it overflows int64 (and no size is 0).
bool checked_product(ShapeRef sizes, int64_t& out) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) {
      out = 0;
      return true;
    }
    overflow = overflow || __builtin_mul_overflow(n, s, &n);
  }
  out = n;
  return !overflow;
}
}  // namespace

int64_t shape_numel(ShapeRef sizes) {
  int64_t n = 0;
  KILN_CHECK(checked_product(sizes, n),
             "the number of elements of shape {} overflows int64 (the product of the sizes is "
             "past 2^63 - 1)",
             shape_str(sizes));
  return n;
}

int64_t checked_numel(std::string_view op, ShapeRef sizes) {
  for (int64_t s : sizes)
    KILN_CHECK(s >= 0, "{}: negative dimension {} in size {}", op, s, shape_str(sizes));
  int64_t n = 0;
  KILN_CHECK(checked_product(sizes, n),
             "{}: a tensor of shape {} has too many elements (the product of the sizes overflows "
             "int64)",
             op, shape_str(sizes));
  return n;
}

size_t checked_nbytes(std::string_view op, ShapeRef sizes, size_t element_size) {
  int64_t n = checked_numel(op, sizes), bytes = 0;
  KILN_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(element_size), &bytes),
             "{}: a tensor of shape {} with {}-byte elements needs more bytes than int64 can count",
             op, shape_str(sizes), element_size);
  return static_cast<size_t>(bytes);
}

Shape contiguous_strides(ShapeRef sizes) {
  Shape strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // Only an empty tensor gets here with sizes whose product overflows (shape_numel throws
    // for the others); its strides are still computed as if each size were at least 1.
    if (i > 0)
      KILN_CHECK(!__builtin_mul_overflow(running, std::max<int64_t>(sizes[i], 1), &running),
                 "the strides of shape {} overflow int64", shape_str(sizes));
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

namespace {

std::string size_text(int64_t v) {
  return fmt::format("{}", v);
}
std::string size_text(const SymInt& v) {
  return v.str();
}
std::string shape_text(std::span<const int64_t> s) {
  return shape_str(s);
}
std::string shape_text(std::span<const SymInt> s) {
  return sym_shape_str(s);
}

// One rule for integer and symbolic sizes (Note [Symbolic sizes]): a symbolic size equals only
// the same expression, and is never 1.
template <class I>
std::vector<I> broadcast(std::string_view op, std::span<const I> a, std::span<const I> b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<I> out(n);
  for (size_t i = 0; i < n; ++i) {
    I da = i < n - a.size() ? I(1) : a[i - (n - a.size())];
    I db = i < n - b.size() ? I(1) : b[i - (n - b.size())];
    KILN_CHECK(da == db || da == I(1) || db == I(1),
               "{}: shapes {} and {} cannot be broadcast together (size {} vs {} at dim {})", op,
               shape_text(a), shape_text(b), size_text(da), size_text(db), i);
    out[i] = da == I(1) ? db : da;
  }
  return out;
}

}  // namespace

Shape broadcast_shapes(std::string_view op, ShapeRef a, ShapeRef b) {
  return broadcast<int64_t>(op, a, b);
}

SymShape broadcast_shapes(std::string_view op, std::span<const SymInt> a,
                          std::span<const SymInt> b) {
  return broadcast<SymInt>(op, a, b);
}

}  // namespace kiln
