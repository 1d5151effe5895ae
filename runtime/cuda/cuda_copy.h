// Copies between the host and CUDA devices, staged through pinned host buffers.
#pragma once

#include "kiln/runtime/tensor.h"

namespace kiln::cuda {

// Copies src into dst (same shape) where at least one of them is on a CUDA device, converting
// to dst's dtype on the host when the dtypes differ. Synchronous, as torch's copy_ with
// non_blocking=False: when it returns, dst holds the data. A CUDA destination must be
// contiguous; a CUDA source may be any view.
void copy_between_devices(const Tensor& dst, const Tensor& src);

}  // namespace kiln::cuda
