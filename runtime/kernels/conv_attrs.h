// Attribute structs of the convolution ops (torch's aten::convolution and
// convolution_backward): one per-spatial-dim value in stride, padding, dilation and
// output_padding, in torch's argument order.
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// convolution(input, weight, [bias]). The input is batched, [N, C, *spatial] with one or two
// spatial dims; the public functions (runtime/api/conv_ops.h) add and remove the batch dim and
// turn padding='same' into numbers. Padding is symmetric per dim, as torch's op: an odd 'same'
// total pads the input explicitly first. transposed: the adjoint of the convolution with
// respect to its input (conv_transpose), whose weight is [C_in, C_out / groups, *kernel] and
// whose output grows by output_padding at the end of each dim.
struct ConvAttrs {
  Shape stride{1};
  Shape padding{0};
  Shape dilation{1};
  bool transposed = false;
  Shape output_padding{0};
  int64_t groups = 1;
  bool operator==(const ConvAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("stride", s.stride);
    v("padding", s.padding);
    v("dilation", s.dilation);
    v("transposed", s.transposed);
    v("output_padding", s.output_padding);
    v("groups", s.groups);
  }
};

// convolution_backward(grad_output, input, weight): the convolution's attributes and torch's
// output_mask, three 0/1 entries for (grad_input, grad_weight, grad_bias). The op returns the
// masked-in gradients only, in that order (torch returns undefined tensors in their place).
struct ConvBackwardAttrs {
  ConvAttrs conv;
  Shape output_mask{1, 1, 1};
  bool operator==(const ConvBackwardAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    ConvAttrs::visit(s.conv, v);
    v("output_mask", s.output_mask);
  }
};

}  // namespace kiln
