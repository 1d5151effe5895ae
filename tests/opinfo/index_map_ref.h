// Reference building blocks for the composites that move elements (tril, flip, roll, repeat,
// pad, one_hot): the output is described element by element from its multi-index.
#pragma once

#include <fmt/format.h>

#include <optional>

#include "opinfo/op_info.h"

namespace kiln_test {

// A tensor of shape `sizes` whose element at idx is value(idx).
inline RefTensor ref_from_index(const kiln::Shape& sizes, kiln::DType dtype,
                                const std::function<double(const Index&)>& value) {
  RefTensor out{sizes, {}, dtype};
  int64_t n = ref_numel(sizes);
  for (int64_t i = 0; i < n; ++i)
    out.data.push_back(value(unravel(i, sizes)));
  return out;
}

// out[idx] = x[source(idx)], or `fill` where source gives no index.
inline RefTensor ref_gather_from(const RefTensor& x, const kiln::Shape& sizes,
                                 const std::function<std::optional<Index>(const Index&)>& source,
                                 double fill = 0) {
  return ref_from_index(sizes, x.dtype, [&](const Index& idx) {
    std::optional<Index> src = source(idx);
    return src ? x.at(*src) : fill;
  });
}

// Positive modulo, for negative dims and shifts.
inline int64_t ref_wrap(int64_t v, int64_t n) {
  return ((v % n) + n) % n;
}

inline std::string list_name(const kiln::Shape& v) {
  return fmt::format("{}", fmt::join(v, "_"));
}

}  // namespace kiln_test
