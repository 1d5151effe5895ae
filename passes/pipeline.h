// The compile pipeline (DESIGN.md principle 5): the passes `kiln::compile` runs, as two readable
// lists, one for the joint graph before it is partitioned and one for each of the partitioned
// forward and backward graphs.
#pragma once

#include <functional>
#include <string>

#include "kiln/ir/graph.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/pass_manager.h"

namespace kiln::passes {

struct PipelineOptions {
  FusionOptions fusion;
  // Called after each pass that changed the graph, with the pass's name (KILN_DEBUG_DIR dumps).
  std::function<void(const std::string& pass, const ir::Graph& graph)> after_change;
};

// Before partitioning: simplifications that shrink the joint graph, so that the partitioner
// (and its min cut) sees fewer nodes. Inputs and outputs keep their positions.
void optimize_joint_graph(ir::Graph& graph, const PipelineOptions& options = {});

// After partitioning, on the forward and on the backward graph: clean up what partitioning and
// rematerialization left, canonicalize views, then fuse and lower each group to kernel IR.
void optimize_partitioned_graph(ir::Graph& graph, const PipelineOptions& options = {});

// A graph with symbolic sizes (Note [Symbolic types]) runs the same passes.

// The two lists, for --help texts and tests.
const std::vector<std::string>& joint_pipeline();
const std::vector<std::string>& partitioned_pipeline();

}  // namespace kiln::passes
