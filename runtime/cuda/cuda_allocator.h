// Device memory for CUDA tensors and pinned host memory for transfers, both through the
// caching allocator (Note [Caching device allocator]). Device blocks are keyed by the current
// stream of their device when they are allocated.
#pragma once

#include <cstddef>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/block_caching_allocator.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// The Allocator that Storage uses for tensors on cuda:<device>.
Allocator* cuda_allocator(int device);
BlockAllocatorStats cuda_memory_stats(int device = 0);
void cuda_reset_peak_memory_stats(int device = 0);
// Returns every entirely free cached segment of every device (and of pinned host memory) to
// the driver.
void cuda_empty_cache();

namespace cuda {
// Marks t's memory as used by work queued on `stream` too (PyTorch's Tensor.record_stream):
// once t's storage is freed, the caching allocator does not hand the memory out again until
// that work is done. For a tensor made on one stream and used on another. Throws kiln::Error
// when t is not on the stream's device.
void record_stream(const Tensor& t, const Stream& stream);

// Page-locked host memory for staging copies (cuMemHostAlloc), cached.
void* pinned_allocate(size_t bytes);
void pinned_free(void* ptr);
}  // namespace cuda

}  // namespace kiln
