// Common subexpression elimination.
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Replaces an op node by an earlier node of the same op with the same inputs and equal
// attributes. Only pure ops take part: in-place ops, `empty` (its contents are arbitrary) and
// ops without a deterministic result are skipped; random ops do take part, since their seed and
// offset attributes fix their result. The replaced node is removed. Returns whether
// anything was replaced.
bool eliminate_common_subexpressions(ir::Graph& graph);

}  // namespace kiln::passes
