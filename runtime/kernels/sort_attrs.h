// Attribute structs of the ordering ops (sort, argsort, topk) and the scans (cumsum, cumprod).
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// sort and argsort. Kiln always sorts stably (ties keep their input order, also descending), so
// `stable` only exists for torch's signature.
struct SortAttrs {
  int64_t dim = -1;
  bool descending = false;
  bool stable = false;
  bool operator==(const SortAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
    v("descending", s.descending);
    v("stable", s.stable);
  }
};

// The k largest (or smallest) along dim, ties in input order; always returned sorted.
struct TopkAttrs {
  int64_t k = 1;
  int64_t dim = -1;
  bool largest = true;
  bool sorted = true;
  bool operator==(const TopkAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("k", s.k);
    v("dim", s.dim);
    v("largest", s.largest);
    v("sorted", s.sorted);
  }
};

// cumsum and cumprod. torch's `dtype=` argument is a conversion of the input before the op
// (runtime/api/sort_ops.h), so the op itself has none.
struct ScanAttrs {
  int64_t dim = 0;
  bool operator==(const ScanAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
  }
};

}  // namespace kiln
