// The public autograd API: autograd::grad, the grad-mode guards, the Node graph (seed 003).
// Tensor::backward and the other per-tensor methods are declared in tensor.h.
#pragma once

#include <vector>

#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

// The gradients of `outputs` w.r.t. `inputs` (one per input), without touching any .grad. Only
// the part of the graph that leads to `inputs` runs. `grad_outputs` may be empty for
// one-element outputs. As in PyTorch, the graph is kept when retain_graph or create_graph is
// set. An input the outputs do not depend on is an error unless allow_unused, which returns an
// undefined tensor for it.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

// Runs backward from several outputs at once (their gradients are summed into the leaves).
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false, bool create_graph = false);

}  // namespace kiln::autograd
