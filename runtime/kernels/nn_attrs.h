// Attribute structs of the normalization and loss ops.
#pragma once

#include <string>

#include "kiln/runtime/attrs.h"

namespace kiln {

// softmax / log_softmax over one dim.
struct SoftmaxAttrs {
  int64_t dim = -1;
  bool operator==(const SoftmaxAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
  }
};

// layer_norm is variadic: its inputs are (input, [weight], [bias]) and has_weight / has_bias
// say which of the optional affine tensors follow the input, in that order. One table entry
// therefore covers torch's four forms without undefined-tensor inputs.
struct LayerNormAttrs {
  Shape normalized_shape;
  double eps = 1e-5;
  bool has_weight = false;
  bool has_bias = false;
  bool operator==(const LayerNormAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("normalized_shape", s.normalized_shape);
    v("eps", s.eps);
    v("has_weight", s.has_weight);
    v("has_bias", s.has_bias);
  }
};

// nll_loss: reduction is "none", "mean" or "sum"; targets equal to ignore_index contribute
// nothing (and are not counted by "mean").
struct NllLossAttrs {
  std::string reduction = "mean";
  int64_t ignore_index = -100;
  bool operator==(const NllLossAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("reduction", s.reduction);
    v("ignore_index", s.ignore_index);
  }
};

}  // namespace kiln
