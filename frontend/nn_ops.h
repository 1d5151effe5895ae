// Normalization and loss functions.
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {}  // namespace kiln
