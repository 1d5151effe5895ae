#include "kiln/frontend/custom_function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/autograd/anomaly_mode.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/copy_slices.h"

namespace kiln::autograd {

std::string demangled_type_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : type.name();
  std::free(name);
  // Keep the unqualified name, as a user would write it: "MulConstant".
  size_t colon = out.rfind("::");
  return colon == std::string::npos ? out : out.substr(colon + 2);
}

void set_result_history(Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr,
                        const std::vector<Tensor>& inputs) {
  bool is_input = false;
  for (const Tensor& in : inputs)
    is_input = is_input || in.is_same(t);
  if (is_input || t.impl()->autograd_meta() != nullptr) t = t.detach();
  set_history(t, node, output_nr);
}

void AutogradContext::save_for_backward(std::vector<Tensor> to_save) {
  to_save_ = std::move(to_save);
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  std::shared_ptr<Node> node = node_.lock();
  std::vector<Tensor> out;
  if (saved_.empty()) return to_save_;  // forward did not record (no input required grad)
  for (const SavedVariable& v : saved_)
    out.push_back(v.unpack(node));
  return out;
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs)
    non_differentiable_.push_back(t.impl());
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    dirty_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(size_t i) const {
  KILN_CHECK(i < needs_input_grad_.size(),
             "needs_input_grad: index {} is out of range for {} tensor inputs (or called outside "
             "backward)",
             i, needs_input_grad_.size());
  return needs_input_grad_[i];
}

bool prepare_custom_function(CppNodeBase& node, const std::vector<Tensor>& tensor_inputs) {
  if (!GradMode::is_enabled()) return false;
  bool any = false;
  for (const Tensor& t : tensor_inputs)
    any = any || (t.defined() && t.requires_grad());
  if (!any) return false;
  node.set_next_edges(collect_next_edges(tensor_inputs));
  return true;
}

namespace {

// A Function that modified a view in place (mark_dirty) changed the view's base: as for a table
// op (Note [In-place ops on views]), the base's history becomes a CopySlices Node wrapping the
// Function's, and the view takes its history from the base again.
void rebase_view_history(const std::shared_ptr<CppNodeBase>& node, const Tensor& view,
                         size_t num_outputs, const std::vector<Tensor>& tensor_inputs) {
  // CopySlices feeds the Function exactly one gradient, the view's (libtorch's limit too).
  KILN_CHECK(num_outputs == 1,
             "{}: If your Function modifies inplace an input that is a view of another Tensor, "
             "your Function cannot return more than one Tensor. This is not supported by the "
             "current autograd engine. You should either make sure the input is not a view "
             "(using .clone() for example) or make your Function only return one Tensor "
             "(potentially splitting it into two Functions: one doing the inplace that returns a "
             "single Tensor and a second one that does the other operations). ({} outputs)",
             node->name(), num_outputs);
  auto it = std::find_if(tensor_inputs.begin(), tensor_inputs.end(),
                         [&](const Tensor& in) { return in.defined() && in.is_same(view); });
  KILN_CHECK(it != tensor_inputs.end(),
             "{}: mark_dirty was given a view ({} {}) that is not an input of the Function",
             node->name(), view.dtype(), shape_str(view.sizes()));
  auto view_input = static_cast<size_t>(it - tensor_inputs.begin());
  ViewChain chain = view_chain(view);
  Tensor base = chain.base;
  node->set_next_edge(view_input, gradient_edge(base));
  rebase_history(base, make_node<CopySlices>(base, std::move(chain), node, view_input));
}

}  // namespace

void finish_custom_function(const std::shared_ptr<CppNodeBase>& node, bool record,
                            const std::vector<Tensor>& tensor_inputs,
                            const std::vector<Tensor*>& outputs) {
  AutogradContext& ctx = node->ctx;
  if (!record) return;
  if (AnomalyMode::is_enabled()) node->metadata()->forward_op = node->name();
  std::vector<const TensorImpl*> original;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& t = *outputs[i];
    original.push_back(t.impl());
    node->output_meta.push_back(t.defined() ? InputMetadata(t) : InputMetadata());
    if (!t.defined()) {
      node->add_undefined_input();
      continue;
    }
    bool non_diff = std::find(ctx.non_differentiable_.begin(), ctx.non_differentiable_.end(),
                              t.impl()) != ctx.non_differentiable_.end();
    if (non_diff || !is_floating(t.dtype())) {
      node->add_undefined_input();
      continue;
    }
    bool dirty = std::find(ctx.dirty_.begin(), ctx.dirty_.end(), t.impl()) != ctx.dirty_.end();
    if (dirty) {
      check_in_place(node->name(), t);
      node->add_input_metadata(t);
      if (t.is_view()) {
        rebase_view_history(node, t, outputs.size(), tensor_inputs);
      } else {
        rebase_history(t, node, static_cast<uint32_t>(i));
      }
      continue;
    }
    set_result_history(t, node, static_cast<uint32_t>(i), tensor_inputs);
  }
  for (const Tensor& s : ctx.to_save_) {
    bool is_output = false;
    const Tensor* saved = &s;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (s.defined() && s.impl() == original[i]) {
        is_output = outputs[i]->requires_grad();
        saved = outputs[i];
      }
    }
    ctx.saved_.emplace_back(*saved, is_output);
  }
  ctx.to_save_.clear();
  ctx.node_ = node;
}

void CppNodeBase::release_variables() {
  for (SavedVariable& v : ctx.saved_)
    v.reset_data();
}

variable_list CppNodeBase::apply(variable_list&& grads) {
  if (ctx.materialize_grads_) {
    for (size_t i = 0; i < grads.size(); ++i) {
      const InputMetadata& m = output_meta.at(i);
      if (!grads[i].defined() && m.defined) {
        grads[i] = zeros(m.read_sizes(), TensorOptions().dtype(m.dtype).device(m.device));
      }
    }
  }
  ctx.needs_input_grad_.assign(num_outputs(), false);
  for (size_t i = 0; i < num_outputs(); ++i)
    ctx.needs_input_grad_[i] = task_should_compute_output(i);
  variable_list result = call_backward(std::move(grads));
  size_t num_args = is_variable_input.size();
  if (result.size() == num_args && num_args != num_outputs()) {
    variable_list filtered;
    for (size_t i = 0; i < num_args; ++i) {
      if (is_variable_input[i]) {
        filtered.push_back(std::move(result[i]));
      } else {
        KILN_CHECK(!result[i].defined(),
                   "{}: backward returned a gradient for argument {}, which is not a tensor",
                   name(), i);
      }
    }
    result = std::move(filtered);
  }
  KILN_CHECK(result.size() == num_outputs(),
             "{}: backward returned {} gradients, but forward had {} tensor inputs ({} arguments)",
             name(), result.size(), num_outputs(), num_args);
  return result;
}

}  // namespace kiln::autograd
