// Splits a joint forward+backward graph into the graph the forward call runs and the graph the
// CompiledBackward Node runs (the AOTAutograd partition).
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// Note [Joint graph layout]
// The joint graph's inputs are the primals (the function's inputs, then any lifted parameters)
// followed by the tangents (one placeholder gradient per differentiable forward output). Its
// outputs are the forward outputs followed by the gradients, one per primal that requires grad.
// compile() builds the joint graph in this layout; partition() relies on it.
struct JointLayout {
  size_t num_primals = 0;
  size_t num_forward_outputs = 0;
};

struct Partition {
  // primals -> forward outputs, then the saved values.
  std::shared_ptr<ir::Graph> forward;
  // saved values, then tangents -> gradients.
  std::shared_ptr<ir::Graph> backward;
  size_t num_saved = 0;
  int64_t saved_bytes = 0;  // per call, from the saved values' static types
};

struct PartitionOptions {
  // Off: save every forward value backward reads. On: save a minimum-byte cut and recompute
  // cheap pointwise and view ops in backward (Note [Rematerialization], partition.cpp).
  bool rematerialize = true;
};

// Every node that depends on a tangent runs in backward; every other node runs in forward, and
// the forward values backward needs are saved, or recomputed when that saves bytes. Neither
// graph keeps dead nodes. The joint graph is not modified.
Partition partition_joint_graph(const ir::Graph& joint, const JointLayout& layout,
                                const PartitionOptions& options = {});

}  // namespace kiln::passes
