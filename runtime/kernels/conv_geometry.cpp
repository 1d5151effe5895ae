#include "kiln/runtime/kernels/conv_geometry.h"

#include <algorithm>

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/op_rules.h"

namespace kiln {
namespace {

// One value for every spatial dim, or one per dim.
int64_t per_dim(const OpDef& op, const char* what, const Shape& v, int64_t spatial, int64_t d) {
  KILN_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == spatial,
             "{}: expected {} to have 1 or {} values, got {}", op.name, what, spatial,
             shape_str(v));
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(d)];
}

Shape of(ShapeRef s) {
  return Shape(s.begin(), s.end());
}

}  // namespace

bool ConvGeometry::pointwise() const {
  return kernel_size() == 1 && stride[0] == 1 && stride[1] == 1 && padding[0] == 0 &&
         padding[1] == 0;
}

Shape ConvGeometry::input_sizes() const {
  Shape s{n, in_channels, in[0], in[1]};
  if (spatial == 1) s.erase(s.begin() + 2);
  return s;
}

Shape ConvGeometry::output_sizes() const {
  Shape s{n, out_channels, out[0], out[1]};
  if (spatial == 1) s.erase(s.begin() + 2);
  return s;
}

Shape ConvGeometry::weight_sizes() const {
  Shape s{transposed ? in_channels : out_channels,
          transposed ? out_channels / groups : in_channels / groups, kernel[0], kernel[1]};
  if (spatial == 1) s.erase(s.begin() + 2);
  return s;
}

ConvGeometry conv_geometry(const OpDef& op, ShapeRef input, ShapeRef weight, const ShapeRef* bias,
                           const ConvAttrs& a) {
  KILN_CHECK(input.size() == 3 || input.size() == 4,
             "{}: expected a batched input [N, C, L] or [N, C, H, W], got input of size {}",
             op.name, shape_str(input));
  KILN_CHECK(weight.size() == input.size(),
             "{}: Expected {}-dimensional input for {}-dimensional weight {}, but got "
             "{}-dimensional input of size {} instead",
             op.name, weight.size(), weight.size(), shape_str(weight), input.size(),
             shape_str(input));
  KILN_CHECK(a.groups > 0, "{}: non-positive groups is not supported (groups={})", op.name,
             a.groups);
  ConvGeometry g;
  g.spatial = static_cast<int64_t>(input.size()) - 2;
  g.n = input[0];
  g.groups = a.groups;
  g.transposed = a.transposed;
  g.in_channels = input[1];
  KILN_CHECK(weight[0] % a.groups == 0,
             "{}: Given groups={}, expected weight to be divisible by {} at dimension 0, but got "
             "weight of size {} instead",
             op.name, a.groups, a.groups, shape_str(weight));
  if (a.transposed) {
    KILN_CHECK(input[1] == weight[0],
               "{}: Given transposed=1, weight of size {}, expected input{} to have {} channels, "
               "but got {} channels instead",
               op.name, shape_str(weight), shape_str(input), weight[0], input[1]);
    g.out_channels = weight[1] * a.groups;
  } else {
    KILN_CHECK(input[1] == weight[1] * a.groups,
               "{}: Given groups={}, weight of size {}, expected input{} to have {} channels, but "
               "got {} channels instead",
               op.name, a.groups, shape_str(weight), shape_str(input), weight[1] * a.groups,
               input[1]);
    g.out_channels = weight[0];
  }
  if (bias != nullptr) {
    KILN_CHECK(bias->size() == 1 && (*bias)[0] == g.out_channels,
               "{}: Given weight of size {}, expected bias to be 1-dimensional with {} elements, "
               "but got bias of size {} instead",
               op.name, shape_str(weight), g.out_channels, shape_str(*bias));
  }
  for (int64_t d = 0; d < g.spatial; ++d) {
    int i = static_cast<int>(2 - g.spatial + d);
    size_t at = static_cast<size_t>(2 + d);
    int64_t s = per_dim(op, "stride", a.stride, g.spatial, d);
    int64_t p = per_dim(op, "padding", a.padding, g.spatial, d);
    int64_t dil = per_dim(op, "dilation", a.dilation, g.spatial, d);
    int64_t op_pad = per_dim(op, "output_padding", a.output_padding, g.spatial, d);
    KILN_CHECK(s > 0, "{}: non-positive stride is not supported, got stride={}", op.name,
               shape_str(a.stride));
    KILN_CHECK(dil > 0, "{}: dilation should be greater than zero, got dilation={}", op.name,
               shape_str(a.dilation));
    KILN_CHECK(p >= 0, "{}: negative padding is not supported, got padding={}", op.name,
               shape_str(a.padding));
    KILN_CHECK(op_pad == 0 || (a.transposed && op_pad > 0 && (op_pad < s || op_pad < dil)),
               "{}: output padding must be smaller than either stride or dilation, but got "
               "output_padding={}, stride={}, dilation={} (transposed={})",
               op.name, shape_str(a.output_padding), shape_str(a.stride), shape_str(a.dilation),
               a.transposed);
    g.in[i] = input[at];
    g.kernel[i] = weight[at];
    g.stride[i] = s;
    g.padding[i] = p;
    g.dilation[i] = dil;
    int64_t span = dil * (g.kernel[i] - 1) + 1;
    if (a.transposed) {
      g.out[i] = (g.in[i] - 1) * s - 2 * p + span + op_pad;
    } else {
      KILN_CHECK(g.in[i] + 2 * p >= span,
                 "{}: Calculated padded input size per channel: {}. Kernel size: {}. Kernel size "
                 "can't be greater than actual input size (input {}, weight {})",
                 op.name, g.in[i] + 2 * p, span, shape_str(input), shape_str(weight));
      g.out[i] = (g.in[i] + 2 * p - span) / s + 1;
    }
  }
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(g.out[i] > 0,
               "{}: the output size {} is too small (input {}, weight {}, transposed={})", op.name,
               shape_str(g.output_sizes()), shape_str(input), shape_str(weight), a.transposed);
  }
  return g;
}

