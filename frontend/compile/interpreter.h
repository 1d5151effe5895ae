// The graph interpreter: runs an ir::Graph op by op through the dispatcher. It is the reference
// executor for traced graphs (frontend/tracer.h) and the fallback of compiled plans.
#pragma once

#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// Runs `g` on `inputs` and returns its outputs. Each input must match its graph input's dtype,
// sizes and device (kiln::Error names the input, the expected and the actual type). Op nodes go
// through call_op, so autograd records them when an input requires grad; constants yield their
// tensor; a fusion group runs its subgraph; a fallback calls its function. An intermediate
// tensor is released right after its last use. An error raised by a node is rethrown naming the
// node and its call site.
//
// With `random`, every random op (kRandom) runs with seed `random->seed` and its offset
// shifted by `random->offset_shift` (Note [Random ops in plans], frontend/compile/plan.cpp).
struct RandomReplay {
  int64_t seed = 0;
  int64_t offset_shift = 0;
};
// `symbols`: the values of g's symbols when the caller has them already. A backward graph gets
// its forward call's: its inputs (saved tensors, tangents) need not hold every symbol as a
// dim of its own, as binding requires. Else they are bound from the inputs.
std::vector<Tensor> interpret(const ir::Graph& g, const std::vector<Tensor>& inputs,
                              const RandomReplay* random = nullptr,
                              const std::vector<int64_t>* symbols = nullptr);

}  // namespace kiln
