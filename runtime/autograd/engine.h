// The autograd engine: runs the backward graph from root edges (seed 000, PyTorch's engine).
#pragma once

#include <vector>

#include "kiln/runtime/autograd/edge.h"
#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

class Engine {
 public:
  static Engine& get_default_engine();

  // Runs backward from `roots` (one per gradient in `grads`). With `outputs` empty, every
  // reachable Node runs and leaves accumulate into .grad. Otherwise only what the `outputs`
  // edges need runs: with `accumulate_grad` (backward(inputs=...)) the outputs' Nodes run and
  // write .grad; without it (grad()) their gradients are returned instead and AccumulateGrad
  // Nodes do not run.
  std::vector<Tensor> execute(const edge_list& roots, const std::vector<Tensor>& grads,
                              bool keep_graph, bool create_graph, bool accumulate_grad,
                              const edge_list& outputs = {});
};

}  // namespace kiln::autograd
