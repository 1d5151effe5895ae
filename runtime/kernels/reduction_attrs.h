// Attribute structs of the reductions over dims.
#pragma once

#include <optional>

#include "kiln/runtime/attrs.h"

namespace kiln {

// dims empty means all dims (as torch.sum(x) with no dim).
struct ReduceAttrs {
  Shape dims;
  bool keepdim = false;
  bool operator==(const ReduceAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dims", s.dims);
    v("keepdim", s.keepdim);
  }
};

// var: sum((x - mean)^2) / max(0, n - correction) over dims (empty: all).
struct VarAttrs {
  Shape dims;
  double correction = 1;
  bool keepdim = false;
  bool operator==(const VarAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dims", s.dims);
    v("correction", s.correction);
    v("keepdim", s.keepdim);
  }
};

// max/min over one dim (two outputs: values, int64 indices) and argmax/argmin (no dim: the
// index into the flattened input).
struct DimIndexAttrs {
  std::optional<int64_t> dim;
  bool keepdim = false;
  bool operator==(const DimIndexAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
    v("keepdim", s.keepdim);
  }
};

}  // namespace kiln
