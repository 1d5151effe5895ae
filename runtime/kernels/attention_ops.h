// What the CPU and CUDA kernels of the fused attention ops share (Note [Flash attention] in
// attention_cpu_kernels.cpp): the problem's sizes and where each batch entry of an input starts.
//
//   scaled_dot_product_flash_attention(query, key, value, [attn_mask]) -> (out, logsumexp)
//   scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
//                                               [attn_mask]) -> (grad_query, grad_key, grad_value)
//
// query [..., L, E], key [..., S, E], value [..., S, Ev] with the same batch dims `...`;
// attn_mask (AttentionAttrs::has_mask) is [..., L, S], bool (true takes part) or query's dtype
// (added to the scores), usually an expanded view with zero strides. out is [..., L, Ev] in
// query's dtype, logsumexp [..., L] in float32 (float64 for float64 inputs): the log of each
// row's softmax normalizer, which the backward recomputes the probabilities from.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/runtime/op_table.h"

namespace kiln {

struct AttentionSizes {
  int64_t batch = 1;  // product of the batch dims
  int64_t L = 0, S = 0, E = 0, Ev = 0;
};
AttentionSizes attention_sizes(const Tensor& q, const Tensor& k, const Tensor& v);

// Element offset from t's data pointer of each batch entry (row-major over t's leading
// `batch_dims` dims), through t's strides: broadcast and transposed inputs need no copy.
std::vector<int64_t> attention_batch_offsets(const Tensor& t, int64_t batch_dims);

// The dtype logsumexp is kept in: float64 for float64 inputs, float32 otherwise.
inline DType attention_lse_dtype(DType q) {
  return q == kFloat64 ? kFloat64 : kFloat32;
}

}  // namespace kiln

namespace kiln {

// The CPU kernels (attention_cpu_kernels.cpp), registered by register_attention_ops.
void flash_attention_cpu(const OpDef& op, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs);
void flash_attention_backward_cpu(const OpDef& op, std::span<const Tensor> outputs,
                                  std::span<const Tensor> inputs, const void* attrs);

}  // namespace kiln
