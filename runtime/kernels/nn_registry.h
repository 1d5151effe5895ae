// Registration helpers of the nn family, called from register_nn_ops.
#pragma once

#include "kiln/runtime/op_table.h"

namespace kiln {

// nll_loss (nn_loss_ops.cpp).
void register_nn_loss_ops(OpTable& table);

}  // namespace kiln
