// Attribute structs of the activations, round and lerp_scalar (pointwise_activation_ops.cpp,
// pointwise_rounding_ops.cpp), with torch's defaults.
#pragma once

#include <cstdint>

#include "kiln/runtime/attrs.h"

namespace kiln {

struct LeakyReluAttrs {
  double negative_slope = 0.01;
  bool operator==(const LeakyReluAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("negative_slope", s.negative_slope);
  }
};

struct EluAttrs {
  double alpha = 1.0;
  bool operator==(const EluAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("alpha", s.alpha);
  }
};

struct SoftplusAttrs {
  double beta = 1.0;
  double threshold = 20.0;
  bool operator==(const SoftplusAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("beta", s.beta);
    v("threshold", s.threshold);
  }
};

struct HardtanhAttrs {
  double min_val = -1.0;
  double max_val = 1.0;
  bool operator==(const HardtanhAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("min_val", s.min_val);
    v("max_val", s.max_val);
  }
};

// round: to `decimals` decimal places (negative: to tens, hundreds, ...).
struct RoundAttrs {
  int64_t decimals = 0;
  bool operator==(const RoundAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("decimals", s.decimals);
  }
};

// lerp_scalar(self, end): the weight as a number.
struct LerpAttrs {
  Scalar weight = 0.5;
  bool operator==(const LerpAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("weight", s.weight);
  }
};

}  // namespace kiln
