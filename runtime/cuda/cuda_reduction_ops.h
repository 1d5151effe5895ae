// Eager CUDA kernels of the reductions over dims (runtime/cuda/cuda_reduction_ops.cpp):
// sum, mean, prod, amax and amin, registered by register_cuda_reduction_kernels (cuda_kernels.h).
#pragma once

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/eager_reduction.h"
#include "kiln/runtime/kernels/reduction_programs.h"
#include "kiln/runtime/op_def.h"

namespace kiln {

// How the call op(x) -> out with these ReduceAttrs is laid out: the merged kept and reduced
// dims, and which form (a block or a thread per output) runs it.
codegen::cuda::EagerReductionLayout reduction_launch_layout(const OpDef& op, const Tensor& x,
                                                            const Tensor& out, const void* attrs);

// The size parameters of a reduction program (Note [Reduction programs]) for a launch laid out
// by make_eager_reduction_layout (merged kept and reduced dims).
ReductionLayout reduction_layout_of(const codegen::cuda::EagerReductionLayout& layout);

// True for the ops whose CUDA kernel is this file's.
bool has_cuda_reduction_kernel(const OpDef& op);

}  // namespace kiln
