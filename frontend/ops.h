// The public ops as free functions (the common ones are also Tensor methods), one header per
// family. Each function builds its op's attribute struct and calls the dispatcher; composite
// ops (matmul, reshape, stack, ...) are written in terms of table ops so that tracing and
// autograd see only table ops.
#pragma once

#include "kiln/frontend/indexing_ops.h"
#include "kiln/frontend/linalg_ops.h"
#include "kiln/frontend/nn_ops.h"
#include "kiln/frontend/pointwise_ops.h"
#include "kiln/frontend/random_ops.h"
#include "kiln/frontend/reduction_ops.h"
#include "kiln/frontend/shape_ops.h"
