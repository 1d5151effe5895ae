#include "kiln/frontend/checkpoint.h"

#include "kiln/base/philox.h"
#include "kiln/frontend/custom_function.h"
#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/autograd/anomaly_mode.h"
#include "kiln/runtime/autograd/autograd_meta.h"
#include "kiln/runtime/autograd/saved_variable.h"

namespace kiln::autograd {
namespace {

class CheckpointBackward : public Node {
 public:
  CheckpointBackward(RecomputeFn recompute, const std::vector<Tensor>& inputs, GeneratorState rng)
      : Node(collect_next_edges(inputs)), recompute_(std::move(recompute)), rng_(rng) {
    for (const Tensor& t : inputs) {
      saved_.emplace_back(t, false);
      requires_grad_.push_back(t.defined() && t.requires_grad());
    }
  }
  std::string name() const override { return "CheckpointBackward"; }
  // apply() only calls ops: the recompute (the user's function, which the forward already ran
  // under the same trace) and a nested grad(). A trace therefore records the recomputation and
  // its backward into the joint graph (Note [Backward under trace] in engine.cpp).
  bool is_traceable() override { return true; }
  void release_variables() override {
    for (SavedVariable& v : saved_)
      v.reset_data();
  }

 protected:
  variable_list apply(variable_list&& grads) override {
    std::shared_ptr<Node> self = shared_from_this();
    std::vector<Tensor> inputs, diff_inputs;
    std::vector<size_t> diff_positions;
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor t = saved_[i].unpack(self);
      if (t.defined()) {
        t = t.detach();
        if (requires_grad_[i] && task_should_compute_output(i)) {
          t.requires_grad_(true);
          diff_inputs.push_back(t);
          diff_positions.push_back(i);
        }
      }
      inputs.push_back(std::move(t));
    }
    std::vector<Tensor> outputs;
    {
      RngStateGuard replay(rng_);
      EnableGradGuard record;
      outputs = recompute_(inputs);
    }
    KILN_CHECK(outputs.size() == grads.size(),
               "checkpoint: the recomputed function returned {} tensors, but the first run "
               "returned {}",
               outputs.size(), grads.size());
    std::vector<Tensor> roots, root_grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (grads[i].defined() && outputs[i].defined() && outputs[i].requires_grad()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    }
    variable_list result(saved_.size());
    if (roots.empty() || diff_inputs.empty()) return result;
    // A reentrant backward through the recomputed graph.
    std::vector<Tensor> g = grad(roots, diff_inputs, root_grads, /*retain_graph=*/false,
                                 /*create_graph=*/GradMode::is_enabled(), /*allow_unused=*/true);
    for (size_t k = 0; k < g.size(); ++k)
      result[diff_positions[k]] = std::move(g[k]);
    return result;
  }

 private:
  RecomputeFn recompute_;
  GeneratorState rng_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> requires_grad_;
};

}  // namespace

std::pair<uint64_t, uint64_t> checkpoint_rng_state() {
  GeneratorState s = get_rng_state();
  return {s.seed, s.offset};
}

void attach_checkpoint(RecomputeFn recompute, const std::vector<Tensor>& tensor_inputs,
                       const std::vector<Tensor*>& outputs, uint64_t rng_seed,
                       uint64_t rng_offset) {
  if (!GradMode::is_enabled()) return;
  bool any = false;
  for (const Tensor& t : tensor_inputs)
    any = any || (t.defined() && t.requires_grad());
  if (!any) return;
  auto node = autograd::make_node<CheckpointBackward>(std::move(recompute), tensor_inputs,
                                                      GeneratorState{rng_seed, rng_offset});
  if (AnomalyMode::is_enabled()) node->metadata()->forward_op = "checkpoint";
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& t = *outputs[i];
    if (!t.defined() || !is_floating(t.dtype())) {
      node->add_undefined_input();
      continue;
    }
    set_result_history(t, node, static_cast<uint32_t>(i), tensor_inputs);
  }
}

}  // namespace kiln::autograd
