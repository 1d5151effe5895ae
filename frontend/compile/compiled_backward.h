// CompiledBackward: the autograd Node a compiled call attaches to its differentiable outputs.
// It is an ordinary Node, so gradients flow from the compiled outputs into the eager graph
// around the call (its next_edges lead to the primals' grad_fns or AccumulateGrad Nodes).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kiln/frontend/compile/plan.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/autograd/saved_variable.h"

namespace kiln::compile_detail {

class CompiledBackward final : public autograd::Node {
 public:
  // `saved`: the forward plan's saved values. `primals`: the call's inputs and lifted
  // parameters, kept for create_graph (which recomputes through the joint graph).
  CompiledBackward(std::shared_ptr<const Plan> plan, const std::vector<Tensor>& saved,
                   const std::vector<Tensor>& primals, std::optional<RandomReplay> random,
                   std::vector<int64_t> symbols);

  std::string name() const override { return "CompiledBackward"; }
  // apply() runs graph ops through the dispatcher only.
  bool is_traceable() override { return true; }
  void release_variables() override;
  autograd::variable_list apply(autograd::variable_list&& grads) override;

 private:
  // The gradients with autograd recording: the joint graph again, from the primals.
  std::vector<Tensor> differentiable_backward(const std::vector<Tensor>& tangents);

  std::shared_ptr<const Plan> plan_;
  std::vector<autograd::SavedVariable> saved_;
  std::vector<autograd::SavedVariable> primals_;
  std::optional<RandomReplay> random_;
  std::vector<int64_t> symbols_;  // the forward call's symbols (Note [Symbolic plans])
  bool released_ = false;
};

}  // namespace kiln::compile_detail
