// Derivative formulas of convolution and convolution_backward (Note [Gradient shapes] in
// derivative.h). The forward's gradient is the backward op, asked for the gradients that are
// needed; the backward op's own gradient (double backward) is made of the two ops again, as
// torch's: every output of convolution_backward is bilinear in grad_output and one of input or
// weight, so pairing each incoming gradient with it gives a convolution or a backward again.
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/conv_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;

std::vector<Tensor> conv_backward(const Tensor& grad_output, const Tensor& input,
                                  const Tensor& weight, const ConvAttrs& a, bool gi, bool gw,
                                  bool gb) {
  ConvBackwardAttrs b{a, Shape{gi, gw, gb}};
  const Tensor in[] = {grad_output, input, weight};
  return call_op(KILN_OP("convolution_backward"), in, &b);
}

Tensor conv(const Tensor& input, const Tensor& weight, const ConvAttrs& a) {
  const Tensor in[] = {input, weight};
  return std::move(call_op(KILN_OP("convolution"), in, &a)[0]);
}

// (input, weight, [bias]) -> the needed gradients, from one convolution_backward call.
std::vector<Tensor> convolution_grad(const GradArgs& args) {
  const auto& a = args.attrs_as<ConvAttrs>();
  bool has_bias = args.input_meta.size() == 3;
  bool gi = args.needs(0), gw = args.needs(1), gb = has_bias && args.needs(2);
  std::vector<Tensor> out(args.input_meta.size());
  if (!gi && !gw && !gb) return out;
  std::vector<Tensor> r = conv_backward(args.grad(), args.inputs[0], args.inputs[1], a, gi, gw, gb);
  size_t next = 0;
  if (gi) out[0] = r[next++];
  if (gw) out[1] = r[next++];
  if (gb) out[2] = r[next++];
  return out;
}

// convolution_backward (grad_output, input, weight) -> (gI, gW, gb) as output_mask says, with
// incoming gradients ggI, ggW, ggb. gI is linear in (grad_output, weight) and gW in
// (grad_output, input), so with <., .> the sum of products:
//   <ggI, gI> = <conv(ggI, weight), grad_output>,  <ggW, gW> = <conv(input, ggW), grad_output>,
//   <ggb, gb> = <ggb broadcast, grad_output>.
// Hence d/d grad_output = conv(ggI, W) + conv(input, ggW) + ggb; d/d input = the input gradient
// of conv(input, ggW) against grad_output; d/d weight = the weight gradient of conv(ggI, W)
// against grad_output.
std::vector<Tensor> convolution_backward_grad(const GradArgs& args) {
  const auto& b = args.attrs_as<ConvBackwardAttrs>();
  const ConvAttrs& a = b.conv;
  const Tensor &go = args.inputs[0], &x = args.inputs[1], &w = args.inputs[2];
  Tensor ggi, ggw, ggb;
  size_t next = 0;
  if (b.output_mask[0] != 0) ggi = args.grads[next++];
  if (b.output_mask[1] != 0) ggw = args.grads[next++];
  if (b.output_mask[2] != 0) ggb = args.grads[next++];
  std::vector<Tensor> out(3);
  if (args.needs(0)) {
    Tensor sum;
    auto add = [&](const Tensor& t) { sum = sum.defined() ? sum + t : t; };
    if (ggi.defined()) add(conv(ggi, w, a));
    if (ggw.defined()) add(conv(x, ggw, a));
    if (ggb.defined()) {
      Shape s(args.input_sizes(0).size(), 1);
      s[1] = ggb.size(0);
      add(ggb.reshape(s).expand(args.input_sizes(0)));
    }
    out[0] = sum;
  }
  if (args.needs(1) && ggw.defined()) out[1] = conv_backward(go, x, ggw, a, true, false, false)[0];
  if (args.needs(2) && ggi.defined()) out[2] = conv_backward(go, ggi, w, a, false, true, false)[0];
  return out;
}

}  // namespace

void register_conv_derivatives(OpTable& table) {
  table.set_derivative("convolution", convolution_grad, save_bit(0) | save_bit(1), kSaveNone);
  table.set_derivative("convolution_backward", convolution_backward_grad,
                       save_bit(0) | save_bit(1) | save_bit(2), kSaveNone);
}

}  // namespace kiln
