// Reductions over dims (an empty dims list means every dim).
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- reductions (empty dims: all dims) ----
Tensor sum(const Tensor& x, Shape dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, Shape dims = {}, bool keepdim = false);

}  // namespace kiln
