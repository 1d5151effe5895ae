// Attributes of the fused attention ops, scaled_dot_product_flash_attention and its backward
// (runtime/kernels/attention_ops.h).
#pragma once

#include <cmath>
#include <optional>

#include "kiln/base/scalar.h"
#include "kiln/runtime/attrs.h"

namespace kiln {

// `scale` multiplies q k^T; without one, torch's default 1/sqrt(E) at the call's head dim E, so
// that a graph traced with a symbolic E serves every E (Note [Symbolic sizes]). `has_mask` says
// whether the last input is attn_mask: the ops are variadic, like layer_norm's optional weight.
struct AttentionAttrs {
  std::optional<Scalar> scale;
  bool is_causal = false;
  bool has_mask = false;
  bool operator==(const AttentionAttrs&) const = default;
  // The scale for a head dim of `e`.
  double scale_for(int64_t e) const {
    return scale ? scale->to_double() : 1.0 / std::sqrt(static_cast<double>(e));
  }
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("scale", s.scale);
    v("is_causal", s.is_causal);
    v("has_mask", s.has_mask);
  }
};

}  // namespace kiln
