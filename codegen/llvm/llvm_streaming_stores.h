// Streaming (non-temporal) stores for large outputs of the LLVM backend.
//
// Note [Streaming stores]
// A store to memory that is not in cache first reads the line (a read for ownership), so a
// kernel that streams one input to one output moves three bytes for every two it needs. On the
// 2-core AMD EPYC of docs/performance.md a 64 MiB `y = 2x` ran at 35 GB/s with plain AVX-512
// stores and at 55 GB/s with non-temporal ones. A kernel therefore writes an output of at least
// kStreamingBytes (larger than the L3 caches of the machines here, so no later kernel could have
// read it from cache anyway) with non-temporal stores, when that output is only written, never
// read, by the kernel.
//
// x86 has non-temporal vector stores only for aligned addresses, and LLVM's vectorizer will not
// widen a store it cannot prove aligned. So each part function that writes such an output checks
// at entry that every such output's address is 64-byte aligned (fresh allocations are) and then
// runs a copy of its statements under that alignment assumption; otherwise it runs the plain
// copy. After the O3 pipeline, mark_streaming_stores makes the vector stores that the aligned
// copy got (align >= their size, into memory that is not the stack) non-temporal, and the part
// ends with a sequentially consistent fence (mfence), which orders the non-temporal stores before
// the thread pool's join so that the next kernel sees them. The values stored are unchanged:
// results equal the plain stores' bit for bit.
#pragma once

#include <llvm/IR/Module.h>

#include <cstdint>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::llvm_backend {

inline constexpr int64_t kStreamingBytes = int64_t{32} << 20;

// Per buffer of `k`: whether its stores should stream (a static output of at least
// kStreamingBytes that the kernel never loads). All false on hosts other than x86-64.
std::vector<bool> streaming_buffers(const kir::Kernel& k);

// Marks the aligned vector stores of a module whose kernel has streaming buffers non-temporal
// (the emitter tags such modules); does nothing to other modules.
void mark_streaming_stores(llvm::Module& m);

// The module flag the emitter sets on a kernel with streaming buffers.
inline constexpr const char* kStreamingFlag = "kiln.streaming_stores";

}  // namespace kiln::codegen::llvm_backend
