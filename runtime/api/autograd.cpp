#include "kiln/runtime/api/autograd.h"

#include "kiln/base/call_site.h"
#include "kiln/base/warning.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/engine.h"

namespace kiln {

using autograd::AutogradMeta;

bool Tensor::requires_grad() const {
  return autograd::requires_grad(*this);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  KILN_CHECK(!requires_grad || is_floating(dtype()),
             "requires_grad_: only tensors of floating point dtype can require gradients, got {}",
             dtype());
  KILN_CHECK(requires_grad || is_leaf(),
             "requires_grad_: you can only change requires_grad flags of leaf variables. If you "
             "want to use a computed variable in a subgraph that doesn't require differentiation "
             "use var_no_grad = var.detach(). (this one has grad_fn {})",
             grad_fn()->name());
  if (!requires_grad && checked()->autograd_meta() == nullptr) return *this;
  checked()->ensure_autograd_meta().requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  Tensor g = meta != nullptr ? meta->grad : Tensor();
  if (!g.defined() && meta != nullptr && meta->grad_fn != nullptr && !meta->retains_grad) {
    KILN_WARN(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
        "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
        "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
        "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
        "instead.");
  }
  return g;
}

Tensor& Tensor::mutable_grad() const {
  return checked()->ensure_autograd_meta().grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return autograd::grad_fn(*this);
}

bool Tensor::is_leaf() const {
  return autograd::grad_fn(*this) == nullptr;  // a view's history may have changed
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr ? meta->output_nr : 0;
}

void Tensor::backward(const Tensor& grad, std::optional<bool> retain_graph, bool create_graph,
                      const std::optional<std::vector<Tensor>>& inputs,
                      std::source_location loc) const {
  autograd::backward({*this}, grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{},
                     retain_graph, create_graph, inputs, loc);
}

void Tensor::retain_grad() const {
  KILN_CHECK(requires_grad(),
             "retain_grad: can't retain the gradient of a tensor that does not require grad");
  if (is_leaf()) return;  // leaves keep .grad anyway
  if (retains_grad()) return;
  autograd::install_retains_grad_hook(*this);
}

bool Tensor::retains_grad() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr && meta->retains_grad;
}

Tensor Tensor::detach() const {
  const TensorImpl* i = checked();
  return Tensor(std::make_shared<TensorImpl>(i->storage(), i->dtype(), i->sizes(), i->strides(),
                                             i->storage_offset()));
}

Tensor& Tensor::detach_() {
  AutogradMeta* meta = checked()->autograd_meta();
  if (meta == nullptr) return *this;
  KILN_CHECK(!(meta->is_view() && requires_grad()),
             "detach_: Can't detach views in-place. Use detach() instead. ({} {} is a view of a "
             "tensor that autograd records)",
             dtype(), shape_str(sizes()));
  if (meta->retains_grad && meta->grad_fn) meta->grad_fn->pop_retains_grad_hook(meta->output_nr);
  meta->grad_fn = nullptr;
  meta->output_nr = 0;
  meta->requires_grad = false;
  meta->retains_grad = false;
  meta->hooks.reset();
  meta->view_source = Tensor();
  meta->view_op = nullptr;
  meta->view_attrs.reset();
  return *this;
}

void Tensor::set_data(const Tensor& new_data) const {
  KILN_CHECK(new_data.defined(), "set_data: new_data is an undefined tensor");
  KILN_CHECK(new_data.device() == device(),
             "set_data: attempted to call `variable.set_data(tensor)`, but `variable` and "
             "`tensor` have incompatible tensor type (devices {} and {})",
             device(), new_data.device());
  KILN_CHECK(!requires_grad() || is_floating(new_data.dtype()),
             "set_data: a tensor that requires grad cannot take data of dtype {}",
             new_data.dtype());
  AutogradMeta* meta = checked()->autograd_meta();
  // A leaf's AccumulateGrad checks gradients against the leaf's old dtype and shape; the next
  // graph makes a new one.
  if (meta != nullptr && (new_data.dtype() != dtype() || new_data.sizes() != sizes()))
    meta->grad_accumulator.reset();
  const TensorImpl* src = new_data.impl();
  checked()->set_geometry(src->storage(), src->dtype(), src->sizes(), src->strides(),
                          src->storage_offset());
}

bool Tensor::is_view() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr && meta->is_view();
}

