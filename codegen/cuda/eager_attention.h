// CUDA kernels of scaled_dot_product_flash_attention and its backward (Note [Eager CUDA flash
// attention] in eager_attention.cpp). Building the source needs neither NVRTC nor a GPU.
#pragma once

#include <cstdint>

#include "kiln/codegen/cuda/cuda_emitter.h"

namespace kiln::codegen::cuda {

// Threads per block: one per query (or key) of a tile, 64 rows per tile.
inline constexpr int kEagerAttentionTile = 64;

// The head-dim bound D of the kernel for head dims e (query/key) and ev (value): the least of
// 32, 64, 128 and 256 that holds both, or 0 when they exceed 256.
int eager_attention_head_dim(int64_t e, int64_t ev);
// Keys (or queries) a block stages in shared memory at a time for bound D.
int eager_attention_chunk(int head_dim);

// One entry, kiln_eager_attention_fwd_<dtype>_d<D>_forward(out, lse, q, k, v, mask, offs, st,
// long long batch, L, S, E, Ev, <compute> scale, int causal, int mask_kind): BlockPerRow over
// batch * ceil(L / 64) query tiles. offs [4 * batch] are the element offsets of each batch
// entry of q, k, v and the mask; st [8] the row and column strides of the same four;
// mask_kind is 0 (none), 1 (bool, as bytes) or 2 (additive, of dtype). out and lse are
// contiguous; lse is of the compute type (float32, or float64 for float64).
CudaSource eager_attention_forward_source(DType dtype, int head_dim);

// Two entries with the same parameters (dq, dk, dv, dsum, grad_out, q, k, v, out, lse, mask,
// offs, st, batch, L, S, E, Ev, scale, causal, mask_kind), launched in order: _backward_dq over
// batch * ceil(L / 64) query tiles (it writes dq and dsum, a [batch, L] workspace of the compute
// type), then _backward_dkdv over batch * ceil(S / 64) key tiles. offs [6 * batch] and st [12]
// cover grad_out, q, k, v, out and the mask; the gradients are contiguous.
CudaSource eager_attention_backward_source(DType dtype, int head_dim);

}  // namespace kiln::codegen::cuda
