// Ordering and scans along one dim: sort, argsort, topk, cumsum, cumprod (torch's names and
// defaults). Sorting is always stable, as torch's stable=true; NaN orders above every number.
#pragma once

#include <optional>
#include <source_location>
#include <tuple>

#include "kiln/runtime/tensor.h"

namespace kiln {

// (values, int64 indices) of x sorted along dim; ties keep their input order. `stable` is
// accepted for torch's signature: every sort is stable.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = false,
                                std::source_location loc = std::source_location::current());
// The indices of sort(x, dim, descending).
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false,
               std::source_location loc = std::source_location::current());
// (values, int64 indices) of the k largest (smallest with largest = false) along dim, in sorted
// order, ties in input order. Throws when k exceeds the dim's size.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true,
                                std::source_location loc = std::source_location::current());
// Running sum / product along dim. Integer and bool inputs give int64; with `dtype`, x is
// converted to it first (torch's dtype argument).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt,
              std::source_location loc = std::source_location::current());
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt,
               std::source_location loc = std::source_location::current());

}  // namespace kiln
