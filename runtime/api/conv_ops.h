// Convolutions: torch.nn.functional's conv1d, conv2d and conv_transpose2d, and torch's
// convolution, over the op-table entry `convolution` (runtime/kernels/conv_ops.cpp; its
// backward is the entry convolution_backward). These functions add and remove the batch dim of
// unbatched inputs and turn padding='same' or 'valid' into numbers; the op checks the rest.
#pragma once

#include <source_location>
#include <string>

#include "kiln/runtime/tensor.h"

namespace kiln {

// Padding as torch takes it: numbers per spatial dim, or "valid" (none) or "same" (stride 1;
// an odd total splits with the extra element after, as torch).
struct ConvPadding {
  Shape values{0};
  std::string mode;  // empty: use values
  ConvPadding() = default;
  ConvPadding(Shape v) : values(std::move(v)) {}                // NOLINT: implicit as torch
  ConvPadding(std::initializer_list<int64_t> v) : values(v) {}  // NOLINT
  ConvPadding(const char* m) : mode(m) {}                       // NOLINT
  ConvPadding(std::string m) : mode(std::move(m)) {}            // NOLINT
};

// input [N, C, H, W] or [C, H, W]; weight [OC, C / groups, kH, kW]; bias [OC]. stride, padding
// and dilation: one value for both dims or two.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              Shape stride = {1}, ConvPadding padding = {}, Shape dilation = {1},
              int64_t groups = 1, std::source_location loc = std::source_location::current());

// input [N, C, L] or [C, L]; weight [OC, C / groups, k].
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              Shape stride = {1}, ConvPadding padding = {}, Shape dilation = {1},
              int64_t groups = 1, std::source_location loc = std::source_location::current());

// input [N, C, H, W] or [C, H, W]; weight [C, OC / groups, kH, kW]. The output is
// (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1 along each dim.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        Shape stride = {1}, Shape padding = {0}, Shape output_padding = {0},
                        int64_t groups = 1, Shape dilation = {1},
                        std::source_location loc = std::source_location::current());

}  // namespace kiln
