// Analyses of kernel-IR loops that shape the LLVM code for them (llvm_emitter.cpp): which loops
// reduce, which mix float32 data with float64 sums, and which row walks prefetch the next row.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::llvm_backend {

// Whether `body` (or a block in it) accumulates.
bool has_accumulate(const kir::Kernel& k, const std::vector<kir::Stmt>& body);

// Whether `body` accumulates into a float64 variable values loaded as 32 bits or narrower: a
// float32 sum that Note [Fused reduction accuracy] keeps in float64.
bool widens_into_f64(const kir::Kernel& k, const std::vector<kir::Stmt>& body);

// Note [Row prefetch]
// A fused reduction walks each row of a Parallel loop several times: the first walk reads
// the row from memory, the later ones from L1, and those are where the math is (softmax's
// exp, LayerNorm's centring and scaling). The hardware prefetchers stay a few lines ahead of
// the loads, so while a row computes no memory is in flight, and the next row's first walk
// waits on DRAM again: memory time and compute time add up. Before the second walk over an
// input's row (contiguous, advancing by a fixed stride per outer iteration) the kernel
// therefore issues prefetches for the next row's lines, which arrive during the compute.
// Prefetches never fault, so the last row's (past the buffer) is harmless. (Prefetching the
// output's next row for writing as well measured no different, so it is not done.)
struct RowPrefetch {
  kir::BufferId buffer;
  kir::ExprId index;  // the load's index, which reads `inner` with coefficient 1
  kir::VarId inner;   // the Vector loop's variable
  int64_t next_row;   // elements from one outer iteration's row to the next
  int64_t extent;     // elements in a row
};

// The prefetches to issue before the Vector loops of Parallel loop `outer`'s body.
std::vector<std::pair<const kir::Stmt*, RowPrefetch>> plan_row_prefetches(const kir::Kernel& k,
                                                                          const kir::Stmt& outer);

}  // namespace kiln::codegen::llvm_backend
