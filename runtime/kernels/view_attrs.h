// Attribute structs of the view ops.
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

struct SizeAttrs {  // view, expand
  Shape size;
  bool operator==(const SizeAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("size", s.size);
  }
};

struct DimsAttrs {  // permute; squeeze (empty: every size-1 dim)
  Shape dims;
  bool operator==(const DimsAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dims", s.dims);
  }
};

struct DimAttrs {  // unsqueeze, cat
  int64_t dim = 0;
  bool operator==(const DimAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
  }
};

struct TransposeAttrs {
  int64_t dim0 = 0;
  int64_t dim1 = 1;
  bool operator==(const TransposeAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim0", s.dim0);
    v("dim1", s.dim1);
  }
};

struct SliceAttrs {
  int64_t dim = 0;
  int64_t start = 0;
  int64_t end = INT64_MAX;
  int64_t step = 1;
  bool operator==(const SliceAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
    v("start", s.start);
    v("end", s.end);
    v("step", s.step);
  }
};

struct SelectAttrs {
  int64_t dim = 0;
  int64_t index = 0;
  bool operator==(const SelectAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("dim", s.dim);
    v("index", s.index);
  }
};

// Resolves one -1 entry of a requested view/reshape size against numel, or throws.
Shape infer_size(std::string_view op, ShapeRef requested, int64_t numel);

// Strides that let `new_sizes` view memory laid out with (sizes, strides), or an empty
// optional when no such strides exist (a reshape must then copy).
std::optional<Shape> view_strides(ShapeRef sizes, ShapeRef strides, ShapeRef new_sizes);

}  // namespace kiln
