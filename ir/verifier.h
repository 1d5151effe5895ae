// The graph IR verifier (DESIGN.md principle 4). Tests and the pass manager run it after every
// pass, so a pass that breaks an invariant fails where it happened rather than at run time.
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::ir {

// Throws kiln::Error naming the node (as the text format shows it) and the first problem found:
//  - structure: parameter nodes first and in input order; every node and value belongs to this
//    graph; use lists agree with node inputs and graph outputs (no dangling uses);
//  - SSA: every input is defined by an earlier node;
//  - types: an op node's input count, attributes and output types agree with the op table's
//    schema, shape rule and dtype rule; constants match their tensor; fusion groups match their
//    subgraph (verified recursively) at the boundary.
void verify(const Graph& graph);

}  // namespace kiln::ir
