#include "kiln/runtime/api/conv_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/conv_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

// The checks the public functions make before the op's: the input's rank (torch's wording,
// naming the function), the weight's, and the padding string.
void check_ranks(const char* fn, const Tensor& input, const Tensor& weight, int64_t spatial,
                 const char* weight_form) {
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2,
             "{}: Expected {}D (unbatched) or {}D (batched) input to {}, but got input of size: {}",
             fn, spatial + 1, spatial + 2, fn, shape_str(input.sizes()));
  KILN_CHECK(weight.dim() == spatial + 2, "{}: expected a {}-D weight {}, got {}", fn, spatial + 2,
             weight_form, shape_str(weight.sizes()));
}

Shape per_dim(const char* fn, const char* what, const Shape& v, int64_t spatial) {
  KILN_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == spatial,
             "{}: expected {} to be one int or {}, got {}", fn, what, spatial, shape_str(v));
  return v.size() == 1 ? Shape(static_cast<size_t>(spatial), v[0]) : v;
}

// Runs the op on a batched view of `input`; `attrs.padding` holds numbers.
Tensor run(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvAttrs& attrs,
           int64_t spatial) {
  bool batched = input.dim() == spatial + 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  std::vector<Tensor> in{x, weight};
  if (bias.defined()) in.push_back(bias);
  Tensor out = std::move(call_op(KILN_OP("convolution"), in, &attrs)[0]);
  return batched ? out : out.squeeze(0);
}

// conv1d and conv2d: padding as numbers, 'valid' (none) or 'same' (stride 1; a total that is
// odd puts the extra element after, by padding the input first, as torch).
Tensor forward_conv(const char* fn, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const Shape& stride, const ConvPadding& padding, const Shape& dilation,
                    int64_t groups, int64_t spatial) {
  ConvAttrs a;
  a.stride = per_dim(fn, "stride", stride, spatial);
  a.dilation = per_dim(fn, "dilation", dilation, spatial);
  a.groups = groups;
  Tensor x = input;
  if (padding.mode.empty()) {
    a.padding = per_dim(fn, "padding", padding.values, spatial);
  } else if (padding.mode == "valid") {
    a.padding = Shape(static_cast<size_t>(spatial), 0);
  } else {
    KILN_CHECK(padding.mode == "same",
               "{}: Invalid padding string '{}'; expected 'same' or 'valid'", fn, padding.mode);
    Shape extra;  // F.pad order: the last dim first
    bool any_extra = false;
    for (int64_t d = spatial - 1; d >= 0; --d) {
      auto i = static_cast<size_t>(d);
      KILN_CHECK(a.stride[i] == 1, "{}: padding='same' is not supported for strided convolutions",
                 fn);
      int64_t total = a.dilation[i] * (weight.size(2 + d) - 1);
      extra.push_back(0);
      extra.push_back(total % 2);
      any_extra = any_extra || total % 2 != 0;
    }
    a.padding = Shape(static_cast<size_t>(spatial), 0);
    for (int64_t d = 0; d < spatial; ++d)
      a.padding[static_cast<size_t>(d)] =
          a.dilation[static_cast<size_t>(d)] * (weight.size(2 + d) - 1) / 2;
    if (any_extra) x = pad(x, extra);
  }
  return run(x, weight, bias, a, spatial);
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
                   Shape padding, Shape dilation, bool transposed, Shape output_padding,
                   int64_t groups, std::source_location loc) {
  CallSiteScope site(loc);
  ConvAttrs a{std::move(stride), std::move(padding),        std::move(dilation),
              transposed,        std::move(output_padding), groups};
  std::vector<Tensor> in{input, weight};
  if (bias.defined()) in.push_back(bias);
  return std::move(call_op(KILN_OP("convolution"), in, &a)[0]);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
              ConvPadding padding, Shape dilation, int64_t groups, std::source_location loc) {
  CallSiteScope site(loc);
  check_ranks("conv2d", input, weight, 2, "[out, in / groups, kH, kW]");
  return forward_conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
              ConvPadding padding, Shape dilation, int64_t groups, std::source_location loc) {
  CallSiteScope site(loc);
  check_ranks("conv1d", input, weight, 1, "[out, in / groups, k]");
  return forward_conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
                        Shape padding, Shape output_padding, int64_t groups, Shape dilation,
                        std::source_location loc) {
  CallSiteScope site(loc);
  const char* fn = "conv_transpose2d";
  check_ranks(fn, input, weight, 2, "[in, out / groups, kH, kW]");
  ConvAttrs a{per_dim(fn, "stride", stride, 2),
              per_dim(fn, "padding", padding, 2),
              per_dim(fn, "dilation", dilation, 2),
              true,
              per_dim(fn, "output_padding", output_padding, 2),
              groups};
  return run(input, weight, bias, a, 2);
}

}  // namespace kiln
