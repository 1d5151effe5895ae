#include "kiln/runtime/autograd/copy_slices.h"

#include <algorithm>

#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/derivative.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_def.h"

namespace kiln::autograd {

// Outermost view op first (Note [In-place ops on views]).
Tensor view_chain_adjoint(const std::vector<ViewStep>& steps, Tensor x) {
  for (size_t k = steps.size(); k-- > 0;) {
    const ViewStep& s = steps[k];
    Tensor no_saved[1];
    Tensor grads[1] = {x};
    bool needs[1] = {true};
    GradArgs args{*s.op, s.attrs.get(), no_saved, {}, grads, {&s.source, 1}, needs};
    x = s.op->derivative(args).at(0);
  }
  return x;
}

Tensor merge_into_base(const std::vector<ViewStep>& steps, const Tensor& view_value,
                       const Tensor& base_value) {
  // sym_sizes: a symbolic trace keeps the view's sizes over its symbols (Note [Symbolic tracing]).
  Tensor inside = full_symint(view_value.sym_sizes(), 1, base_value.options());
  Tensor mask = ne(view_chain_adjoint(steps, inside), 0.0);
  return where(mask, view_chain_adjoint(steps, view_value.to(base_value.dtype())), base_value);
}

ViewChain view_chain(const Tensor& view) {
  ViewChain chain;
  Tensor t = view;
  while (const AutogradMeta* meta = t.impl()->autograd_meta()) {
    if (!meta->is_view()) break;
    chain.steps.push_back(
        ViewStep{meta->view_op, meta->view_attrs, InputMetadata(meta->view_source)});
    t = meta->view_source;
  }
  std::reverse(chain.steps.begin(), chain.steps.end());
  chain.base = t;
  return chain;
}

Tensor apply_view_chain(const ViewChain& chain, const Tensor& x) {
  Tensor v = x;
  for (const ViewStep& s : chain.steps)
    v = std::move(call_op(*s.op, std::span<const Tensor>(&v, 1), s.attrs.get())[0]);
  return v;
}

void check_in_place(std::string_view op_name, const Tensor& self) {
  const AutogradMeta* meta = self.impl()->autograd_meta();
  bool has_history = grad_fn(self) != nullptr;
  KILN_CHECK(!(meta != nullptr && meta->requires_grad && !has_history),
             "{}: a leaf Variable that requires grad is being used in an in-place operation. "
             "({} {}; modify it under NoGradGuard, or work on a clone())",
             op_name, self.dtype(), shape_str(self.sizes()));
  if (meta == nullptr || !meta->is_view()) return;
  KILN_CHECK(!meta->view_made_in_no_grad,
             "{}: A view was created in no_grad mode and is being modified inplace with grad mode "
             "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
             "You can clarify your code by moving both the view and the inplace either both "
             "inside the no_grad block (if you don't want the inplace to be tracked) or both "
             "outside (if you want the inplace to be tracked). ({} {})",
             op_name, self.dtype(), shape_str(self.sizes()));
  for (int64_t d = 0; d < self.dim(); ++d) {
    KILN_CHECK(self.stride(d) != 0 || self.size(d) <= 1,
               "{}: unsupported operation: more than one element of the written-to tensor refers "
               "to a single memory location. Please clone() the tensor before performing the "
               "operation. ({} {} with strides {})",
               op_name, self.dtype(), shape_str(self.sizes()), shape_str(self.strides()));
  }
  Tensor base = self._base();
  KILN_CHECK(!(requires_grad(base) && base.is_leaf()),
             "{}: a view of a leaf Variable that requires grad is being used in an in-place "
             "operation. (the view: {} {}; the leaf: {} {})",
             op_name, self.dtype(), shape_str(self.sizes()), base.dtype(), shape_str(base.sizes()));
}

CopySlices::CopySlices(const Tensor& base, ViewChain chain, std::shared_ptr<Node> fn,
                       size_t view_input)
    : base_(base), chain_(std::move(chain)), fn_(std::move(fn)), view_input_(view_input) {
  chain_.base = Tensor();
  add_input_metadata(base_);
  // Edge view_input is the base's old history (set by the caller), the others fn's own.
  for (const Edge& e : fn_->next_edges())
    add_next_edge(e);
}

variable_list CopySlices::apply(variable_list&& grads) {
  Tensor g = grads.at(0);
  if (!g.defined())
    g = zeros(base_.read_sizes(), TensorOptions().dtype(base_.dtype).device(base_.device));
  Tensor grad_view = apply_view_chain(chain_, g);
  variable_list res = (*fn_)(variable_list{grad_view});
  variable_list out(num_outputs());
  for (size_t i = 0; i < out.size() && i < res.size(); ++i) {
    if (i != view_input_) out[i] = std::move(res[i]);
  }
  if (task_should_compute_output(view_input_)) {
    const Tensor& r = res.at(view_input_);
    out[view_input_] = merge_into_base(chain_.steps, r.defined() ? r : zeros_like(grad_view), g);
  }
  return out;
}

}  // namespace kiln::autograd
