#include "kiln/frontend/compile/plan.h"

#include "kiln/base/error.h"
#include "kiln/base/philox.h"
#include "kiln/frontend/compile/compiled_backward.h"
#include "kiln/frontend/compile/segments.h"
#include "kiln/frontend/custom_function.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/storage.h"

namespace kiln::compile_detail {

Tensor clone_with_layout(const Tensor& t) {
  bool overlapping = false;
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return t.detach().clone();
    overlapping = overlapping || (t.strides()[d] == 0 && t.sizes()[d] > 1);
    extent += (t.sizes()[d] - 1) * t.strides()[d];
  }
  if (overlapping || t.is_contiguous()) return t.detach().clone();
  size_t nbytes = static_cast<size_t>(extent) * t.element_size();
  Tensor c(std::make_shared<TensorImpl>(make_storage(nbytes, t.device()), t.dtype(), t.sizes(),
                                        t.strides(), 0));
  c.copy_(t.detach());
  return c;
}

PlanFigures plan_figures(const Plan& plan) {
  PlanFigures f;
  if (plan.steps.empty()) {
    f.forward_kernels = plan.forward_kernels;
    f.backward_kernels = plan.backward_kernels;
    f.fallback_ops = plan.fallback_ops;
    f.saved_bytes = plan.saved_bytes;
    return f;
  }
  for (const auto& step : plan.steps) {
    if (step->fallback != nullptr) {
      // The Function runs eagerly forward, and its Node eagerly in backward when it has one.
      bool differentiable = false;
      for (const ir::Value* v : step->outputs)
        differentiable = differentiable || v->type().requires_grad;
      f.fallback_ops += differentiable ? 2 : 1;
      continue;
    }
    if (std::shared_ptr<const Plan> p = step->captured()) {
      PlanFigures sub = plan_figures(*p);
      f.forward_kernels += sub.forward_kernels;
      f.backward_kernels += sub.backward_kernels;
      f.fallback_ops += sub.fallback_ops;
      f.saved_bytes += sub.saved_bytes;
    }
  }
  return f;
}

// Note [Random ops in plans]
// A traced random op keeps the (seed, offset) it drew while capturing. Eager code draws fresh
// blocks on every call, so a call of a plan reserves the same number of Philox blocks the
// captured call drew, in one piece, and shifts every random op's offset by the distance from the
// capture's starting offset (and takes the current seed). The ops then read exactly the blocks
// eager code would have read from the same generator state, so a compiled function matches
// eager for a given seed, dropout masks included. The backward of the same call reuses the
// shift, so a mask recomputed in backward equals the forward one.
std::vector<Tensor> run_plan(const std::shared_ptr<const Plan>& plan,
                             const std::vector<Tensor>& inputs) {
  std::optional<RandomReplay> random;
  if (plan->random_blocks > 0) {
    GeneratorState g = reserve_random_blocks(static_cast<uint64_t>(plan->random_blocks));
    random = RandomReplay{static_cast<int64_t>(g.seed),
                          static_cast<int64_t>(g.offset) - plan->capture_offset};
  }
  std::vector<Tensor> primals = inputs;
  primals.insert(primals.end(), plan->lifted.begin(), plan->lifted.end());

  if (!plan->steps.empty()) {
    std::vector<Tensor> out = run_steps(*plan, primals);
    NoGradGuard no_grad;
    for (auto [input, output] : plan->write_backs)
      primals.at(input).copy_(out.at(output));
    out.resize(plan->num_outputs);
    return out;
  }
  std::vector<Tensor> out;
  std::vector<int64_t> symbols;
  {
    // The forward plan records no eager history: CompiledBackward stands for all of it.
    NoGradGuard no_grad;
    // Bound here rather than inside interpret: the backward runs at the same values.
    if (!plan->forward->symbol_hints().empty())
      symbols = ir::bind_symbols(*plan->forward, primals, "compiled function");
    out = interpret(*plan->forward, primals, random.has_value() ? &*random : nullptr, &symbols);
    // Into arguments and lifted tensors alike (Note [Lifted tensors], graph_tracer.h).
    for (auto [input, output] : plan->write_backs)
      primals.at(input).copy_(out.at(output));
  }
  size_t num_forward = plan->num_outputs + plan->write_backs.size();
  std::vector<Tensor> outputs(out.begin(),
                              out.begin() + static_cast<std::ptrdiff_t>(plan->num_outputs));
  if (!plan->backward || !GradMode::is_enabled()) return outputs;

  std::vector<Tensor> saved(out.begin() + static_cast<std::ptrdiff_t>(num_forward), out.end());
  auto node =
      autograd::make_node<CompiledBackward>(plan, saved, primals, random, std::move(symbols));
  std::vector<Tensor> wrt;
  for (size_t k : plan->grad_primals)
    wrt.push_back(primals.at(k));
  node->set_next_edges(autograd::collect_next_edges(wrt));
  for (size_t k = 0; k < plan->differentiable_outputs.size(); ++k) {
    Tensor& t = outputs.at(plan->differentiable_outputs[k]);
    autograd::set_result_history(t, node, static_cast<uint32_t>(k), primals);
  }
  return outputs;
}

}  // namespace kiln::compile_detail
