// Attribute structs of the factory ops (no tensor inputs: device and dtype are attributes).
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// The sizes may be symbolic in a graph (Note [Symbolic size attributes], view_attrs.h):
// zeros_like(x) inside a symbolic trace records x's sizes over the symbols.
struct FullAttrs {  // full; empty ignores `value`
  SymShape size;
  Scalar value = 0;
  DType dtype = kFloat32;
  Device device;
  bool operator==(const FullAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("size", s.size);
    v("value", s.value);
    v("dtype", s.dtype);
    v("device", s.device);
  }
};

struct ArangeAttrs {
  Scalar start = 0;
  Scalar end = 0;
  Scalar step = 1;
  DType dtype = kInt64;
  Device device;
  bool operator==(const ArangeAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("start", s.start);
    v("end", s.end);
    v("step", s.step);
    v("dtype", s.dtype);
    v("device", s.device);
  }
};

// rand/randn: Note [Random streams]. The generator state is an attribute, so a recorded call
// replays the same numbers.
struct RandomAttrs {
  Shape size;
  DType dtype = kFloat32;
  Device device;
  int64_t seed = 0;
  int64_t offset = 0;
  bool operator==(const RandomAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("size", s.size);
    v("dtype", s.dtype);
    v("device", s.device);
    v("seed", s.seed);
    v("offset", s.offset);
  }
};

// Number of elements arange(start, end, step) produces; throws naming the bad argument.
int64_t arange_length(const ArangeAttrs& a);

}  // namespace kiln
