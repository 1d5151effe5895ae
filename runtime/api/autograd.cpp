#include "kiln/runtime/api/autograd.h"

#include "kiln/base/call_site.h"
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
             "requires_grad_: you can only change requires_grad of leaf tensors; this one has a "
             "grad_fn ({}). Use detach() to get a tensor without history",
             grad_fn()->name());
  if (!requires_grad && checked()->autograd_meta() == nullptr) return *this;
  checked()->ensure_autograd_meta().requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr ? meta->grad : Tensor();
}

Tensor& Tensor::mutable_grad() const {
  return checked()->ensure_autograd_meta().grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return autograd::grad_fn(*this);
}

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta == nullptr || meta->grad_fn == nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* meta = checked()->autograd_meta();
  return meta != nullptr ? meta->output_nr : 0;
}

void Tensor::backward(const Tensor& grad, bool retain_graph, bool create_graph,
                      std::source_location loc) const {
  autograd::backward({*this}, grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{},
                     retain_graph, create_graph, loc);
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
      KILN_CHECK(g.sizes() == out.sizes(),
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
              bool retain_graph, bool create_graph, std::source_location loc) {
  CallSiteScope site(loc);
  std::vector<Tensor> grads = make_root_grads("backward", outputs, grad_outputs);
  edge_list roots;
  for (const Tensor& out : outputs)
    roots.push_back(gradient_edge(out));
  Engine::get_default_engine().execute(roots, grads, retain_graph || create_graph, create_graph,
                                       /*accumulate_grad=*/true);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused, std::source_location loc) {
  CallSiteScope site(loc);
  std::vector<Tensor> grads = make_root_grads("grad", outputs, grad_outputs);
  KILN_CHECK(!inputs.empty(), "grad: no inputs to differentiate with respect to");
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
