// CUDA kernels of the random ops and arange (Note [Random streams] in base/philox.h): every
// element computed from (seed, offset, i) by base/philox_core.h's functions, whose text the
// kernels compile. Building the source needs neither NVRTC nor a GPU.
#pragma once

#include "kiln/codegen/cuda/cuda_emitter.h"

namespace kiln::codegen::cuda {

enum class EagerRandom : uint8_t {
  Uniform,  // rand: kiln_eager_rand_<dtype>(out, numel, seed, offset)
  Normal,   // randn: kiln_eager_randn_<dtype>(out, numel, seed, offset)
  Dropout,  // kiln_eager_dropout_<dtype>(out, in, numel, seed, offset, p, scale), in contiguous
};

// One Elementwise entry over `numel` contiguous output elements (grid-stride; CudaEntry::work is
// 0: the launch gives it). seed and offset are unsigned long long, p and scale double.
CudaSource eager_random_source(EagerRandom kind, DType dtype);

// kiln_eager_arange_<dtype>(out, numel, double start, double step): element i is
// fma(i, step, start) (one rounding) converted to the dtype, as the CPU kernel.
CudaSource eager_arange_source(DType dtype);

}  // namespace kiln::codegen::cuda
