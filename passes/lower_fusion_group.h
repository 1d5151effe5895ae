// Lowering of fusion groups to kernel IR (kernel_ir/kernel_ir.h): one kernel per group,
// with the loop structure of Note [Fusion spaces] (passes/fusion_space.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::passes {

// The kernel of a fusion group's subgraph. Its buffers are the subgraph's inputs, then its
// outputs, each addressed with its IR type's strides. Throws kiln::Error when the subgraph is
// not a group the fusion pass could have formed (analyze_group says why). Over symbolic sizes,
// `size_args` gets what each size parameter is over the symbols, in launch order
// (FusionGroupAttrs::size_args): each symbol the group mentions, and a parameter of its own for
// each loop extent that is an expression of them (s0*s1).
kir::Kernel lower_fusion_group(const ir::Graph& subgraph, std::string name,
                               std::vector<SymInt>* size_args = nullptr);

// Lowers every fusion group of `graph` that has no kernel yet and attaches the kernel to the
// node (FusionGroupAttrs::kernel). The pass `lower`; returns whether it lowered any.
bool lower_fusion_groups(ir::Graph& graph);

}  // namespace kiln::passes
