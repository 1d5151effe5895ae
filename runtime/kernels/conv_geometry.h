// The geometry of one convolution call, checked once and shared by the shape rule, the CPU
// kernels (conv_cpu.cpp) and the cuDNN kernels (runtime/cuda/cudnn_conv.cpp).
//
// Note [Convolution image and columns]
// Every convolution kernel moves data between two grids: the "image", which the kernel window
// slides over (with padding around it), and the "columns" grid, one position per window
// placement. A convolution reads its input as the image and writes its output on the columns
// grid; a transposed convolution is its adjoint, so its input is on the columns grid and its
// output is the image. With that naming, three per-image products cover every forward and
// backward of both (conv_cpu.cpp): gather (columns = W im2col(image)), scatter (image =
// col2im(W^T columns)) and the weight gradient (dW += columns im2col(image)^T).
#pragma once

#include <span>

#include "kiln/runtime/kernels/conv_attrs.h"
#include "kiln/runtime/op_def.h"

namespace kiln {

struct ConvGeometry {
  int64_t n = 0, groups = 1;
  int64_t in_channels = 0, out_channels = 0;
  int64_t spatial = 2;  // 1 or 2: the input's spatial dims (1-d runs as 2-d with a height of 1)
  bool transposed = false;
  // Per dim, height then width (a 1-d convolution has kernel 1, stride 1, no padding in H).
  int64_t in[2]{1, 1}, out[2]{1, 1};
  int64_t kernel[2]{1, 1}, stride[2]{1, 1}, padding[2]{0, 0}, dilation[2]{1, 1};

  int64_t kernel_size() const { return kernel[0] * kernel[1]; }
  // The image is the input of a convolution and the output of a transposed one (Note
  // [Convolution image and columns]).
  int64_t image_channels() const { return transposed ? out_channels : in_channels; }
  int64_t column_channels() const { return transposed ? in_channels : out_channels; }
  int64_t image(int i) const { return transposed ? out[i] : in[i]; }
  int64_t columns(int i) const { return transposed ? in[i] : out[i]; }
  // A 1x1 window at stride 1 without padding reads the image itself as its columns.
  bool pointwise() const;
  Shape input_sizes() const;
  Shape output_sizes() const;
  Shape weight_sizes() const;
};

// Checks the call (torch's messages where it has them, naming the op and the shapes) and
// returns its geometry. `bias` is null when the call has none.
ConvGeometry conv_geometry(const OpDef& op, ShapeRef input, ShapeRef weight, const ShapeRef* bias,
                           const ConvAttrs& a);

// The geometry of a kernel's call: inputs (input, weight, [bias]) as convolution takes them.
ConvGeometry conv_geometry_of(const OpDef& op, std::span<const Tensor> inputs, const ConvAttrs& a);

// convolution_backward's outputs by name: undefined where output_mask leaves one out.
struct ConvBackwardOutputs {
  Tensor grad_input, grad_weight, grad_bias;
};
ConvBackwardOutputs conv_backward_outputs(const ConvBackwardAttrs& a,
                                          std::span<const Tensor> outputs);

// convolution's rules: one output, of the input's (floating) dtype, which weight and bias share.
std::vector<OutputGeometry> convolution_shape(const OpDef& op, std::span<const MetaRef> in,
                                              const void* attrs);
DType convolution_dtype(const OpDef& op, std::span<const MetaRef> in, const void* attrs, size_t);
// The same over symbols, for symbolic batch and spatial dims (Note [Convolution over symbols]).
std::vector<SymOutputGeometry> convolution_sym_shape(const OpDef& op,
                                                     std::span<const SymMetaRef> in,
                                                     const void* attrs);
std::vector<SymOutputGeometry> convolution_backward_sym_shape(const OpDef& op,
                                                              std::span<const SymMetaRef> in,
                                                              const void* attrs);
// convolution_backward's rules: (grad_output, input, weight) -> the masked-in gradients.
std::vector<OutputGeometry> convolution_backward_shape(const OpDef& op, std::span<const MetaRef> in,
                                                       const void* attrs);

}  // namespace kiln