std::vector<OutputGeometry> convolution_shape(const OpDef& op, std::span<const MetaRef> in,
                                              const void* attrs) {
  KILN_CHECK(in.size() == 2 || in.size() == 3,
             "{}: expected (input, weight) or (input, weight, bias), got {} tensors", op.name,
             in.size());
  const ShapeRef* bias = in.size() == 3 ? &in[2].sizes : nullptr;
  ConvGeometry g = conv_geometry(op, in[0].sizes, in[1].sizes, bias, attrs_as<ConvAttrs>(attrs));
  return {OutputGeometry{g.output_sizes()}};
}

namespace {

void check_backward_call(const OpDef& op, size_t inputs, const ConvBackwardAttrs& a) {
  KILN_CHECK(inputs == 3, "{}: expected (grad_output, input, weight), got {} tensors", op.name,
             inputs);
  KILN_CHECK(a.output_mask.size() == 3, "{}: expected output_mask of 3 values, got {}", op.name,
             shape_str(a.output_mask));
}

// Note [Convolution over symbols]: channels stay integers (they must match the weight's), and
// the batch and spatial dims may be symbols. The integer geometry checks the call with a
// stand-in for each symbol: the batch at a symbol's least value, 2 (Note [Symbolic sizes]),
// which no check depends on; a spatial size at the window's span, where the window fits. The
// spatial output sizes are then the same arithmetic over symbols (floordiv for the strided
// windows), and the window must fit for every size the graph serves: a fact when it holds only
// at the traced sizes (Note [Assumed size facts]).
struct SymConvCall {
  ConvGeometry g;   // at the stand-ins
  SymShape output;  // over symbols
};

SymConvCall sym_conv_call(const OpDef& op, std::span<const SymInt> input, ShapeRef weight,
                          const ShapeRef* bias, const ConvAttrs& a) {
  KILN_CHECK(input.size() == 3 || input.size() == 4,
             "{}: expected a batched input [N, C, L] or [N, C, H, W], got input of size {}",
             op.name, sym_shape_str(input));
  KILN_CHECK(weight.size() == input.size(),
             "{}: expected {}-dimensional input for {}-dimensional weight {}, got input of size {}",
             op.name, weight.size(), weight.size(), shape_str(weight), sym_shape_str(input));
  KILN_CHECK(!input[1].is_symbolic(),
             "{}: the channels of the input {} must be an integer (they match the weight's)",
             op.name, sym_shape_str(input));
  auto spatial = static_cast<int64_t>(input.size()) - 2;
  Shape stand_in;
  for (size_t d = 0; d < input.size(); ++d) {
    if (!input[d].is_symbolic()) {
      stand_in.push_back(*input[d].maybe_int());
    } else if (d == 0) {
      stand_in.push_back(2);
    } else {
      int64_t k = static_cast<int64_t>(d) - 2;
      int64_t dil = per_dim(op, "dilation", a.dilation, spatial, k);
      stand_in.push_back(std::max<int64_t>(2, dil * (weight[d] - 1) + 1));
    }
  }
  SymConvCall c{conv_geometry(op, stand_in, weight, bias, a), {}};
  c.output = to_sym_shape(c.g.output_sizes());
  c.output[0] = input[0];
  for (int64_t k = 0; k < spatial; ++k) {
    size_t at = static_cast<size_t>(2 + k);
    if (!input[at].is_symbolic()) continue;
    int i = static_cast<int>(2 - spatial + k);
    int64_t s = c.g.stride[i], p = c.g.padding[i];
    int64_t span = c.g.dilation[i] * (c.g.kernel[i] - 1) + 1;
    const SymInt& x = input[at];
    if (a.transposed) {
      int64_t op_pad = per_dim(op, "output_padding", a.output_padding, spatial, k);
      c.output[at] = (x - 1) * s - 2 * p + span + op_pad;
      KILN_CHECK(rules::at_least(c.output[at], 1),
                 "{}: the output size {} may be too small (input {}, weight {})", op.name,
                 c.output[at], sym_shape_str(input), shape_str(weight));
    } else {
      KILN_CHECK(rules::at_least(x + 2 * p - span, 0),
                 "{}: the kernel size {} may be greater than the padded input size {} (input {}, "
                 "weight {})",
                 op.name, span, x + 2 * p, sym_shape_str(input), shape_str(weight));
      c.output[at] = floordiv(x + 2 * p - span, s) + 1;
    }
  }
  return c;
}

}  // namespace

