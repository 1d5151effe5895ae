// Attribute structs of the random op family (dropout).
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// dropout in training mode: the drop probability and the Philox stream it reads
// (Note [Random streams]); a recorded call replays the same mask.
struct DropoutAttrs {
  double p = 0.5;
  int64_t seed = 0;
  int64_t offset = 0;
  bool operator==(const DropoutAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("p", s.p);
    v("seed", s.seed);
    v("offset", s.offset);
  }
};

}  // namespace kiln
