// Helpers for the runtime suite's CUDA tests: the skip for machines without a device.
#pragma once

#include <gtest/gtest.h>

#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"

// Skips the test, naming why, when no CUDA device can be used.
#define KILN_REQUIRE_CUDA_DEVICE()                                                             \
  if (!kiln::cuda_is_available())                                                              \
  GTEST_SKIP() << "no CUDA device ("                                                           \
               << (kiln::cuda::driver_loaded() ? "driver loaded" : kiln::cuda::driver_error()) \
               << ")"

namespace kiln_test {

inline const kiln::Device kGpu = kiln::Device::cuda(0);

}  // namespace kiln_test
