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
  Tensor inside = ones(view_value.sizes(), base_value.options());
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

CopySlices::CopySlices(const Tensor& base, ViewChain chain, std::shared_ptr<Node> fn)
    : base_(base), chain_(std::move(chain)), fn_(std::move(fn)) {
  chain_.base = Tensor();
  add_input_metadata(base_);
  for (const Edge& e : fn_->next_edges())
    add_next_edge(e);  // edge 0 is the base's old history (set by the autograd kernel)
}

variable_list CopySlices::apply(variable_list&& grads) {
  Tensor g = grads.at(0);
  if (!g.defined()) g = zeros(base_.sizes, TensorOptions().dtype(base_.dtype).device(base_.device));
  Tensor grad_view = apply_view_chain(chain_, g);
  variable_list res = (*fn_)(variable_list{grad_view});
  variable_list out(num_outputs());
  if (task_should_compute_output(0)) {
    const Tensor& r0 = res.at(0);
    out[0] = merge_into_base(chain_.steps, r0.defined() ? r0 : zeros_like(grad_view), g);
  }
  for (size_t i = 1; i < out.size() && i < res.size(); ++i)
    out[i] = std::move(res[i]);
  return out;
}

}  // namespace kiln::autograd
