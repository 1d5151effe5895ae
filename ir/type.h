// TensorType: what the IR knows about a Value. Every Value of the graph IR is a tensor; scalars
// travel as typed attributes.
#pragma once

#include <string>

#include "kiln/base/device.h"
#include "kiln/base/dtype.h"
#include "kiln/base/shape.h"
#include "kiln/base/sym_int.h"

namespace kiln {
class Tensor;
}

namespace kiln::ir {

// Note [Symbolic types]
// A type whose sizes are symbols (Note [Symbolic sizes], base/sym_int.h) keeps them in
// `sym_sizes` (and its strides, when not contiguous, in `sym_strides`), while `sizes` and
// `strides` hold their values at the graph's symbol hints (Graph::symbol_hints): the sizes of
// the call that was traced. Code that only estimates (byte counts for the partition) may read
// the hints; code whose result depends on the sizes must read the symbols or refuse the graph.
// Passes that have not been taught symbols are refused by the pass manager on a symbolic graph
// (PassInfo::symbolic), so a hint never ends up in a kernel by accident.
struct TensorType {
  DType dtype = kFloat32;
  Device device;
  Shape sizes;
  // Empty means contiguous. A view's type keeps its strides because the op after it (and the
  // verifier, through the view's shape rule) depends on them.
  Shape strides;
  bool requires_grad = false;
  // Set only when some size is symbolic (Note [Symbolic types]); then as long as `sizes`.
  SymShape sym_sizes;
  // Set only for a symbolic type with explicit strides; then as long as `sizes`.
  SymShape sym_strides;

  static TensorType of(const Tensor& t);  // strides are dropped when contiguous

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const { return shape_numel(sizes); }
  bool is_contiguous() const { return strides.empty(); }
  // Explicit strides: the stored ones, or the contiguous ones.
  Shape effective_strides() const;

  bool is_symbolic() const { return !sym_sizes.empty(); }
  // The sizes and explicit strides as symbolic sizes (integers for a static type).
  SymShape symbolic_sizes() const;
  SymShape symbolic_strides() const;
  // Sets `sizes` and `strides` to the symbolic ones' values at `hints` (symbol k's at
  // hints[k]); throws kiln::Error when a symbol has no hint.
  void evaluate_hints(std::span<const int64_t> hints);

  // "f32[4, 3]", then " strided[1, 4]", " cuda:0", " requires_grad" when they apply; a symbolic
  // type prints its symbols: "f32[s0, 3]".
  std::string str() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// Whether `strides` are the row-major ones for `sizes`, ignoring the strides of size-1 dims (as
// strides_are_contiguous does for integers): a symbolic type stores no strides then.
bool symbolic_strides_are_contiguous(std::span<const SymInt> sizes,
                                     std::span<const SymInt> strides);

// The short dtype names of the text format (base/dtype.h), under the IR's namespace too.
using kiln::dtype_from_short_name;
using kiln::dtype_short_name;

}  // namespace kiln::ir
