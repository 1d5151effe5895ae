// The one header users include: <kiln/kiln.h>. See API.md for the public contract.
#pragma once

#include "kiln/config.h"
#include "kiln/frontend/autograd.h"
#include "kiln/frontend/checkpoint.h"
#include "kiln/frontend/custom_function.h"
#include "kiln/frontend/gradcheck.h"
#include "kiln/frontend/factories.h"
#include "kiln/frontend/ops.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/dtype.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/scalar.h"
#include "kiln/runtime/tensor.h"
#include "kiln/runtime/tensor_data.h"
#include "kiln/runtime/tensor_options.h"
#include "kiln/runtime/thread_pool.h"
