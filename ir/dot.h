// Graphviz export of the graph IR, for KILN_DEBUG_DIR and for looking at a graph by eye:
// `dot -Tsvg graph.dot > graph.svg`.
#pragma once

#include <string>

#include "kiln/ir/graph.h"

namespace kiln::ir {

// One DOT node per IR node (its kind, attributes and output types; the call site as tooltip),
// one edge per use of a value (node inputs and graph outputs), graph inputs as inverted
// triangles and graph outputs as ovals, and each fusion group's subgraph as a cluster.
std::string to_dot(const Graph& g);

}  // namespace kiln::ir
