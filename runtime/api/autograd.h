// The public autograd API: autograd::grad, the grad-mode guards, the Node graph (seed 003).
// Tensor::backward and the other per-tensor methods are declared in tensor.h.
#pragma once

#include <optional>
#include <source_location>
#include <vector>

#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

// The gradients of `outputs` w.r.t. `inputs` (one per input), without touching any .grad. Only
// the part of the graph that leads to `inputs` runs. `grad_outputs` may be empty for
// one-element outputs. As in PyTorch, the graph is kept when retain_graph or create_graph is
// set. An input the outputs do not depend on is an error unless allow_unused, which returns an
// undefined tensor for it. `loc` is the caller's line: the ops of the backward pass report it
// as their call site (base/call_site.h), in traced graphs and anomaly mode alike.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false,
                         std::source_location loc = std::source_location::current());

// Runs backward from several outputs at once (their gradients are summed into the leaves).
// retain_graph defaults to create_graph. With `inputs`, only their gradients are computed and
// accumulated into their .grad (libtorch's torch::autograd::backward).
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const std::optional<std::vector<Tensor>>& inputs = std::nullopt,
              std::source_location loc = std::source_location::current());

}  // namespace kiln::autograd
