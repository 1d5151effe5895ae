// Nodes the engine itself needs: GraphRoot (hands the root gradients to the roots) and
// AccumulateGrad (writes a leaf's .grad).
#pragma once

#include "kiln/runtime/autograd/node.h"

namespace kiln::autograd {

class GraphRoot : public Node {
 public:
  GraphRoot(edge_list roots, variable_list grads);
  std::string name() const override { return "GraphRoot"; }
  bool is_traceable() override { return true; }

 protected:
  variable_list apply(variable_list&& inputs) override;

 private:
  variable_list grads_;
};

class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  // The leaf's own hooks (Tensor::register_hook) live on the tensor, not on this Node, so that
  // they survive the Node being freed and recreated with the next graph.
  std::unique_ptr<PostAccumulateGradHook>& tensor_post_acc_grad_hooks() override;
  const Tensor& variable() const { return variable_; }

 protected:
  variable_list apply(variable_list&& grads) override;

 private:
  Tensor variable_;
};

// A Node whose apply throws: the grad_fn of an output that cannot be differentiated.
class ErrorNode : public Node {
 public:
  ErrorNode(std::string message, edge_list next_edges);
  std::string name() const override { return "Error"; }

 protected:
  variable_list apply(variable_list&& inputs) override;

 private:
  std::string message_;
};

}  // namespace kiln::autograd
