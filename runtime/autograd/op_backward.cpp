#include "kiln/runtime/autograd/op_backward.h"

#include <cctype>
#include <memory>

#include "kiln/base/error.h"
#include "kiln/runtime/api/factories.h"

namespace kiln::autograd {

std::string backward_node_name(std::string_view op_name) {
  std::string out;
  bool upper = true;
  for (char c : op_name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (!op_name.empty() && op_name.back() == '_') out += "_";  // in-place: "MulBackward_"
  return out + "Backward";
}

OpBackward::OpBackward(const OpDef& op, const void* attrs, edge_list&& next_edges)
    : Node(std::move(next_edges)), op_(op), attrs_(op.attrs->clone(attrs)) {}

OpBackward::~OpBackward() {
  op_.attrs->destroy(attrs_);
  if (sym_attrs_ != nullptr) op_.attrs->destroy(sym_attrs_);
}

void OpBackward::set_symbolic_attrs(const void* attrs) {
  if (sym_attrs_ != nullptr) op_.attrs->destroy(sym_attrs_);
  sym_attrs_ = op_.attrs->clone(attrs);
}

std::string OpBackward::name() const {
  return backward_node_name(op_.name);
}

void OpBackward::save_input(size_t i, const Tensor& t) {
  if (saved_inputs_.size() <= i) saved_inputs_.resize(i + 1);
  saved_inputs_[i] = SavedVariable(t, false);
}

void OpBackward::save_output(size_t i, const Tensor& t) {
  if (saved_outputs_.size() <= i) saved_outputs_.resize(i + 1);
  saved_outputs_[i] = SavedVariable(t, true);
}

void OpBackward::release_variables() {
  for (SavedVariable& v : saved_inputs_)
    v.reset_data();
  for (SavedVariable& v : saved_outputs_)
    v.reset_data();
  released_ = true;
}

variable_list OpBackward::apply(variable_list&& grads) {
  std::shared_ptr<Node> self = shared_from_this();
  std::vector<Tensor> inputs(forward_inputs_.size());
  for (size_t i = 0; i < saved_inputs_.size() && i < inputs.size(); ++i)
    inputs[i] = saved_inputs_[i].unpack(self);
  std::vector<Tensor> outputs(num_inputs());
  for (size_t i = 0; i < saved_outputs_.size() && i < outputs.size(); ++i)
    outputs[i] = saved_outputs_[i].unpack(self);
  // No gradient at all flowed in (a custom Function's backward returned an undefined one):
  // none flows out either, so the leaves below keep an undefined .grad, as in libtorch.
  bool any_defined = false;
  for (const Tensor& g : grads)
    any_defined = any_defined || g.defined();
  if (!any_defined) return variable_list(next_edges_.size());
  // A differentiable output that received no gradient contributes zero, of its sizes over the
  // trace's symbols (Note [Symbolic saved sizes]).
  for (size_t i = 0; i < grads.size(); ++i) {
    const InputMetadata& m = input_metadata(i);
    if (!grads[i].defined() && m.defined)
      grads[i] =
          full_symint(m.symbolic_sizes(), 0, TensorOptions().dtype(m.dtype).device(m.device));
  }
  // std::vector<bool> is packed and has no data(); a plain bool array backs the span.
  std::unique_ptr<bool[]> needs(new bool[next_edges_.size()]());
  for (size_t i = 0; i < next_edges_.size(); ++i)
    needs[i] = task_should_compute_output(i);
  bool symbolic =
      sym_attrs_ != nullptr && kiln::detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0;
  GradArgs args{op_,
                symbolic ? sym_attrs_ : attrs_,
                inputs,
                outputs,
                grads,
                forward_inputs_,
                std::span<const bool>(needs.get(), next_edges_.size())};
  KILN_CHECK(op_.derivative != nullptr, "{}: the op '{}' has no derivative formula", name(),
             op_.name);
  std::vector<Tensor> result = op_.derivative(args);
  KILN_CHECK(result.size() == next_edges_.size(),
             "{}: the derivative returned {} gradients for {} inputs", name(), result.size(),
             next_edges_.size());
  return result;
}

}  // namespace kiln::autograd
