// PyTorch's result_type: dimensioned tensors outrank zero-dim tensors, which outrank Python-like
// scalars, except that a higher category (bool < integer < floating) always wins.
#pragma once

#include <optional>
#include <span>

#include "kiln/runtime/op_def.h"

namespace kiln {

DType result_type(std::span<const MetaRef> tensors, const Scalar* scalar = nullptr);

}  // namespace kiln
