// Shape, dtype and requires_grad propagation.
#pragma once

#include <span>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ir/infer_types.h"

namespace kiln::passes {

// ir::infer_op_types (ir/infer_types.h), which the verifier checks with, under the name the
// passes have always used.
using ir::infer_op_types;

// Recomputes, in topological order, every op node's output types from its inputs' types with
// infer_op_types (symbolic ones at the graph's hints), so that a change of an input's type (after a
// rewrite, or in IR written by hand with placeholder types) reaches every value that depends on it.
// Constants get their tensor's type. A fusion group passes its inputs' types to its subgraph's
// inputs, propagates there, and its outputs take the types its subgraph returns. Graph inputs and
// fallbacks (opaque code) keep their types. Throws kiln::Error naming the node when an op's rules
// reject its new input types. Returns whether any type changed.
//
// requires_grad is recomputed as if grad mode were on; a graph traced under no_grad would get
// flags that its trace did not have.
bool propagate_types(ir::Graph& graph);

}  // namespace kiln::passes
