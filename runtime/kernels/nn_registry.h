// Registration helpers of the nn family, called from register_nn_ops.
#pragma once

#include "kiln/runtime/op_table.h"

namespace kiln {

// nll_loss (nn_loss_ops.cpp).
void register_nn_loss_ops(OpTable& table);

// softmax_backward, log_softmax_backward, layer_norm_backward (nn_backward_ops.cpp).
void register_nn_backward_ops(OpTable& table);

}  // namespace kiln
