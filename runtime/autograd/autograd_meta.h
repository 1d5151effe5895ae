// Per-tensor autograd state, hung off TensorImpl. The autograd engine issue grows this into the
// full set of the seeds (grad, grad_fn, output_nr, hooks); for now it carries the flag that
// TensorOptions::requires_grad sets and the dispatcher's Autograd key reads.
#pragma once

namespace kiln::autograd {

struct AutogradMeta {
  bool requires_grad = false;
};

}  // namespace kiln::autograd
