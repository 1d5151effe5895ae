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
  // Most nodes one group may hold. LLVM's optimization time grows faster than linearly with a
  // kernel's body, and a group past a few hundred ops gains nothing from being one kernel
  // (Inductor caps fusion at 64 nodes); it also bounds the cost of each merge check, which keeps
  // fusing a long chain linear in its length (Note [Fusion cycle check]).
  int max_group_nodes = 256;
  // Most positions in the graph's order between a group's first and last member. A group that
  // spans far (a rematerialized forward op fused into its distant backward use) makes every
  // cycle check search the whole span (Note [Fusion cycle check]); past this, the value is
  // materialized instead.
  int max_group_span = 1024;
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
