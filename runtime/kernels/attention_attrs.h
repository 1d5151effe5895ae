// Attributes of the fused attention ops, scaled_dot_product_flash_attention and its backward
// (runtime/kernels/attention_ops.h).
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// `scale` multiplies q k^T (the public function resolves torch's default 1/sqrt(E) before the
// call, so the op always has a number). `has_mask` says whether the last input is attn_mask:
// the ops are variadic, like layer_norm's optional weight.
struct AttentionAttrs {
  double scale = 1.0;
  bool is_causal = false;
  bool has_mask = false;
  bool operator==(const AttentionAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("scale", s.scale);
    v("is_causal", s.is_causal);
    v("has_mask", s.has_mask);
  }
};

}  // namespace kiln
