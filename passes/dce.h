// Dead code elimination.
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Removes nodes none of whose outputs is used by a later node or a graph output, repeating
// until nothing more dies. Kept regardless: graph inputs, in-place ops (they write an input)
// and fallbacks (opaque code may have effects the graph cannot see). Fusion-group subgraphs
// are cleaned too. Returns whether anything was removed.
bool eliminate_dead_code(ir::Graph& graph);

}  // namespace kiln::passes
