// Attribute structs of the pointwise ops (shared by the frontend, which builds them).
#pragma once

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

}  // namespace kiln
