// Attribute struct of the reductions over dims.
#pragma once

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

}  // namespace kiln
