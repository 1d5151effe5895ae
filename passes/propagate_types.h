// Shape, dtype and requires_grad propagation.
#pragma once

#include <span>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// The output types that the op table gives `op` for inputs of types `inputs` and attributes
// `attrs`, as the verifier checks them: the shape rule's sizes, the dtype rule's dtype, the device
// of input 0 (of the attributes for a factory), the rule's strides for a view (empty when they are
// the contiguous ones), input 0's strides for output 0 of an in-place op and contiguous otherwise.
// requires_grad follows the autograd kernel with grad mode on: an output of a differentiable op
// requires grad when any input does and the output is floating point; output 0 of an in-place op
// also keeps input 0's flag. Throws kiln::Error when the rules reject the inputs or the inputs
// are on different devices.
std::vector<ir::TensorType> infer_op_types(const OpDef& op, std::span<const ir::TensorType> inputs,
                                           const void* attrs);

// Recomputes, in topological order, every op node's output types from its inputs' types with
// infer_op_types, so that a change of an input's type (after a rewrite, or in IR written by hand
// with placeholder types) reaches every value that depends on it. Constants get their tensor's
// type. A fusion group passes its inputs' types to its subgraph's inputs, propagates there, and
// its outputs take the types its subgraph returns.
// Graph inputs and fallbacks (opaque code) keep their types. Throws kiln::Error naming the node
// when an op's rules reject its new input types. Returns whether any type changed.
//
// requires_grad is recomputed as if grad mode were on; a graph traced under no_grad would get
// flags that its trace did not have.
bool propagate_types(ir::Graph& graph);

}  // namespace kiln::passes
