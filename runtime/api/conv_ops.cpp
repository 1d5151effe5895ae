#include "kiln/runtime/api/conv_ops.h"

#include <array>
#include <vector>

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/api/linalg_ops.h"
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

// Per spatial dim (H then W): kernel, stride, dilation, padding before and after.
struct Dim {
  int64_t k, s, d, before, after;
};

int64_t at(const char* op, const char* what, const Shape& v, size_t i) {
  KILN_CHECK(v.size() == 1 || v.size() == 2, "{}: expected {} to be one int or two, got {}", op,
             what, shape_str(v));
  return v.size() == 1 ? v[0] : v[i];
}

std::array<Dim, 2> conv_dims(const char* op, const Tensor& weight, const Shape& stride,
                             const ConvPadding& padding, const Shape& dilation) {
  std::array<Dim, 2> dims{};
  KILN_CHECK(padding.mode.empty() || padding.mode == "same" || padding.mode == "valid",
             "{}: Invalid padding string '{}'; expected 'same' or 'valid'", op, padding.mode);
  for (size_t i = 0; i < 2; ++i) {
    Dim& d = dims[i];
    d.k = weight.size(static_cast<int64_t>(2 + i));
    d.s = at(op, "stride", stride, i);
    d.d = at(op, "dilation", dilation, i);
    KILN_CHECK(d.s > 0 && d.d > 0, "{}: stride and dilation must be positive, got {} and {}", op,
               shape_str(stride), shape_str(dilation));
    if (padding.mode == "same") {
      KILN_CHECK(d.s == 1, "{}: padding='same' is not supported for strided convolutions", op);
      int64_t total = d.d * (d.k - 1);
      d.before = total / 2;
      d.after = total - d.before;
    } else if (padding.mode == "valid") {
      d.before = d.after = 0;
    } else {
      d.before = d.after = at(op, "padding", padding.values, i);
      KILN_CHECK(d.before >= 0, "{}: negative padding is not supported, got {}", op,
                 shape_str(padding.values));
    }
  }
  return dims;
}

// The slice of `x` (dims 2 and 3 spatial) that kernel offset (i, j) reads for every output.
Tensor window(const Tensor& x, const std::array<Dim, 2>& dims, int64_t i, int64_t j, int64_t oh,
              int64_t ow) {
  int64_t h0 = i * dims[0].d, w0 = j * dims[1].d;
  return x.slice(2, h0, h0 + (oh - 1) * dims[0].s + 1, dims[0].s)
      .slice(3, w0, w0 + (ow - 1) * dims[1].s + 1, dims[1].s);
}

