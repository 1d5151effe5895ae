// The indexing op family.
#include "kiln/runtime/op_table.h"

namespace kiln {

void register_indexing_ops(OpTable&) {}

}  // namespace kiln