std::vector<SymOutputGeometry> convolution_sym_shape(const OpDef& op,
                                                     std::span<const SymMetaRef> in,
                                                     const void* attrs) {
  KILN_CHECK(in.size() == 2 || in.size() == 3,
             "{}: expected (input, weight) or (input, weight, bias), got {} tensors", op.name,
             in.size());
  Shape weight = expect_ints(in[1].sizes, op.name), bias;
  if (in.size() == 3) bias = expect_ints(in[2].sizes, op.name);
  ShapeRef bias_ref = bias;
  SymConvCall c = sym_conv_call(op, in[0].sizes, weight, in.size() == 3 ? &bias_ref : nullptr,
                                attrs_as<ConvAttrs>(attrs));
  return {{std::move(c.output)}};
}

std::vector<SymOutputGeometry> convolution_backward_sym_shape(const OpDef& op,
                                                              std::span<const SymMetaRef> in,
                                                              const void* attrs) {
  const auto& a = attrs_as<ConvBackwardAttrs>(attrs);
  check_backward_call(op, in.size(), a);
  SymConvCall c =
      sym_conv_call(op, in[1].sizes, expect_ints(in[2].sizes, op.name), nullptr, a.conv);
  KILN_CHECK(SymShape(in[0].sizes.begin(), in[0].sizes.end()) == c.output,
             "{}: expected grad_output of size {} (input {}, weight {}), got {}", op.name,
             sym_shape_str(c.output), sym_shape_str(in[1].sizes), sym_shape_str(in[2].sizes),
             sym_shape_str(in[0].sizes));
  std::vector<SymOutputGeometry> out;
  if (a.output_mask[0] != 0) out.push_back({SymShape(in[1].sizes.begin(), in[1].sizes.end())});
  if (a.output_mask[1] != 0) out.push_back({SymShape(in[2].sizes.begin(), in[2].sizes.end())});
  if (a.output_mask[2] != 0) out.push_back({SymShape{c.g.out_channels}});
  return out;
}

DType convolution_dtype(const OpDef& op, std::span<const MetaRef> in, const void*, size_t) {
  KILN_CHECK(in[0].dtype == in[1].dtype,
             "{}: Input type ({}) and weight type ({}) should be the same", op.name, in[0].dtype,
             in[1].dtype);
  KILN_CHECK(in.size() < 3 || in[2].dtype == in[0].dtype,
             "{}: Input type ({}) and bias type ({}) should be the same", op.name, in[0].dtype,
             in[2].dtype);
  KILN_CHECK(is_floating(in[0].dtype), "{}: dtype {} is not supported (expected floating point)",
             op.name, in[0].dtype);
  return in[0].dtype;
}

std::vector<OutputGeometry> convolution_backward_shape(const OpDef& op, std::span<const MetaRef> in,
                                                       const void* attrs) {
  const auto& a = attrs_as<ConvBackwardAttrs>(attrs);
  check_backward_call(op, in.size(), a);
  ConvGeometry g = conv_geometry(op, in[1].sizes, in[2].sizes, nullptr, a.conv);
  Shape expected = g.output_sizes();
  KILN_CHECK(of(in[0].sizes) == expected,
             "{}: expected grad_output of size {} (input {}, weight {}), got {}", op.name,
             shape_str(expected), shape_str(in[1].sizes), shape_str(in[2].sizes),
             shape_str(in[0].sizes));
  std::vector<OutputGeometry> out;
  if (a.output_mask[0] != 0) out.push_back({of(in[1].sizes)});
  if (a.output_mask[1] != 0) out.push_back({of(in[2].sizes)});
  if (a.output_mask[2] != 0) out.push_back({Shape{g.out_channels}});
  return out;
}

}  // namespace kiln
