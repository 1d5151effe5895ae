// Reductions over dims (an empty dims list means every dim).
#pragma once

#include <optional>
#include <source_location>
#include <tuple>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- reductions (empty dims: all dims) ----
Tensor sum(const Tensor& x, Shape dims = {}, bool keepdim = false,
           std::source_location loc = std::source_location::current());
Tensor mean(const Tensor& x, Shape dims = {}, bool keepdim = false,
            std::source_location loc = std::source_location::current());
Tensor prod(const Tensor& x, Shape dims = {}, bool keepdim = false,
            std::source_location loc = std::source_location::current());
Tensor amax(const Tensor& x, Shape dims = {}, bool keepdim = false,
            std::source_location loc = std::source_location::current());
Tensor amin(const Tensor& x, Shape dims = {}, bool keepdim = false,
            std::source_location loc = std::source_location::current());
// log(sum(exp(x))) computed as max + log(sum(exp(x - max))); integer inputs give float32.
Tensor logsumexp(const Tensor& x, Shape dims = {}, bool keepdim = false,
                 std::source_location loc = std::source_location::current());
// sum((x - mean)^2) / max(0, n - correction); floating inputs only.
Tensor var(const Tensor& x, Shape dims = {}, double correction = 1, bool keepdim = false,
           std::source_location loc = std::source_location::current());
// sqrt(var(x, dims, correction, keepdim)).
Tensor std(const Tensor& x, Shape dims = {}, double correction = 1, bool keepdim = false,
           std::source_location loc = std::source_location::current());
// Whether any / every element over `dims` is nonzero (NaN counts as nonzero); any dtype, Bool
// result. Over no elements any is false and all is true.
Tensor any(const Tensor& x, Shape dims = {}, bool keepdim = false,
           std::source_location loc = std::source_location::current());
Tensor all(const Tensor& x, Shape dims = {}, bool keepdim = false,
           std::source_location loc = std::source_location::current());

// The largest / smallest element as a 0-dim tensor (NaN if any element is NaN).
Tensor max(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor min(const Tensor& x, std::source_location loc = std::source_location::current());
// Over one dim: (values, int64 indices of the first extreme element), as torch.max(x, dim).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false,
                               std::source_location loc = std::source_location::current());
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false,
                               std::source_location loc = std::source_location::current());
// Index of the first extreme element over `dim`, or into the flattened input without a dim.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              std::source_location loc = std::source_location::current());
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              std::source_location loc = std::source_location::current());

}  // namespace kiln
