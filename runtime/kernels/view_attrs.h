// Attribute structs of the view ops.
#pragma once

#include "kiln/runtime/attrs.h"

namespace kiln {

// Note [Symbolic size attributes]
// view's and expand's sizes are a SymShape: in a graph traced with symbolic sizes they may be
// expressions over the symbols (x.view_symint({x.sym_size(0), -1})). The tracer hands the eager
// kernel their values at the traced sizes and records the expressions; the plan interpreter
// evaluates them at each call's bound symbols (ir::evaluate_attrs). So an eager kernel, and the
// op's integer shape rule, only ever see integers here; the rule over symbols reads them as
// they are.
struct SizeAttrs {  // view, expand
  SymShape size;
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
  SymInt start = 0;  // symbolic in a graph where a bound is a size (x[:x.size(0)])
  SymInt end = INT64_MAX;
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

// slice_backward / select_backward: the gradient of slice / select, a tensor of the sliced
// input's sizes that is zero outside the slice and holds `grad` inside it. They are table ops
// rather than "zeros, then copy_ into a view" because autograd cannot record an in-place write
// into a view of a temporary, so a twice-differentiable backward needs an out-of-place op.
// input_sizes is a SymShape (Note [Symbolic size attributes]): a backward traced over symbols
// keeps the sliced input's sizes as expressions.
struct SliceBackwardAttrs {
  SymShape input_sizes;
  int64_t dim = 0;
  SymInt start = 0;
  SymInt end = INT64_MAX;
  int64_t step = 1;
  bool operator==(const SliceBackwardAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("input_sizes", s.input_sizes);
    v("dim", s.dim);
    v("start", s.start);
    v("end", s.end);
    v("step", s.step);
  }
};

struct SelectBackwardAttrs {
  SymShape input_sizes;
  int64_t dim = 0;
  int64_t index = 0;
  bool operator==(const SelectBackwardAttrs&) const = default;
  template <class S, class V>
  static void visit(S& s, V&& v) {
    v("input_sizes", s.input_sizes);
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
