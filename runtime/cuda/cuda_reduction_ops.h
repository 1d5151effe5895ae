// Eager CUDA kernels of the reductions over dims (runtime/cuda/cuda_reduction_ops.cpp):
// sum, mean, prod, amax and amin, registered by register_cuda_reduction_kernels (cuda_kernels.h).
#pragma once

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/runtime/op_def.h"

namespace kiln {

// The CUDA C of reduction `op`'s eager kernel for an input of dtype `input` and an output of
// dtype `output` (the op's dtype rule). Needs neither NVRTC nor a GPU; tests compile it.
codegen::cuda::CudaSource cuda_reduction_source(const OpDef& op, DType input, DType output);

// True for the ops whose CUDA kernel is this file's.
bool has_cuda_reduction_kernel(const OpDef& op);

}  // namespace kiln
