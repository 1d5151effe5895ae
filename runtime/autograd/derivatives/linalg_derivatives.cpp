// Derivative formulas of the linalg family (Note [Gradient shapes] in derivative.h): for
// C = A B, dA = dC B^T and dB = A^T dC, batch by batch for bmm.
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveAll;
using autograd::kSaveNone;

// Note [Gradient layout of a product]
// A gradient is laid out as its operand is, as in PyTorch's mm_mat2_backward: linear computes
// x @ w.t(), so the operand w.t() is column-major, and A^T dC written row-major would reach w as
// a transposed view. AccumulateGrad must then copy it strided (or accumulate into .grad
// strided), which costs more than the product for a large weight. Computing (dC^T A)^T instead
// gives the same numbers with the operand's layout, and its transpose back to w is contiguous.
// The layout is read off the TensorImpl, which a symbolic trace does not count as a size read
// (Note [Size reads while tracing]): both branches give the same numbers at any size.
bool column_major(const Tensor& t) {
  const TensorImpl& i = *t.impl();
  size_t n = i.sizes().size();
  return i.strides()[n - 2] == 1 && i.strides()[n - 1] == i.sizes()[n - 2] && i.sizes()[n - 1] > 1;
}

std::vector<Tensor> mm_backward(const GradArgs& args) {
  const Tensor& g = args.grad();
  const Tensor& a = args.inputs[0];
  const Tensor& b = args.inputs[1];
  std::vector<Tensor> out(2);
  if (args.needs(0)) out[0] = column_major(a) ? mm(b, g.t()).t() : mm(g, b.t());
  if (args.needs(1)) out[1] = column_major(b) ? mm(g.t(), a).t() : mm(a.t(), g);
  return out;
}

std::vector<Tensor> bmm_backward(const GradArgs& args) {
  const Tensor& g = args.grad();
  const Tensor& a = args.inputs[0];
  const Tensor& b = args.inputs[1];
  auto tr = [](const Tensor& t) { return t.transpose(1, 2); };
  std::vector<Tensor> out(2);
  if (args.needs(0)) out[0] = column_major(a) ? tr(bmm(b, tr(g))) : bmm(g, tr(b));
  if (args.needs(1)) out[1] = column_major(b) ? tr(bmm(tr(g), a)) : bmm(tr(a), g);
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
