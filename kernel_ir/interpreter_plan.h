// How the kernel-IR interpreter runs each innermost loop: in batches of lanes (every statement
// of the body evaluated for up to lanes::kMaxLanes iterations at once), or one iteration at a
// time where batching would reorder effects that the sequential loop orders.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// A buffer bound to memory for one run.
struct BoundBuffer {
  char* data = nullptr;  // element 0
  DType dtype = kFloat32;
  int64_t extent = 0;
  // The allocation the memory belongs to (a tensor's storage), for the compiled backends'
  // overlap check; null when unknown.
  const void* owner = nullptr;
};

// Note [Batched innermost loops]
// Batching runs statement 1 for all lanes, then statement 2 for all lanes, where the loop runs
// both for one iteration, then both for the next. The two orders agree unless
// - the body reads an accumulator that it accumulates into, declared outside the loop (the
//   read must see the iterations before it), or
// - two of the body's memory accesses touch overlapping memory (the same buffer, or tensors that
//   alias), at least one of them a store, and their indices are not the same expression (an
//   identical index touches the same element in the same iteration, which batching keeps).
// Such a loop runs with a batch of 1. Everything else is batched.
//
// Maps each innermost Loop statement (one with no loop inside) to its batch width.
std::unordered_map<const Stmt*, int> plan_loops(const Kernel& k,
                                                std::span<const BoundBuffer> buffers);

}  // namespace kiln::kir
