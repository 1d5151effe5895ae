// Eager CUDA kernels of the pointwise ops (runtime/cuda/cuda_pointwise_ops.cpp), registered into
// the op table by register_cuda_pointwise_kernels (op_table.h).
#pragma once

#include <span>

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/runtime/op_def.h"

namespace kiln {

// The CUDA C of the kernel the eager CUDA kernel of `op` builds for a call with these inputs
// (the op's schema inputs) and output dtype. Needs neither NVRTC nor a GPU; tests compile it.
codegen::cuda::CudaSource cuda_pointwise_source(const OpDef& op, const void* attrs, DType output,
                                                std::span<const MetaRef> inputs);

// True for the ops whose CUDA kernel is this file's: every op with an expression, their
// in-place twins, fill_, full and copy_.
bool has_cuda_pointwise_kernel(const OpDef& op);

}  // namespace kiln
