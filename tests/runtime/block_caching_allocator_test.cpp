// The caching allocator's block logic (Note [Caching device allocator]) over host memory: the
// same code serves CUDA device memory and pinned host memory, whose sources need a GPU; the
// source here is plain aligned host memory with a capacity, so reuse, splitting, merging,
// stream separation, the out-of-memory retry and the statistics are all checked in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "kiln/kiln.h"
#include "kiln/runtime/block_caching_allocator.h"

namespace {

using kiln::BlockCachingAllocator;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kKiB = size_t{1} << 10;

// Host memory up to `capacity` bytes, counting what is outstanding.
class HostSource final : public kiln::MemorySource {
 public:
  explicit HostSource(size_t capacity, size_t* outstanding)
      : capacity_(capacity), outstanding_(outstanding) {}
  void* allocate(size_t bytes) override {
    if (*outstanding_ + bytes > capacity_) return nullptr;
    void* p = std::aligned_alloc(4096, bytes);
    if (p != nullptr) *outstanding_ += bytes;
    return p;
  }
  void release(void* ptr, size_t bytes) override {
    *outstanding_ -= bytes;
    std::free(ptr);
  }
  std::string name() const override { return "test host memory"; }

 private:
  size_t capacity_;
  size_t* outstanding_;
};

struct Fixture {
  size_t outstanding = 0;
  BlockCachingAllocator alloc;
  explicit Fixture(size_t capacity = 64 * kMiB)
      : alloc(std::make_unique<HostSource>(capacity, &outstanding)) {}
};

TEST(BlockCachingAllocator, SmallRequestsShareOneSegmentWithoutOverlap) {
  Fixture f;
  std::vector<char*> ptrs;
  for (int i = 0; i < 5; ++i)
    ptrs.push_back(static_cast<char*>(f.alloc.allocate(1000, 0)));
  auto s = f.alloc.stats();
  EXPECT_EQ(s.source_allocations, 1);
  EXPECT_EQ(s.reserved_bytes, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(s.allocated_bytes, 5 * 1024);  // 1000 rounds to two 512-byte units
  EXPECT_EQ(s.active_blocks, 5);
  for (int i = 0; i < 5; ++i)
    std::memset(ptrs[static_cast<size_t>(i)], i + 1, 1000);
  for (int i = 0; i < 5; ++i) {
    for (int k = 0; k < 1000; ++k)
      ASSERT_EQ(ptrs[static_cast<size_t>(i)][k], i + 1) << "block " << i << " byte " << k;
  }
  for (char* p : ptrs)
    f.alloc.free(p);
  EXPECT_EQ(f.alloc.stats().allocated_bytes, 0);
}

TEST(BlockCachingAllocator, AFreedBlockIsReusedOnItsOwnStreamOnly) {
  Fixture f;
  void* a = f.alloc.allocate(3 * kMiB, /*stream=*/1);
  f.alloc.free(a);
  void* b = f.alloc.allocate(3 * kMiB, 1);
  EXPECT_EQ(b, a);
  EXPECT_EQ(f.alloc.stats().cache_hits, 1);
  EXPECT_EQ(f.alloc.stream_of(b), 1u);
  f.alloc.free(b);
  // Stream 2 may run before stream 1's queued work that still reads the block.
  void* c = f.alloc.allocate(3 * kMiB, 2);
  EXPECT_NE(c, a);
  EXPECT_EQ(f.alloc.stats().source_allocations, 2);
  f.alloc.free(c);
}

TEST(BlockCachingAllocator, FreedNeighboursMergeToServeALargerRequest) {
  Fixture f;
  // Three 640 KiB blocks fill 1920 KiB of one 2 MiB small segment.
  void* a = f.alloc.allocate(640 * kKiB, 0);
  void* b = f.alloc.allocate(640 * kKiB, 0);
  void* c = f.alloc.allocate(640 * kKiB, 0);
  ASSERT_EQ(f.alloc.stats().source_allocations, 1);
  f.alloc.free(a);
  f.alloc.free(b);
  // 1 MiB fits only in a and b merged (the 128 KiB tail cannot hold it).
  void* d = f.alloc.allocate(kMiB, 0);
  EXPECT_EQ(d, a);
  EXPECT_EQ(f.alloc.stats().source_allocations, 1);
  f.alloc.free(c);
  f.alloc.free(d);
  // Everything merged back: the whole segment is free and goes back to the source.
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.stats().reserved_bytes, 0);
  EXPECT_EQ(f.outstanding, 0u);
}

TEST(BlockCachingAllocator, LargeBlocksSplitOnlyForARemainderAboveOneMiB) {
  Fixture f;
  // A 10 MiB segment, handed out whole: a remainder of 1 MiB is not worth keeping apart.
  void* big = f.alloc.allocate(9 * kMiB, 0);
  EXPECT_EQ(f.alloc.stats().allocated_bytes, static_cast<int64_t>(10 * kMiB));
  f.alloc.free(big);
  // 6 MiB takes the cached 10 MiB block and leaves a 4 MiB remainder for the next request.
  void* x = f.alloc.allocate(6 * kMiB, 0);
  void* y = f.alloc.allocate(3 * kMiB, 0);
  EXPECT_EQ(static_cast<char*>(y), static_cast<char*>(x) + 6 * kMiB);
  EXPECT_EQ(f.alloc.stats().source_allocations, 1);
  f.alloc.free(x);
  f.alloc.free(y);
}

TEST(BlockCachingAllocator, EmptyCacheReleasesOnlyEntirelyFreeSegments) {
  Fixture f;
  void* small = f.alloc.allocate(4096, 0);
  void* large = f.alloc.allocate(5 * kMiB, 0);
  f.alloc.free(large);
  EXPECT_EQ(f.alloc.stats().reserved_bytes, static_cast<int64_t>(8 * kMiB));
  f.alloc.empty_cache();
  auto s = f.alloc.stats();
  EXPECT_EQ(s.reserved_bytes, static_cast<int64_t>(2 * kMiB));  // the small segment is in use
  EXPECT_EQ(s.segments, 1);
  EXPECT_EQ(s.source_releases, 1);
  EXPECT_EQ(f.outstanding, 2 * kMiB);
  f.alloc.free(small);
  f.alloc.empty_cache();
  EXPECT_EQ(f.outstanding, 0u);
}

TEST(BlockCachingAllocator, OutOfMemoryReturnsTheCacheAndRetriesOnce) {
  Fixture f(8 * kMiB);
  void* a = f.alloc.allocate(6 * kMiB, 1);
  f.alloc.free(a);  // cached on stream 1; stream 2 cannot take it
  void* b = f.alloc.allocate(6 * kMiB, 2);
  ASSERT_NE(b, nullptr);
  auto s = f.alloc.stats();
  EXPECT_EQ(s.oom_retries, 1);
  EXPECT_EQ(s.source_releases, 1);
  EXPECT_EQ(s.reserved_bytes, static_cast<int64_t>(6 * kMiB));
  f.alloc.free(b);
}

TEST(BlockCachingAllocator, OutOfMemoryErrorNamesTheRequestAndLeavesTheAllocatorUsable) {
  Fixture f(4 * kMiB);
  void* held = f.alloc.allocate(kMiB, 0);
  try {
    f.alloc.allocate(5 * kMiB, 0);
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("test host memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5.00 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1.00 MiB is in use"), std::string::npos) << msg;
  }
  auto s = f.alloc.stats();
  EXPECT_EQ(s.active_blocks, 1);
  EXPECT_EQ(s.allocated_bytes, static_cast<int64_t>(kMiB));
  void* more = f.alloc.allocate(kMiB, 0);  // still works, from the same segment
  EXPECT_EQ(f.alloc.stats().source_allocations, 1);
  f.alloc.free(more);
  f.alloc.free(held);
}

