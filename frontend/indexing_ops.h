// Indexing: embedding, index_select, gather, scatter_add.
#pragma once

#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {}  // namespace kiln
