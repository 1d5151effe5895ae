// Registration helpers of the reduction family, called from register_reduction_ops.
#pragma once

#include "kiln/runtime/op_table.h"

namespace kiln {

// max/min over a dim (values, indices) and argmax/argmin (reduction_index_ops.cpp).
void register_index_reduction_ops(OpTable& table);

}  // namespace kiln
