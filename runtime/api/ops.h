// The public ops as free functions (the common ones are also Tensor methods), one header per
// family. Each function builds its op's attribute struct and calls the dispatcher; composite
// ops (matmul, reshape, stack, ...) are written in terms of table ops so that tracing and
// autograd see only table ops.
#pragma once

#include "kiln/runtime/api/advanced_index_ops.h"
#include "kiln/runtime/api/attention_ops.h"
#include "kiln/runtime/api/conv_ops.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/linalg_ops.h"
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/api/norm_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/pooling_ops.h"
#include "kiln/runtime/api/random_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/api/sort_ops.h"
