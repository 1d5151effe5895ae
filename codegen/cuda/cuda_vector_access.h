// Which buffer accesses of an Elementwise CUDA entry can move 16 bytes at a time (Note [CUDA
// vector accesses] in cuda_vector_access.cpp).
#pragma once

#include <set>
#include <utility>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::cuda {

struct VectorPlan {
  // Consecutive iterations of the innermost flat loop each thread runs; 1: no vector path.
  int width = 1;
  // The accesses that read or write `width` consecutive elements at a width-aligned index:
  // loads by (buffer, index expression), stores by statement.
  std::set<std::pair<kir::BufferId, kir::ExprId>> loads;
  std::set<const kir::Stmt*> stores;
  // Their buffers, whose pointers the kernel checks for alignment before taking the vector path.
  std::set<kir::BufferId> buffers;
  // Size parameters that must be multiples of `width` for the vector path (a kernel with size
  // parameters: the innermost extent, and the sizes in the strides of the vectorized accesses);
  // the kernel checks them with the pointers.
  std::set<kir::VarId> divisible_sizes;
};

// The plan for an Elementwise entry that walks the loops `flat` (outermost first) and runs
// `body` (no loops, no accumulators) at each point.
VectorPlan plan_vector_access(const kir::Kernel& k, const std::vector<const kir::Stmt*>& flat,
                              const std::vector<kir::Stmt>& body);

}  // namespace kiln::codegen::cuda
