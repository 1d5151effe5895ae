// The normalization and loss op family.
#include "kiln/runtime/op_table.h"

namespace kiln {

void register_nn_ops(OpTable&) {}

}  // namespace kiln
