// Attribute structs of the copy, fill and conversion ops.
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

struct FillAttrs {
  Scalar value = 0;
  bool operator==(const FillAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("value", s.value);
  }
};

struct DTypeAttrs {  // convert: the dtype of the copy
  DType dtype = kFloat32;
  bool operator==(const DTypeAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dtype", s.dtype);
  }
};

}  // namespace kiln
