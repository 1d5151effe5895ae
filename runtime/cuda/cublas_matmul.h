// Matrix products on CUDA devices through cuBLAS: the CUDA kernels of mm and bmm (matmul and
// linear are composed from them in the frontend), registered by register_cuda_linalg_kernels
// (cuda_kernels.h).
#pragma once

#include <string>

namespace kiln::cuda {

// Loads cuBLAS if it is not loaded yet (Note [cuBLAS loaded on first use]) and returns why it
// could not be, or "" when it is ready. Needs no device. In a build without CUDA: the reason.
std::string cublas_load_error();

// Whether float32 products may round their inputs to TF32 on tensor cores (about 10 bits of
// mantissa, several times the throughput on Ampere and later). Off by default, so float32
// results match the CPU's to float rounding; as torch.backends.cuda.matmul.allow_tf32. float16,
// bfloat16 and float64 products are unaffected.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace kiln::cuda
