// A caching allocator over a slow memory source (CUDA device memory, pinned host memory): it
// keeps freed blocks for reuse, splits big blocks and merges freed neighbours, and keeps
// statistics. See Note [Caching device allocator].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// Note [Caching device allocator]
// cuMemAlloc and cuMemFree cost tens of microseconds and cuMemFree synchronizes the device, so
// device memory (and pinned host memory) is cached, following PyTorch's CUDACachingAllocator:
// - Requests are rounded up to 512 bytes. Those up to 1 MiB come from 2 MiB segments that many
//   blocks share (the small pool); larger ones from segments of their own size rounded up to
//   2 MiB (the large pool).
// - A request takes the best-fitting free block of its pool that was used on the same stream.
//   Memory freed on one stream may still be read by kernels queued on it; work on the same
//   stream is ordered after them, work on another stream is not, so it does not get the block.
// - A block bigger than the request is split, and the rest stays free (in the small pool from
//   512 bytes on, in the large pool above 1 MiB, so that big blocks are not cut into slivers).
//   A freed block merges with free neighbours of its segment.
// - When the source is out of memory, the segments that are entirely free go back to it and
//   the request is tried once more; after that the error names the request and what the cache
//   holds. empty_cache() returns every entirely free segment.
// - record_stream(ptr, s) marks a block as used by kernels on stream s as well (PyTorch's
//   Tensor.record_stream): when it is freed, an event is recorded on each such stream, and the
//   block is held back (still counted as allocated) until every event has completed; the pending
//   blocks are checked at each allocation and at empty_cache(), and waited for before an
//   out-of-memory retry.

// Where the allocator gets its segments from.
class MemorySource {
 public:
  virtual ~MemorySource() = default;
  // nullptr when out of memory; other failures throw kiln::Error.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr, size_t bytes) = 0;
  // How errors name the memory: "cuda:0", "pinned host memory".
  virtual std::string name() const = 0;
  // Stream-ordered reuse (record_stream): a marker of the work queued on `stream` so far, whether
  // that work has finished, and the marker's release. A source without streams finishes at once.
  virtual void* record_event(uintptr_t stream) {
    (void)stream;
    return nullptr;
  }
  virtual bool event_done(void* event) {
    (void)event;
    return true;
  }
  virtual void destroy_event(void* event) { (void)event; }
  virtual void wait_event(void* event) { (void)event; }
};

struct BlockAllocatorStats {
  int64_t allocated_bytes = 0;       // in blocks handed out (the rounded sizes)
  int64_t peak_allocated_bytes = 0;  // since the last reset_peak_stats()
  int64_t reserved_bytes = 0;        // in segments held from the source
  int64_t peak_reserved_bytes = 0;
  int64_t active_blocks = 0;  // handed out and not yet freed
  int64_t segments = 0;       // held from the source
  int64_t allocations = 0;    // calls to allocate()
  int64_t cache_hits = 0;     // allocations served by a cached block
  int64_t source_allocations = 0;
  int64_t source_releases = 0;
  int64_t oom_retries = 0;  // times the cache was emptied to retry an allocation
};

// "1.50 MiB"
std::string format_bytes(int64_t bytes);

class BlockCachingAllocator {
 public:
  using StreamId = uintptr_t;
  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeRounding = size_t{2} << 20;

  explicit BlockCachingAllocator(std::unique_ptr<MemorySource> source);
  ~BlockCachingAllocator();
  BlockCachingAllocator(const BlockCachingAllocator&) = delete;
  BlockCachingAllocator& operator=(const BlockCachingAllocator&) = delete;

  void* allocate(size_t bytes, StreamId stream);
  void free(void* ptr);
  // Another stream whose queued work uses the live block at ptr (kiln::Error for a pointer not
  // handed out); the block is not reused before that work is done.
  void record_stream(void* ptr, StreamId stream);
  // Blocks freed but waiting for other streams' work.
  size_t pending_frees() const;
  // The stream a live block was allocated on (kiln::Error for a pointer not handed out).
  StreamId stream_of(void* ptr) const;
  void empty_cache();
  BlockAllocatorStats stats() const;
  void reset_peak_stats();

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    StreamId stream = 0;
    bool small = false;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
    std::vector<StreamId> uses;  // other streams that use it (record_stream)
  };
  struct PendingFree {
    Block* block;
    std::vector<void*> events;
  };
  struct BlockOrder {  // by stream, then size (best fit), then address
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockOrder>;

  Pool& pool_of(const Block* b) { return b->small ? small_free_ : large_free_; }
  Block* take_cached(size_t size, bool small, StreamId stream);
  Block* new_segment(size_t request, size_t size, bool small, StreamId stream);
  void release_free_segments();
  void release_block(Block* b);  // back to its pool, merged with free neighbours
  // Releases the pending blocks whose events are done (with `wait`, after waiting for them).
  void process_pending_frees(bool wait);

  std::unique_ptr<MemorySource> source_;
  mutable std::mutex mutex_;
  Pool small_free_, large_free_;
  std::unordered_map<void*, Block*> live_;
  std::vector<PendingFree> pending_;
  BlockAllocatorStats stats_;
};

}  // namespace kiln
