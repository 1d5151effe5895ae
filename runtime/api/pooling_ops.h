// 2-D pooling (torch.nn.functional's avg_pool2d, adaptive_avg_pool2d, max_pool2d), composites of
// table ops, so autograd, tracing and every backend come with them.
//
// Note [Pooling as products and windows]
// Averages are separable: each output row averages a window of input rows, so with P_h[OH, H]
// holding 1/len at the window's rows (and P_w likewise), avg_pool2d(x) = P_h x P_w^T, two
// batched matrix products through the BLAS; the window lengths (ceil_mode, padding counted or
// not) only change P's entries, and adaptive pooling's uneven windows are just other entries.
// Max pooling is not linear: the input is padded with -inf where needed, each of the kH*kW
// window offsets is a strided slice of the output's shape (with bounds over the symbols where
// the sizes are symbolic), and max over the stacked slices gives the values
// and, from the winning offset, torch's indices (into each H*W plane). The matrices and the
// indices are computed with tensor ops from the sizes (Note [Pooling matrices over symbols]).
#pragma once

#include <optional>
#include <source_location>
#include <tuple>

#include "kiln/runtime/tensor.h"

namespace kiln {

// input [N, C, H, W] or [C, H, W]. stride empty: the kernel size. padding at most half the
// kernel. divisor_override replaces the window size as the divisor.
Tensor avg_pool2d(const Tensor& input, Shape kernel_size, Shape stride = {}, Shape padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt,
                  std::source_location loc = std::source_location::current());

Tensor adaptive_avg_pool2d(const Tensor& input, Shape output_size,
                           std::source_location loc = std::source_location::current());

Tensor max_pool2d(const Tensor& input, Shape kernel_size, Shape stride = {}, Shape padding = {0},
                  Shape dilation = {1}, bool ceil_mode = false,
                  std::source_location loc = std::source_location::current());
// Also the int64 index of each maximum within its input plane (h * W + w), as torch's
// return_indices=True.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(
    const Tensor& input, Shape kernel_size, Shape stride = {}, Shape padding = {0},
    Shape dilation = {1}, bool ceil_mode = false,
    std::source_location loc = std::source_location::current());

}  // namespace kiln
