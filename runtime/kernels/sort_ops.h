// What the CPU and CUDA kernels of sort, argsort, topk, cumsum and cumprod share: both work on
// the row form of the index reductions (index_reduction_rows: the dim moved last, contiguous,
// in a compute dtype) and write a result in that form back into the op's output.
#pragma once

#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

// Rows for cumsum/cumprod: floats accumulate in double (as torch's CPU kernel, whose
// accumulator for float is double), integers and bool in int64.
IndexReductionRows scan_rows(const OpDef& op, const Tensor& input, int64_t dim);

// Writes `rows` ([outer, n] in the row form's order) into `out`, whose `dim` has size n.
void store_rows(const Tensor& out, int64_t dim, const Tensor& rows);

// How many entries of each row topk keeps (a 0-dim input keeps its one element, as torch).
int64_t topk_count(const Tensor& input, int64_t k);

}  // namespace kiln