TEST(BlockCachingAllocator, PeakStatisticsAndTheirReset) {
  Fixture f;
  void* a = f.alloc.allocate(4 * kMiB, 0);
  void* b = f.alloc.allocate(4 * kMiB, 0);
  f.alloc.free(a);
  auto s = f.alloc.stats();
  EXPECT_EQ(s.peak_allocated_bytes, static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(s.allocated_bytes, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(s.peak_reserved_bytes, static_cast<int64_t>(8 * kMiB));
  f.alloc.reset_peak_stats();
  EXPECT_EQ(f.alloc.stats().peak_allocated_bytes, static_cast<int64_t>(4 * kMiB));
  f.alloc.free(b);
}

TEST(BlockCachingAllocator, FreeingAPointerItDidNotHandOutThrows) {
  Fixture f;
  int local = 0;
  EXPECT_THROW(f.alloc.free(&local), kiln::Error);
  void* a = f.alloc.allocate(100, 0);
  f.alloc.free(a);
  EXPECT_THROW(f.alloc.free(a), kiln::Error);  // a double free is caught too
  EXPECT_THROW(f.alloc.stream_of(a), kiln::Error);
}

TEST(BlockCachingAllocator, ManyMixedAllocationsNeverOverlap) {
  Fixture f(1024 * kMiB);
  std::srand(7);
  struct Live {
    char* p;
    size_t n;
    char tag;
  };
  std::vector<Live> live;
  for (int step = 0; step < 2000; ++step) {
    if (!live.empty() && std::rand() % 2 == 0) {
      size_t i = static_cast<size_t>(std::rand()) % live.size();
      for (size_t k = 0; k < live[i].n; k += 97)
        ASSERT_EQ(live[i].p[k], live[i].tag) << "block overwritten at step " << step;
      f.alloc.free(live[i].p);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    size_t n = std::rand() % 4 == 0 ? static_cast<size_t>(std::rand() % (4 * 1024)) * kKiB
                                    : static_cast<size_t>(std::rand() % 8192) + 1;
    auto stream = static_cast<BlockCachingAllocator::StreamId>(std::rand() % 2);
    auto* p = static_cast<char*>(f.alloc.allocate(n, stream));
    char tag = static_cast<char>(step % 251);
    std::memset(p, tag, n);
    live.push_back({p, n, tag});
  }
  for (auto& l : live)
    f.alloc.free(l.p);
  f.alloc.empty_cache();
  EXPECT_EQ(f.alloc.stats().reserved_bytes, 0);
  EXPECT_EQ(f.outstanding, 0u);
}

TEST(BlockCachingAllocator, FormatBytes) {
  EXPECT_EQ(kiln::format_bytes(0), "0 bytes");
  EXPECT_EQ(kiln::format_bytes(1023), "1023 bytes");
  EXPECT_EQ(kiln::format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(kiln::format_bytes(int64_t{3} << 30), "3.00 GiB");
}

}  // namespace

namespace {
// Destroyed with a block still handed out: the whole-free segment goes back, the in-use one
// stays with its owner, and no block record leaks (LeakSanitizer checks this under ASan).
TEST(BlockCachingAllocator, DestructionKeepsSegmentsInUseAndReleasesTheRest) {
  size_t outstanding = 0;
  void* held = nullptr;
  {
    BlockCachingAllocator alloc(std::make_unique<HostSource>(64 * kMiB, &outstanding));
    held = alloc.allocate(100, 0);            // first block of a small segment
    alloc.free(alloc.allocate(100, 0));       // a free neighbour record in that segment
    alloc.free(alloc.allocate(3 * kMiB, 0));  // an entirely free large segment
    EXPECT_EQ(outstanding, 6 * kMiB);
  }
  EXPECT_EQ(outstanding, 2 * kMiB);  // only the segment in use remains
  std::free(held);                   // its owner releases it
}
// record_stream: host "streams" whose queued and finished work the test sets. An event marks a
// stream's queued work when it is recorded and is done once that much has finished.
struct HostStreams {
  std::map<uintptr_t, int> queued, finished;
};
class StreamedHostSource final : public kiln::MemorySource {
 public:
  explicit StreamedHostSource(HostStreams* streams, size_t capacity = 64 * kMiB)
      : streams_(streams), capacity_(capacity) {}
  void* allocate(size_t bytes) override {
    if (outstanding_ + bytes > capacity_) return nullptr;
    outstanding_ += bytes;
    return std::aligned_alloc(4096, bytes);
  }
  void release(void* ptr, size_t bytes) override {
    outstanding_ -= bytes;
    std::free(ptr);
  }
  // Waiting for an event finishes its stream's work up to it.
  void wait_event(void* event) override {
    auto* e = static_cast<std::pair<uintptr_t, int>*>(event);
    streams_->finished[e->first] = std::max(streams_->finished[e->first], e->second);
  }
  std::string name() const override { return "test host memory"; }
  void* record_event(uintptr_t stream) override {
    return new std::pair<uintptr_t, int>(stream, streams_->queued[stream]);
  }
  bool event_done(void* event) override {
    auto* e = static_cast<std::pair<uintptr_t, int>*>(event);
    return streams_->finished[e->first] >= e->second;
  }
  void destroy_event(void* event) override {
    delete static_cast<std::pair<uintptr_t, int>*>(event);
  }

 private:
  HostStreams* streams_;
  size_t capacity_;
  size_t outstanding_ = 0;
};

TEST(BlockCachingAllocator, ABlockUsedOnAnotherStreamWaitsForItsWorkBeforeReuse) {
  HostStreams streams;
  BlockCachingAllocator alloc(std::make_unique<StreamedHostSource>(&streams));
  void* p = alloc.allocate(1000, 1);
  alloc.record_stream(p, 1);  // its own stream: nothing to wait for
  alloc.record_stream(p, 2);
  alloc.record_stream(p, 2);  // once is enough
  streams.queued[2] = 1;      // stream 2 has work queued that reads p
  alloc.free(p);
  EXPECT_EQ(alloc.pending_frees(), 1u);
  EXPECT_EQ(alloc.stats().allocated_bytes, 1024) << "held back, still allocated";
  void* q = alloc.allocate(1000, 1);
  EXPECT_NE(q, p) << "handed out while stream 2 may still read it";
  EXPECT_EQ(alloc.pending_frees(), 1u);
  streams.finished[2] = 1;
  void* r = alloc.allocate(1000, 1);
  EXPECT_EQ(alloc.pending_frees(), 0u);
  EXPECT_EQ(r, p) << "the block is free again once stream 2's work is done";
  alloc.free(q);
  alloc.free(r);
  EXPECT_EQ(alloc.stats().allocated_bytes, 0);
  EXPECT_EQ(alloc.stats().active_blocks, 0);
  // A block without other streams' uses is reusable at once.
  void* s1 = alloc.allocate(1000, 1);
  alloc.free(s1);
  EXPECT_EQ(alloc.pending_frees(), 0u);
  int not_handed_out = 0;
  EXPECT_THROW(alloc.record_stream(&not_handed_out, 2), kiln::Error);
}

// Out of memory while a block waits for another stream: the allocator waits for that stream's
// work, frees the block, and the retry succeeds.
TEST(BlockCachingAllocator, OutOfMemoryWaitsForPendingBlocksBeforeFailing) {
  HostStreams streams;
  BlockCachingAllocator alloc(
      std::make_unique<StreamedHostSource>(&streams, /*capacity=*/4 * kMiB));
  void* big = alloc.allocate(4 * kMiB, 1);
  alloc.record_stream(big, 2);
  streams.queued[2] = 1;
  alloc.free(big);
  ASSERT_EQ(alloc.pending_frees(), 1u);
  void* again = alloc.allocate(4 * kMiB, 1);  // needs the pending segment's memory
  EXPECT_EQ(alloc.pending_frees(), 0u);
  EXPECT_EQ(streams.finished[2], 1) << "the retry waited for stream 2";
  EXPECT_EQ(alloc.stats().oom_retries, 1);
  alloc.free(again);
}

}  // namespace
