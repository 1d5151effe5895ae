// Random ops on tensors: dropout and the *_like samplers.
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {}  // namespace kiln
