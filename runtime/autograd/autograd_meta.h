// Per-tensor autograd state, hung off TensorImpl and created lazily (most tensors never need it).
//
// Note [Leaf and non-leaf]
// A tensor with a grad_fn is a non-leaf: its gradient flows to grad_fn's input output_nr. A
// tensor that requires grad without a grad_fn is a leaf: its gradient goes to its
// AccumulateGrad Node, which the meta holds weakly (the graph owns it) and recreates on demand,
// and ends up in .grad. requires_grad() is true for a non-leaf by construction.
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/runtime/autograd/edge.h"
#include "kiln/runtime/autograd/function_hook.h"
#include "kiln/runtime/tensor.h"

namespace kiln {
struct OpDef;
}

namespace kiln::autograd {

class Node;

struct AutogradMeta {
  bool requires_grad = false;  // the leaf flag; non-leaves answer through grad_fn
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;
  bool retains_grad = false;
  std::shared_ptr<TensorHookList> hooks;  // Tensor::register_hook
  std::unique_ptr<PostAccumulateGradHook> post_acc_grad_hook;

  // Note [Views in autograd]
  // A view made while grad mode is on (of any tensor), or in no-grad mode of a tensor that
  // requires grad, keeps its source tensor and the view op, and the storage version at which
  // grad_fn was last set. When the storage was modified in place since (through the base or
  // another view), grad_fn is rebuilt by replaying the view op on the source, so the view's
  // gradient follows the source's current history. An in-place op on a view rewrites the base's
  // history (Note [In-place ops on views] in copy_slices.h). A view made in no-grad mode keeps
  // no history and may not be modified in place while grad mode is on (torch's rule: which of
  // the two the user meant is ambiguous).
  Tensor view_source;
  const OpDef* view_op = nullptr;
  std::shared_ptr<void> view_attrs;  // owned copy, freed through view_op->attrs
  uint32_t view_version = 0;
  bool view_made_in_no_grad = false;
  bool is_view() const { return view_op != nullptr; }

  AutogradMeta() = default;
  // Releases a chain of views (each holding its source) iteratively, so that a long chain cannot
  // overflow the stack.
  ~AutogradMeta();
  AutogradMeta(const AutogradMeta&) = delete;
  AutogradMeta& operator=(const AutogradMeta&) = delete;
};

// ---- the helpers every autograd layer uses (autograd_meta.cpp) ----

bool requires_grad(const Tensor& t);
// The grad_fn, rebuilt first for a view whose storage changed (Note [Views in autograd]).
std::shared_ptr<Node> grad_fn(const Tensor& t);
// Where this tensor's gradient goes: (grad_fn, output_nr), the leaf's AccumulateGrad, or an
// invalid edge when it does not require grad.
Edge gradient_edge(const Tensor& t);
// The leaf's AccumulateGrad Node, created when absent.
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
// Makes `t` output `output_nr` of `fn` (adds the input metadata to fn).
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);
// An in-place op's result: `t` becomes output `output_nr` of `fn` (whose metadata is already
// added).
void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr = 0);
// Tensor::retain_grad: the grad_fn stores this output's gradient in the tensor's .grad.
void install_retains_grad_hook(const Tensor& t);

}  // namespace kiln::autograd
