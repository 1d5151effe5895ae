// TensorType: what the IR knows about a Value. Every Value of the graph IR is a tensor; scalars
// travel as typed attributes.
#pragma once

#include <string>

#include "kiln/base/device.h"
#include "kiln/base/dtype.h"
#include "kiln/base/shape.h"

namespace kiln {
class Tensor;
}

namespace kiln::ir {

// Note [Static shapes]
// Sizes are static integers today. Symbolic dims (dynamic shapes) will extend `sizes` with a
// symbol per dim; code that needs concrete sizes calls `sizes` and should keep going through
// TensorType so that the extension has one place to land.
struct TensorType {
  DType dtype = kFloat32;
  Device device;
  Shape sizes;
  // Empty means contiguous. A view's type keeps its strides because the op after it (and the
  // verifier, through the view's shape rule) depends on them.
  Shape strides;
  bool requires_grad = false;

  static TensorType of(const Tensor& t);  // strides are dropped when contiguous

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const { return shape_numel(sizes); }
  bool is_contiguous() const { return strides.empty(); }
  // Explicit strides: the stored ones, or the contiguous ones.
  Shape effective_strides() const;

  // "f32[4, 3]", then " strided[1, 4]", " cuda:0", " requires_grad" when they apply.
  std::string str() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// The short dtype names of the text format (base/dtype.h), under the IR's namespace too.
using kiln::dtype_from_short_name;
using kiln::dtype_short_name;

}  // namespace kiln::ir
