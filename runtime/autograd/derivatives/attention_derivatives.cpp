// Derivative of scaled_dot_product_flash_attention: the fused backward op, which recomputes the
// probabilities tile by tile from the saved logsumexp (Note [Flash attention] in
// runtime/kernels/attention_cpu_kernels.cpp). The backward op has no derivative of its own, as
// torch's flash attention backward has none: a double backward through it throws.
#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/attention_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::save_bit;

// Gradients of query, key and value. The mask gets none: the public function runs the composite
// instead when an additive mask requires grad (runtime/api/attention_ops.cpp), and logsumexp is
// internal, so no gradient flows into it that matters (the public function returns out only).
std::vector<Tensor> flash_attention_backward(const GradArgs& args) {
  const auto& a = args.attrs_as<AttentionAttrs>();
  std::vector<Tensor> res(args.input_meta.size());
  if (!args.needs(0) && !args.needs(1) && !args.needs(2)) return res;
  std::vector<Tensor> in = {args.grad(),    args.inputs[0],  args.inputs[1],
                            args.inputs[2], args.outputs[0], args.outputs[1]};
  if (a.has_mask) in.push_back(args.inputs[3]);
  std::vector<Tensor> g = call_op(KILN_OP("scaled_dot_product_flash_attention_backward"), in, &a);
  for (size_t i = 0; i < 3; ++i)
    if (args.needs(i)) res[i] = std::move(g[i]);
  return res;
}

std::vector<Tensor> no_double_backward(const GradArgs& args) {
  KILN_ERROR(
      "{}: double backward is not supported (the derivative of the fused attention backward is "
      "not implemented, as for torch's flash attention); run scaled_dot_product_attention with "
      "dropout or through its composite for higher-order gradients",
      args.op.name);
}

}  // namespace

void register_attention_derivatives(OpTable& table) {
  table.set_derivative("scaled_dot_product_flash_attention", flash_attention_backward,
                       save_bit(0) | save_bit(1) | save_bit(2) | save_bit(3),
                       save_bit(0) | save_bit(1));
  table.set_derivative("scaled_dot_product_flash_attention_backward", no_double_backward);
}

}  // namespace kiln
