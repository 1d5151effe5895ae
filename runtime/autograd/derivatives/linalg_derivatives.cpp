// Derivative formulas of the linalg family (Note [Gradient shapes] in derivative.h): for
// C = A B, dA = dC B^T and dB = A^T dC, batch by batch for bmm.
#include "kiln/frontend/ops.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveAll;
using autograd::kSaveNone;

std::vector<Tensor> mm_backward(const GradArgs& args) {
  const Tensor& g = args.grad();
  std::vector<Tensor> out(2);
  if (args.needs(0)) out[0] = mm(g, args.inputs[1].t());
  if (args.needs(1)) out[1] = mm(args.inputs[0].t(), g);
  return out;
}

std::vector<Tensor> bmm_backward(const GradArgs& args) {
  const Tensor& g = args.grad();
  std::vector<Tensor> out(2);
  if (args.needs(0)) out[0] = bmm(g, args.inputs[1].transpose(1, 2));
  if (args.needs(1)) out[1] = bmm(args.inputs[0].transpose(1, 2), g);
  return out;
}

}  // namespace

void register_linalg_derivatives(OpTable& table) {
  auto set = [&](std::string_view name, autograd::DerivativeFn fn) {
    OpDef& op = table.mutable_op(name);
    op.derivative = fn;
    op.save_inputs = kSaveAll;  // each operand's gradient reads the other operand
    op.save_outputs = kSaveNone;
  };
  set("mm", mm_backward);
  set("bmm", bmm_backward);
}

}  // namespace kiln
