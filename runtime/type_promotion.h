// PyTorch's result_type: dimensioned tensors outrank zero-dim tensors, which outrank Python-like
// scalars, except that a higher category (bool < integer < floating) always wins.
#pragma once

#include <optional>
#include <span>

#include "kiln/runtime/op_def.h"

namespace kiln {

DType result_type(std::span<const MetaRef> tensors, const Scalar* scalar = nullptr);
// Throws naming the op when `value` cannot be stored in `dtype` without overflow, as torch
// does: an integer dtype takes finite values within its range (a fraction truncates); a
// floating dtype takes inf and NaN and finite values up to its largest finite one. Bool takes
// anything.
void check_scalar_fits(std::string_view op, const Scalar& value, DType dtype);

}  // namespace kiln
