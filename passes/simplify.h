// Algebraic simplification.
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Applies the rewrite rules of passes/simplify_rules.cpp (x*1 -> x, x+0 -> x, neg(neg(x)) -> x,
// view(view(x)) -> view(x), convert(x) to x's dtype -> x, ...) until none applies, in fusion-group
// subgraphs too. A rewrite only happens when its result has exactly the type of the value it
// replaces (dtype, sizes, strides, device, requires_grad; a new node takes the requires_grad of
// the value it replaces, since that flag is the trace's autograd state, grad mode included):
// x*1 where broadcasting widens x, or where type promotion changes its dtype, stays. A rule
// whose result is an existing value (x*1 -> x) only rewrites the uses by other nodes: a graph
// output keeps its node, so that each call returns a fresh tensor, as eager code does, rather
// than an input or a constant the caller could then modify. The nodes a rewrite leaves unused
// are removed. Returns whether anything was rewritten.
//
// Every rewrite is exact, bit for bit: x + 0 -> x and x - 0 -> x fire only on integers, since
// the eager float addition turns a -0.0 into +0.0.
bool simplify(ir::Graph& graph);

}  // namespace kiln::passes