Tensor Tensor::_base() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  if (meta == nullptr || !meta->is_view()) return Tensor();
  Tensor base = meta->view_source;
  while (base.impl()->autograd_meta() != nullptr && base.impl()->autograd_meta()->is_view())
    base = base.impl()->autograd_meta()->view_source;
  return base;
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  KILN_CHECK(requires_grad(),
             "register_hook: cannot register a hook on a tensor that does not require grad");
  AutogradMeta& meta = checked()->ensure_autograd_meta();
  if (!meta.hooks) {
    meta.hooks = std::make_shared<autograd::TensorHookList>();
    // A non-leaf's hooks run as a tensor pre hook of its grad_fn; a leaf's AccumulateGrad reads
    // them from the tensor (basic_nodes.h).
    if (std::shared_ptr<autograd::Node> fn = grad_fn()) {
      fn->add_tensor_pre_hook(
          std::make_unique<autograd::TensorHooksPreHook>(meta.hooks, meta.output_nr));
    }
  }
  meta.hooks->hooks.push_back(std::move(hook));
  return static_cast<unsigned>(meta.hooks->hooks.size() - 1);
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* meta = checked()->autograd_meta();
  KILN_CHECK(meta != nullptr && meta->hooks && handle < meta->hooks->hooks.size(),
             "remove_hook: invalid hook handle {}", handle);
  meta->hooks->hooks[handle] = nullptr;
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  KILN_CHECK(requires_grad() && is_leaf(),
             "register_post_accumulate_grad_hook: only leaf tensors that require grad have a "
             "post-accumulate-grad hook");
  AutogradMeta& meta = checked()->ensure_autograd_meta();
  if (!meta.post_acc_grad_hook)
    meta.post_acc_grad_hook = std::make_unique<autograd::PostAccumulateGradHookList>();
  static_cast<autograd::PostAccumulateGradHookList&>(*meta.post_acc_grad_hook)
      .fns.push_back(std::move(hook));
}

namespace autograd {
namespace {

// The gradients to start from: the given ones (checked), or ones for one-element outputs.
std::vector<Tensor> make_root_grads(const char* api, const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& grad_outputs) {
  KILN_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
             "{}: got {} outputs but {} grad_outputs", api, outputs.size(), grad_outputs.size());
  std::vector<Tensor> grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    KILN_CHECK(out.defined(), "{}: output {} is an undefined tensor", api, i);
    KILN_CHECK(out.requires_grad(),
               "{}: element {} of tensors does not require grad and does not have a grad_fn", api,
               i);
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      KILN_CHECK(out.numel() == 1,
                 "{}: grad can be implicitly created only for scalar outputs, but output {} has "
                 "shape {}; pass a gradient of that shape",
                 api, i, shape_str(out.sizes()));
      g = ones_like(out);
    } else {
      // Compared as SymInts first (Note [Size reads while tracing]).
      KILN_CHECK(g.sym_sizes() == out.sym_sizes() || g.sizes() == out.sizes(),
                 "{}: mismatch in shape: grad_outputs[{}] has shape {} and output[{}] has shape {}",
                 api, i, shape_str(g.sizes()), i, shape_str(out.sizes()));
      KILN_CHECK(g.device() == out.device(),
                 "{}: grad_outputs[{}] is on {} but output[{}] is on {}", api, i, g.device(), i,
                 out.device());
    }
    grads.push_back(std::move(g));
  }
  return grads;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph,
              const std::optional<std::vector<Tensor>>& inputs, std::source_location loc) {
  CallSiteScope site(loc);
  std::vector<Tensor> grads = make_root_grads("backward", outputs, grad_outputs);
  edge_list roots;
  for (const Tensor& out : outputs)
    roots.push_back(gradient_edge(out));
  edge_list input_edges;
  if (inputs) {
    KILN_CHECK(!inputs->empty(), "backward: 'inputs' argument to backward() cannot be empty.");
    for (size_t i = 0; i < inputs->size(); ++i) {
      const Tensor& t = (*inputs)[i];
      KILN_CHECK(t.defined() && t.requires_grad(),
                 "backward: One of the differentiated Tensors (input {}) does not require grad", i);
      if (!t.is_leaf()) t.retain_grad();  // its grad_fn writes .grad (torch does the same)
      input_edges.push_back(gradient_edge(t));
    }
  }
  Engine::get_default_engine().execute(roots, grads, retain_graph.value_or(create_graph),
                                       create_graph, /*accumulate_grad=*/true, input_edges);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused, std::source_location loc) {
  CallSiteScope site(loc);
  std::vector<Tensor> grads = make_root_grads("grad", outputs, grad_outputs);
  KILN_CHECK(!inputs.empty(), "grad: grad requires non-empty inputs.");
  edge_list roots;
  for (const Tensor& out : outputs)
    roots.push_back(gradient_edge(out));
  edge_list input_edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(inputs[i].defined() && inputs[i].requires_grad(),
               "grad: one of the differentiated tensors (input {}) does not require grad", i);
    input_edges.push_back(gradient_edge(inputs[i]));
  }
  std::vector<Tensor> result =
      Engine::get_default_engine().execute(roots, grads, retain_graph || create_graph, create_graph,
                                           /*accumulate_grad=*/false, input_edges);
  for (size_t i = 0; i < result.size(); ++i) {
    KILN_CHECK(result[i].defined() || allow_unused,
               "grad: One of the differentiated Tensors (input {}, shape {}) appears to not have "
               "been used in the graph. Set allow_unused=True if this is the desired behavior.",
               i, shape_str(inputs[i].sizes()));
  }
  return result;
}

}  // namespace autograd
}  // namespace kiln
