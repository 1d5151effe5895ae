#include "kiln/frontend/compile/compiled_backward.h"

#include "kiln/base/error.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln::compile_detail {

CompiledBackward::CompiledBackward(std::shared_ptr<const Plan> plan,
                                   const std::vector<Tensor>& saved,
                                   const std::vector<Tensor>& primals,
                                   std::optional<RandomReplay> random, std::vector<int64_t> symbols)
    : plan_(std::move(plan)), random_(random), symbols_(std::move(symbols)) {
  saved_.reserve(saved.size());
  for (const Tensor& t : saved)
    saved_.emplace_back(t, /*is_output=*/false);
  primals_.reserve(primals.size());
  for (const Tensor& t : primals)
    primals_.emplace_back(t, /*is_output=*/false);
}

void CompiledBackward::release_variables() {
  for (auto& s : saved_)
    s.reset_data();
  for (auto& s : primals_)
    s.reset_data();
  released_ = true;
}

std::vector<Tensor> CompiledBackward::differentiable_backward(const std::vector<Tensor>& tangents) {
  std::vector<Tensor> inputs;
  for (const auto& p : primals_)
    inputs.push_back(p.unpack(getptr()));
  inputs.insert(inputs.end(), tangents.begin(), tangents.end());
  std::vector<Tensor> out =
      interpret(*plan_->joint, inputs, random_.has_value() ? &*random_ : nullptr);
  size_t first_grad = plan_->num_outputs + plan_->write_backs.size();
  return std::vector<Tensor>(out.begin() + static_cast<std::ptrdiff_t>(first_grad), out.end());
}

autograd::variable_list CompiledBackward::apply(autograd::variable_list&& grads) {
  KILN_CHECK(!released_,
             "CompiledBackward: trying to backward through the graph a second time (or directly "
             "access saved tensors after they have already been freed). Saved intermediate "
             "values of the graph are freed when you call .backward() or autograd.grad(). "
             "Specify retain_graph=true if you need to backward through the graph a second time");
  // A differentiable output that received no gradient contributes zero.
  std::vector<Tensor> tangents;
  tangents.reserve(grads.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    if (grads[k].defined()) {
      tangents.push_back(grads[k]);
      continue;
    }
    const autograd::InputMetadata& m = input_metadata(k);
    tangents.push_back(empty_tensor(m.read_sizes(), m.dtype, m.device).zero_());
  }

  std::vector<Tensor> defined_grads;
  if (GradMode::is_enabled()) {
    // create_graph: the gradients must carry history back to the primals and the tangents.
    defined_grads = differentiable_backward(tangents);
  } else {
    std::vector<Tensor> inputs;
    inputs.reserve(saved_.size() + tangents.size());
    for (const auto& s : saved_)
      inputs.push_back(s.unpack(getptr()));
    inputs.insert(inputs.end(), tangents.begin(), tangents.end());
    defined_grads = interpret(*plan_->backward, inputs, random_.has_value() ? &*random_ : nullptr,
                              plan_->backward->symbol_hints().empty() ? nullptr : &symbols_);
  }
  autograd::variable_list result(plan_->grad_primals.size());
  size_t next = 0;
  for (size_t k = 0; k < result.size(); ++k) {
    if (plan_->has_gradient[k]) result[k] = defined_grads.at(next++);
  }
  return result;
}

}  // namespace kiln::compile_detail
