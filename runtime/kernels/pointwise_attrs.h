// Attribute structs of the pointwise ops (shared by the frontend, which builds them).
#pragma once

#include <optional>
#include <string>

#include "kiln/runtime/attrs.h"

namespace kiln {

// add/sub: out = self op alpha * other.
struct AlphaAttrs {
  Scalar alpha = 1;
  bool operator==(const AlphaAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("alpha", s.alpha);
  }
};

// The scalar forms: add_scalar(self) {other, alpha}, mul_scalar(self) {other}, ...
struct ScalarOperandAttrs {
  Scalar other = 0;
  Scalar alpha = 1;
  bool operator==(const ScalarOperandAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("other", s.other);
    v("alpha", s.alpha);
  }
};

// A scalar second operand without alpha: pow_scalar's exponent, the comparisons' other side.
struct ScalarOtherAttrs {
  Scalar other = 0;
  bool operator==(const ScalarOtherAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("other", s.other);
  }
};

// gelu: approximate is "none" (the erf form) or "tanh".
struct GeluAttrs {
  std::string approximate = "none";
  bool operator==(const GeluAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("approximate", s.approximate);
  }
};

// clamp / clamp_: at least one bound is present.
struct ClampAttrs {
  std::optional<Scalar> min;
  std::optional<Scalar> max;
  bool operator==(const ClampAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("min", s.min);
    v("max", s.max);
  }
};

// masked_fill / masked_fill_: the value written where the mask is true.
struct MaskedFillAttrs {
  Scalar value = 0;
  bool operator==(const MaskedFillAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("value", s.value);
  }
};

}  // namespace kiln
