// The fusion pass: groups pointwise ops, the reductions they feed and the pointwise ops that
// read the reduced values back into prim.fusion_group nodes, each of which becomes one kernel
// (Note [Fusion spaces] in passes/fusion_space.h says which sets of nodes qualify).
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::passes {

struct FusionOptions {
  // Most buffers (inputs + outputs) one kernel may take: CUDA kernels pass their arguments in
  // a few KiB of parameter space, and every argument costs a register on the CPU.
  int max_kernel_args = 32;
};

// Forms the groups in three rounds, each merging two groups only when the merged set is still
// one kernel (analyze_group), no path leaves the set and comes back into it (which would make
// the graph cyclic), and the kernel stays within the argument limit:
// - vertical: a node with its producers' groups (pointwise chains, a reduction with its
//   pointwise producers, the consumers that broadcast a reduced value back);
// - views: a view whose users are all in one group joins it, read through its strides;
// - horizontal: groups over the same iteration space with no path between them (the gradients
//   of several inputs in one kernel with several outputs).
// Every fusible op ends up in a group, alone if nothing merges with it, so that every pointwise
// op and fused reduction runs as generated code. Matrix products, indexing, random ops and
// fallbacks stay outside: the group after a matmul takes its bias and activation epilogue.
// Returns whether it formed any group.
bool fuse(ir::Graph& graph, const FusionOptions& options = {});

}  // namespace kiln::passes
