#include "kiln/runtime/block_caching_allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "kiln/base/error.h"

namespace kiln {
namespace {

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.2f} {}", v, kUnits[unit]);
}

bool BlockCachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

BlockCachingAllocator::BlockCachingAllocator(std::unique_ptr<MemorySource> source)
    : source_(std::move(source)) {}

BlockCachingAllocator::~BlockCachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Segments with blocks still handed out stay with their owners (who may outlive this object
  // at process exit); what is entirely free goes back. Every block record goes.
  release_free_segments();
  for (Pool* pool : {&small_free_, &large_free_}) {
    for (Block* b : *pool)
      delete b;
    pool->clear();
  }
  for (auto& [ptr, b] : live_)
    delete b;
  live_.clear();
  for (PendingFree& p : pending_) {
    for (void* e : p.events)
      source_->destroy_event(e);
    delete p.block;
  }
  pending_.clear();
}

BlockCachingAllocator::Block* BlockCachingAllocator::take_cached(size_t size, bool small,
                                                                 StreamId stream) {
  Pool& pool = small ? small_free_ : large_free_;
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

BlockCachingAllocator::Block* BlockCachingAllocator::new_segment(size_t request, size_t size,
                                                                 bool small, StreamId stream) {
  size_t segment = small ? kSmallSegment : round_up(size, kLargeRounding);
  void* ptr = source_->allocate(segment);
  if (ptr == nullptr) {
    ++stats_.oom_retries;
    // Blocks held back for other streams' work count too: wait for that work, then free them.
    process_pending_frees(/*wait=*/true);
    release_free_segments();
    ptr = source_->allocate(segment);
  }
  KILN_CHECK(ptr != nullptr,
             "{}: out of memory: tried to allocate {} (a {} segment); {} is in use by tensors and "
             "{} is reserved by Kiln's caching allocator (after returning its free segments)",
             source_->name(), format_bytes(static_cast<int64_t>(request)),
             format_bytes(static_cast<int64_t>(segment)), format_bytes(stats_.allocated_bytes),
             format_bytes(stats_.reserved_bytes));
  ++stats_.source_allocations;
  ++stats_.segments;
  stats_.reserved_bytes += static_cast<int64_t>(segment);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  auto* b = new Block;
  b->ptr = static_cast<char*>(ptr);
  b->size = segment;
  b->stream = stream;
  b->small = small;
  return b;
}

void* BlockCachingAllocator::allocate(size_t bytes, StreamId stream) {
  size_t size = round_up(std::max<size_t>(bytes, 1), kMinBlock);
  bool small = size <= kSmallRequest;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  if (!pending_.empty()) process_pending_frees(/*wait=*/false);
  Block* b = take_cached(size, small, stream);
  if (b != nullptr) {
    ++stats_.cache_hits;
  } else {
    b = new_segment(bytes, size, small, stream);
  }
  size_t rest = b->size - size;
  if (small ? rest >= kMinBlock : rest > kSmallRequest) {
    auto* r = new Block;
    r->ptr = b->ptr + size;
    r->size = rest;
    r->stream = stream;
    r->small = small;
    r->prev = b;
    r->next = b->next;
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool_of(r).insert(r);
  }
  b->allocated = true;
  live_.emplace(b->ptr, b);
  ++stats_.active_blocks;
  stats_.allocated_bytes += static_cast<int64_t>(b->size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return b->ptr;
}

void BlockCachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  KILN_CHECK(it != live_.end(), "{}: free of {} which the caching allocator did not hand out",
             source_->name(), ptr);
  Block* b = it->second;
  if (!b->uses.empty()) {
    // Events first: if recording one fails, the block stays live (and the error propagates)
    // rather than being lost.
    PendingFree p{b, {}};
    try {
      for (StreamId s : b->uses)
        p.events.push_back(source_->record_event(s));
    } catch (...) {
      for (void* e : p.events)
        source_->destroy_event(e);
      throw;
    }
    live_.erase(it);
    b->uses.clear();
    pending_.push_back(std::move(p));
    return;
  }
  live_.erase(it);
  release_block(b);
}

void BlockCachingAllocator::release_block(Block* b) {
  b->allocated = false;
  --stats_.active_blocks;
  stats_.allocated_bytes -= static_cast<int64_t>(b->size);
  // Merge with free neighbours; they leave the pool first, since their size is the set's key.
  if (Block* p = b->prev; p != nullptr && !p->allocated) {
    pool_of(p).erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
  }
  if (Block* n = b->next; n != nullptr && !n->allocated) {
    pool_of(n).erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
  }
  pool_of(b).insert(b);
}

void BlockCachingAllocator::process_pending_frees(bool wait) {
  // One entry at a time, each removed as it is released: if querying an event throws, what was
  // released is gone from the list and the rest stays intact.
  for (size_t i = 0; i < pending_.size();) {
    PendingFree& p = pending_[i];
    if (wait) {
      for (void* e : p.events)
        source_->wait_event(e);
    }
    bool done = std::all_of(p.events.begin(), p.events.end(),
                            [&](void* e) { return source_->event_done(e); });
    if (!done) {
      ++i;
      continue;
    }
    PendingFree released = std::move(p);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    for (void* e : released.events)
      source_->destroy_event(e);
    release_block(released.block);
  }
}

void BlockCachingAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  KILN_CHECK(it != live_.end(),
             "{}: record_stream of {}, which is not a live block of the caching "
             "allocator",
             source_->name(), ptr);
  Block* b = it->second;
  if (stream != b->stream && std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end())
    b->uses.push_back(stream);
}

size_t BlockCachingAllocator::pending_frees() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

BlockCachingAllocator::StreamId BlockCachingAllocator::stream_of(void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  KILN_CHECK(it != live_.end(), "{}: {} is not a live block of the caching allocator",
             source_->name(), ptr);
  return it->second->stream;
}

void BlockCachingAllocator::release_free_segments() {
  for (Pool* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev != nullptr || b->next != nullptr) {  // part of a segment still in use
        ++it;
        continue;
      }
      source_->release(b->ptr, b->size);
      ++stats_.source_releases;
      --stats_.segments;
      stats_.reserved_bytes -= static_cast<int64_t>(b->size);
      it = pool->erase(it);
      delete b;
    }
  }
}

void BlockCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  process_pending_frees(/*wait=*/false);
  release_free_segments();
}

BlockAllocatorStats BlockCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void BlockCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace kiln
