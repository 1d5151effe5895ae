// Dead code elimination.
#pragma once

#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Removes nodes none of whose outputs is used by a later node or a graph output, repeating
// until nothing more dies. Kept regardless: graph inputs, in-place ops (they write an input)
// and fallbacks (opaque code may have effects the graph cannot see). Fusion-group subgraphs
// are cleaned too. Returns whether anything was removed.
bool eliminate_dead_code(ir::Graph& graph);

// Erases `node` when none of its outputs is used and it has none of the effects above, then does
// the same for the nodes that defined its inputs, and so on. Rewriting passes call it on the node
// they replaced, to remove exactly what the rewrite left unused. Returns the erased nodes (their
// addresses only: the nodes are freed).
std::vector<const ir::Node*> erase_if_dead(ir::Graph& graph, ir::Node* node);

}  // namespace kiln::passes