Tensor with_bias(Tensor out, const Tensor& bias, int64_t channels) {
  if (!bias.defined()) return out;
  KILN_CHECK(bias.dim() == 1 && bias.size(0) == channels,
             "conv: expected bias of shape [{}], got {}", channels, shape_str(bias.sizes()));
  return out + bias.reshape({1, channels, 1, 1});
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
              ConvPadding padding, Shape dilation, int64_t groups, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(input.dim() == 3 || input.dim() == 4,
             "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
             "size: {}",
             shape_str(input.sizes()));
  KILN_CHECK(weight.dim() == 4, "conv2d: expected a 4-D weight [out, in / groups, kH, kW], got {}",
             shape_str(weight.sizes()));
  Tensor x = input.dim() == 4 ? input : input.unsqueeze(0);
  int64_t n = x.size(0), c = x.size(1), oc = weight.size(0);
  KILN_CHECK(groups > 0 && c % groups == 0 && oc % groups == 0 && weight.size(1) * groups == c,
             "conv2d: Given groups={}, weight of size {}, expected input{} to have {} channels, "
             "but got {} channels instead",
             groups, shape_str(weight.sizes()), shape_str(input.sizes()), weight.size(1) * groups,
             c);
  KILN_CHECK(input.dtype() == weight.dtype(),
             "conv2d: Input type ({}) and weight type ({}) should be the same", input.dtype(),
             weight.dtype());
  std::array<Dim, 2> dims = conv_dims("conv2d", weight, stride, padding, dilation);
  int64_t padded_h = x.size(2) + dims[0].before + dims[0].after;
  int64_t padded_w = x.size(3) + dims[1].before + dims[1].after;
  int64_t oh = (padded_h - dims[0].d * (dims[0].k - 1) - 1) / dims[0].s + 1;
  int64_t ow = (padded_w - dims[1].d * (dims[1].k - 1) - 1) / dims[1].s + 1;
  KILN_CHECK(
      padded_h >= dims[0].d * (dims[0].k - 1) + 1 && padded_w >= dims[1].d * (dims[1].k - 1) + 1,
      "conv2d: Calculated padded input size per channel: ({} x {}). Kernel size: ({} x "
      "{}). Kernel size can't be greater than actual input size",
      padded_h, padded_w, dims[0].d * (dims[0].k - 1) + 1, dims[1].d * (dims[1].k - 1) + 1);
  if (dims[0].before + dims[0].after + dims[1].before + dims[1].after > 0)
    x = pad(x, {dims[1].before, dims[1].after, dims[0].before, dims[0].after});
  int64_t kk = dims[0].k * dims[1].k;
  Tensor cols;
  if (kk == 1 && dims[0].s == 1 && dims[1].s == 1) {
    cols = x.reshape({n, groups, c / groups, oh * ow});  // a 1x1 convolution reads x itself
  } else {
    std::vector<Tensor> slices;
    slices.reserve(static_cast<size_t>(kk));
    for (int64_t i = 0; i < dims[0].k; ++i)
      for (int64_t j = 0; j < dims[1].k; ++j)
        slices.push_back(window(x, dims, i, j, oh, ow));
    cols = stack(slices, 2).reshape({n, groups, c / groups * kk, oh * ow});
  }
  Tensor w = weight.reshape({groups, oc / groups, c / groups * kk});
  Tensor out = matmul(w, cols).reshape({n, oc, oh, ow});
  out = with_bias(out, bias, oc);
  return input.dim() == 4 ? out : out.squeeze(0);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
              ConvPadding padding, Shape dilation, int64_t groups, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(input.dim() == 2 || input.dim() == 3,
             "conv1d: Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of "
             "size: {}",
             shape_str(input.sizes()));
  KILN_CHECK(weight.dim() == 3, "conv1d: expected a 3-D weight [out, in / groups, k], got {}",
             shape_str(weight.sizes()));
  auto one = [](const char* op, const char* what, const Shape& v) {
    KILN_CHECK(v.size() == 1, "{}: expected {} to be one int, got {}", op, what, shape_str(v));
    return Shape{1, v[0]};
  };
  ConvPadding pad2 = padding;
  if (pad2.mode.empty()) pad2.values = {0, one("conv1d", "padding", padding.values)[1]};
  Tensor out =
      conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, one("conv1d", "stride", stride), pad2,
             one("conv1d", "dilation", dilation), groups);
  return out.squeeze(-2);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Shape stride,
                        Shape padding, Shape output_padding, int64_t groups, Shape dilation,
                        std::source_location loc) {
  CallSiteScope site(loc);
  const char* op = "conv_transpose2d";
  KILN_CHECK(input.dim() == 3 || input.dim() == 4,
             "conv_transpose2d: Expected 3D (unbatched) or 4D (batched) input, but got input of "
             "size: {}",
             shape_str(input.sizes()));
  KILN_CHECK(weight.dim() == 4,
             "conv_transpose2d: expected a 4-D weight [in, out / groups, kH, kW], got {}",
             shape_str(weight.sizes()));
  Tensor x = input.dim() == 4 ? input : input.unsqueeze(0);
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  KILN_CHECK(groups > 0 && c % groups == 0 && weight.size(0) == c,
             "conv_transpose2d: Given transposed=1, weight of size {}, expected input{} to have "
             "{} channels, but got {} channels instead",
             shape_str(weight.sizes()), shape_str(input.sizes()), weight.size(0), c);
  KILN_CHECK(input.dtype() == weight.dtype(),
             "conv_transpose2d: Input type ({}) and weight type ({}) should be the same",
             input.dtype(), weight.dtype());
  int64_t ocg = weight.size(1), oc = ocg * groups;
  std::array<Dim, 2> dims = conv_dims(op, weight, stride, ConvPadding(padding), dilation);
  int64_t op_h = at(op, "output_padding", output_padding, 0);
  int64_t op_w = at(op, "output_padding", output_padding, 1);
  KILN_CHECK(op_h >= 0 && op_w >= 0 && (op_h < dims[0].s || op_h < dims[0].d) &&
                 (op_w < dims[1].s || op_w < dims[1].d),
             "conv_transpose2d: output padding must be smaller than either stride or dilation, "
             "but got output_padding={}, stride={}, dilation={}",
             shape_str(output_padding), shape_str(stride), shape_str(dilation));
  // The padded output, before padding is cropped off.
  int64_t full_h = (h - 1) * dims[0].s + dims[0].d * (dims[0].k - 1) + 1 + op_h;
  int64_t full_w = (w - 1) * dims[1].s + dims[1].d * (dims[1].k - 1) + 1 + op_w;
  int64_t out_h = full_h - dims[0].before - dims[0].after;
  int64_t out_w = full_w - dims[1].before - dims[1].after;
  KILN_CHECK(out_h > 0 && out_w > 0,
             "conv_transpose2d: the output size [{}, {}] is too small (input {}, weight {})", out_h,
             out_w, shape_str(input.sizes()), shape_str(weight.sizes()));
  int64_t kk = dims[0].k * dims[1].k;
  // Every offset's contribution: [N, G, OC/G * kk, H*W].
  Tensor wt = weight.reshape({groups, c / groups, ocg * kk}).transpose(1, 2);
  Tensor cols = matmul(wt, x.reshape({n, groups, c / groups, h * w})).reshape({n, oc, kk, h, w});
  Tensor sum;
  const OpDef& slice_backward = KILN_OP("slice_backward");
  for (int64_t i = 0; i < dims[0].k; ++i) {
    for (int64_t j = 0; j < dims[1].k; ++j) {
      Tensor part = cols.select(2, i * dims[1].k + j);  // [N, OC, H, W]
      int64_t h0 = i * dims[0].d, w0 = j * dims[1].d;
      part = call_op1(
          slice_backward, {part},
          SliceBackwardAttrs{{n, oc, h, full_w}, 3, w0, w0 + (w - 1) * dims[1].s + 1, dims[1].s});
      part = call_op1(slice_backward, {part},
                      SliceBackwardAttrs{
                          {n, oc, full_h, full_w}, 2, h0, h0 + (h - 1) * dims[0].s + 1, dims[0].s});
      sum = sum.defined() ? sum + part : part;
    }
  }
  Tensor out = sum.slice(2, dims[0].before, dims[0].before + out_h)
                   .slice(3, dims[1].before, dims[1].before + out_w);
  out = with_bias(out, bias, oc);
  return input.dim() == 4 ? out : out.squeeze(0);
}

}  // namespace kiln
