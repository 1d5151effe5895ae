// The random (dropout) op family.
#include "kiln/runtime/op_table.h"

namespace kiln {

void register_random_ops(OpTable&) {}

}  // namespace kiln
