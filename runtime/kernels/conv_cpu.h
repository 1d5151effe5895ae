// The CPU kernels of convolution and convolution_backward (Note [Convolution on the CPU] in
// conv_cpu.cpp), on the geometry the shape rule checked.
#pragma once

#include "kiln/runtime/kernels/conv_geometry.h"

namespace kiln {

// out = convolution(input, weight) + bias (bias may be undefined).
void conv_forward_cpu(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const Tensor& out);

// Writes each defined gradient: grad_input like input, grad_weight like weight, grad_bias
// [out_channels].
void conv_backward_cpu(const ConvGeometry& g, const Tensor& grad_output, const Tensor& input,
                       const Tensor& weight, const Tensor& grad_input, const Tensor& grad_weight,
                       const Tensor& grad_bias);

}  // namespace kiln
