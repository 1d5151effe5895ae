#include <sys/mman.h>

#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/runtime/allocator.h"

namespace kiln {
namespace {

// Blocks below this size come from malloc's own free lists, which are already fast; above it
// glibc maps fresh pages on every allocation, and those are what the cache keeps.
constexpr size_t kCacheMinBytes = size_t{256} << 10;
constexpr size_t kPageBytes = size_t{4} << 10;
// A cached block serves a request when it is at most this much larger (in eighths), so that
// small tensors do not pin huge blocks.
constexpr size_t kReuseSlackEighths = 10;
constexpr size_t kMaxCachedBytes = size_t{4} << 30;

// Note [Small CPU blocks]
// Blocks up to kSmallMaxBytes (64-byte multiples) are recycled through one free list per size
// with up to kSmallKeepPerSize blocks each (a few MiB in all): aligned_alloc and free of a
// small block cost about as much as a whole small op (a 16-element add) does otherwise. They
// are not counted as cached bytes, hits or misses: those describe the large-block cache.
// Under AddressSanitizer nothing is recycled, so that a use after free stays a report.
constexpr size_t kSmallMaxBytes = 4096;
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kSmallKeepPerSize = 0;
#else
constexpr size_t kSmallKeepPerSize = 32;
#endif
size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// Blocks from this size on are aligned to a 2 MiB huge page and offered to transparent huge
// pages (as PyTorch's THP_MEM_ALLOC_ENABLE does): a row-wise kernel otherwise starts a new 4 KiB
// page, and misses the TLB, every 1024 floats of each operand.
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kHugeMinBytes = size_t{4} << 20;

void* system_allocate(size_t size) {
  if (size < kHugeMinBytes) return std::aligned_alloc(kCpuAlignment, size);
  void* ptr = nullptr;
  if (posix_memalign(&ptr, kHugePageBytes, size) != 0) return nullptr;
  // Advice only: where the kernel has no THP (or declines) the block stays in 4 KiB pages.
  madvise(ptr, size, MADV_HUGEPAGE);
  return ptr;
}

class CachingCpuAllocator final : public Allocator {
 public:
  ~CachingCpuAllocator() override { empty_cache(); }

  void* allocate(size_t nbytes) override {
    size_t size = rounded(nbytes);
    if (size <= kSmallMaxBytes) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<void*>& list = small_free_[size / kCpuAlignment - 1];
      if (!list.empty()) {
        void* ptr = list.back();
        list.pop_back();
        note_allocated(static_cast<int64_t>(size));
        return ptr;
      }
    }
    if (size >= kCacheMinBytes) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_blocks_.lower_bound(size);
      if (it != free_blocks_.end() && it->first * 8 <= size * kReuseSlackEighths) {
        void* ptr = it->second;
        stats_.cached_bytes -= static_cast<int64_t>(it->first);
        block_size_[ptr] = it->first;
        free_blocks_.erase(it);
        stats_.cache_hits++;
        note_allocated(static_cast<int64_t>(size));
        return ptr;
      }
      stats_.cache_misses++;
    }
    void* ptr = system_allocate(size);
    if (ptr == nullptr) {
      // The cache may be what is holding the memory: give it back and try once more.
      empty_cache();
      ptr = system_allocate(size);
    }
    KILN_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating {} bytes", nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (size >= kCacheMinBytes) block_size_[ptr] = size;
    note_allocated(static_cast<int64_t>(size));
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    size_t size = rounded(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.allocated_bytes -= static_cast<int64_t>(size);
    if (size <= kSmallMaxBytes) {
      std::vector<void*>& list = small_free_[size / kCpuAlignment - 1];
      if (list.size() < kSmallKeepPerSize) {
        list.push_back(ptr);
        return;
      }
    }
    if (size >= kCacheMinBytes) {
      auto it = block_size_.find(ptr);
      size_t block = it != block_size_.end() ? it->second : size;
      if (it != block_size_.end()) block_size_.erase(it);
      if (static_cast<size_t>(stats_.cached_bytes) + block <= kMaxCachedBytes) {
        free_blocks_.emplace(block, ptr);
        stats_.cached_bytes += static_cast<int64_t>(block);
        return;
      }
    }
    std::free(ptr);
  }

  Device device() const override { return kCPU; }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, ptr] : free_blocks_)
      std::free(ptr);
    free_blocks_.clear();
    for (std::vector<void*>& list : small_free_) {
      for (void* ptr : list)
        std::free(ptr);
      list.clear();
    }
    stats_.cached_bytes = 0;
  }

  CachingAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

 private:
  static size_t rounded(size_t nbytes) {
    // aligned_alloc wants a multiple of the alignment; zero-byte tensors still get a valid,
    // unique pointer.
    size_t n = round_up(nbytes == 0 ? 1 : nbytes, kCpuAlignment);
    return n >= kCacheMinBytes ? round_up(n, kPageBytes) : n;
  }
  void note_allocated(int64_t size) {
    stats_.allocated_bytes += size;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) {
      stats_.peak_allocated_bytes = stats_.allocated_bytes;
    }
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;
  std::map<void*, size_t> block_size_;  // real size of each large block handed out
  std::array<std::vector<void*>, kSmallMaxBytes / kCpuAlignment> small_free_;
  CachingAllocatorStats stats_;
};

CachingCpuAllocator& instance() {
  // Leaked on purpose: tensors held by static objects may be freed after any static
  // destructor would have run.
  static auto* allocator = new CachingCpuAllocator();
  return *allocator;
}

}  // namespace

Allocator* cpu_allocator() {
  return &instance();
}
CachingAllocatorStats cpu_allocator_stats() {
  return instance().stats();
}
void cpu_allocator_reset_peak() {
  instance().reset_peak();
}
void cpu_empty_cache() {
  instance().empty_cache();
}

}  // namespace kiln
