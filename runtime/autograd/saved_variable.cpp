#include "kiln/runtime/autograd/saved_variable.h"

#include "kiln/base/error.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/node.h"

namespace kiln::autograd {
SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  is_output_ = is_output;
  saved_version_ = t.version();
  requires_grad_ = autograd::requires_grad(t);
  const AutogradMeta* meta = t.impl()->autograd_meta();
  is_leaf_ = meta == nullptr || meta->grad_fn == nullptr;
  output_nr_ = meta != nullptr ? meta->output_nr : 0;
  if (is_output && !is_leaf_) {
    data_ = t.detach();  // Note [Saved outputs and cycles]
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!was_defined_) return Tensor();
  std::string node_name = saved_for ? saved_for->name() : std::string("a backward Node");
  KILN_CHECK(!released_,
             "{}: trying to backward through the graph a second time (or to read saved tensors "
             "after they were already freed). Saved tensors are freed after backward; pass "
             "retain_graph=true to backward() or grad() the first time to keep them",
             node_name);
  uint32_t current = data_.version();
  KILN_CHECK(current == saved_version_,
             "one of the variables needed for gradient computation has been modified by an "
             "inplace operation: [{} {}], needed by {}, is at version {}; expected version {} "
             "instead",
             data_.dtype(), shape_str(data_.sizes()), node_name, current, saved_version_);
  if (!is_output_ || is_leaf_) return data_;
  // A saved output gets its history back from the Node that saved it.
  Tensor t = data_.detach();
  if (saved_for && requires_grad_) {
    AutogradMeta& meta = t.impl()->ensure_autograd_meta();
    meta.grad_fn = saved_for;
    meta.output_nr = output_nr_;
    meta.requires_grad = true;
  }
  return t;
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  released_ = true;
}

}  // namespace kiln::autograd
