// scaled_dot_product_attention, torch.nn.functional's name, arguments and defaults.
#pragma once

#include <optional>
#include <source_location>

#include "kiln/runtime/tensor.h"

namespace kiln {

// softmax(query key^T * scale + mask) value, for query [..., L, E], key [..., S, E] and value
// [..., S, Ev] (batch dims broadcast), giving [..., L, Ev] in query's dtype (float32, float64,
// float16 or bfloat16; key and value of the same dtype).
// - attn_mask (optional, broadcastable to [..., L, S]): bool, where true means the key takes part,
//   or floating, added to the scores (converted to query's dtype).
// - is_causal: query i sees keys j <= i (torch's top-left tril(ones(L, S))); not with attn_mask.
// - scale: defaults to 1 / sqrt(E).
// - dropout_p: the probability of zeroing each attention weight (the kept ones scaled by
//   1 / (1 - p)), always applied when > 0, as torch's function does.
// A query row whose keys are all masked gives 0 and no gradient, as torch's math path (its safe
// softmax, torch 2.5 and later).
// It runs the fused flash-attention ops (Note [Flash attention]), which never form the L x S
// score matrix, except with dropout_p > 0 (random numbers inside the fused kernels are issue
// 39) or an additive attn_mask that requires grad (its gradient is an L x S tensor anyway):
// those run the composite matmul, mask, softmax, dropout, matmul. The fused path's gradient has
// no double backward (as torch's flash attention); the composite's has.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    std::source_location loc = std::source_location::current());

}  // namespace kiln
