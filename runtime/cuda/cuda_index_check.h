// The device-side index check of the eager CUDA index kernels (Note [Eager CUDA index kernels]
// in codegen/cuda/eager_indexing.cpp): a zeroed two-word buffer the kernel reports a bad index
// in, read back after the launch.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/tensor.h"

namespace kiln::cuda {

class DeviceIndexCheck {
 public:
  explicit DeviceIndexCheck(Device device)
      : words_(empty_tensor({codegen::cuda::kBadIndexWords}, kInt64, device)) {
    words_.zero_();
  }
  // The kernel argument: a pointer to the device buffer.
  void* pointer() const { return words_.impl()->data(); }
  // An index the kernel found out of range, if any. Reads the buffer back, which waits for the
  // kernel.
  std::optional<int64_t> bad_index() const {
    std::vector<int64_t> w = words_.to(kCPU).to_vector<int64_t>();
    if (w[0] == 0) return std::nullopt;
    return w[1];
  }

 private:
  Tensor words_;
};

}  // namespace kiln::cuda
