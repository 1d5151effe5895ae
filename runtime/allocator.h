// Allocators hand out raw device memory to Storage. The CPU allocator aligns to 64 bytes (a
// cache line and an AVX-512 vector) and keeps freed large blocks for reuse, so that a training
// step that allocates the same buffers every iteration does not page-fault each fresh one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/base/device.h"

namespace kiln {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual Device device() const = 0;
};

struct CachingAllocatorStats {
  int64_t allocated_bytes = 0;       // handed out and not yet freed
  int64_t peak_allocated_bytes = 0;  // highest allocated_bytes since the last reset
  int64_t cached_bytes = 0;          // freed blocks kept for reuse
  int64_t cache_hits = 0;            // large allocations served from the cache
  int64_t cache_misses = 0;          // large allocations that went to the system
};

inline constexpr size_t kCpuAlignment = 64;

Allocator* cpu_allocator();
CachingAllocatorStats cpu_allocator_stats();
void cpu_allocator_reset_peak();
// Returns every cached CPU block to the system.
void cpu_empty_cache();

}  // namespace kiln
