// The caching CPU allocator: 64-byte alignment, reuse of freed large blocks, the statistics it
// reports, and emptying the cache.
#include <gtest/gtest.h>

#include <cstdint>

#include "kiln/kiln.h"
#include "kiln/runtime/allocator.h"
#include "test_util.h"

namespace {

using kiln::Tensor;

bool aligned64(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(CpuAllocator, TensorDataIsAlignedTo64Bytes) {
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{63}, int64_t{1000}, int64_t{1} << 20}) {
    for (kiln::DType t : {kiln::kBool, kiln::kFloat16, kiln::kFloat32, kiln::kFloat64}) {
      Tensor x = kiln::empty({n}, t);
      EXPECT_TRUE(aligned64(x.raw_data())) << n << " elements of " << t;
    }
  }
  EXPECT_EQ(kiln::kCpuAlignment, 64u);
}

TEST(CpuAllocator, RawAllocationsAreAlignedAndDistinct) {
  kiln::Allocator* a = kiln::cpu_allocator();
  EXPECT_TRUE(a->device().is_cpu());
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65},
                   size_t{1000}, size_t{1} << 20, (size_t{1} << 20) + 7}) {
    void* p = a->allocate(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(aligned64(p)) << n;
    for (const auto& [q, m] : blocks)
      EXPECT_NE(p, q) << n << " vs " << m;
    blocks.emplace_back(p, n);
  }
  for (const auto& [p, n] : blocks)
    a->deallocate(p, n);
}

// Blocks of 4 MiB and more start on a 2 MiB boundary, where transparent huge pages can back
// them; the memory is usable to its last byte.
TEST(CpuAllocator, LargeBlocksAreHugePageAligned) {
  kiln::Allocator* a = kiln::cpu_allocator();
  for (size_t n : {size_t{4} << 20, (size_t{5} << 20) + 12345, size_t{33} << 20}) {
    auto* p = static_cast<unsigned char*>(a->allocate(n));
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20), 0u) << n;
    p[0] = 1;
    p[n - 1] = 2;
    EXPECT_EQ(p[0] + p[n - 1], 3);
    a->deallocate(p, n);
  }
}

TEST(CpuAllocator, FreedLargeBlockIsReusedFromTheCache) {
  kiln::cpu_empty_cache();
  const int64_t elems = int64_t{2} << 20;  // 8 MiB of float32
  void* first = nullptr;
  kiln::CachingAllocatorStats before = kiln::cpu_allocator_stats();
  {
    Tensor t = kiln::empty({elems});
    first = t.raw_data();
    kiln::CachingAllocatorStats during = kiln::cpu_allocator_stats();
    EXPECT_EQ(during.cache_misses, before.cache_misses + 1);
    EXPECT_EQ(during.cache_hits, before.cache_hits);
  }
  kiln::CachingAllocatorStats freed = kiln::cpu_allocator_stats();
  EXPECT_GE(freed.cached_bytes, elems * 4);
  Tensor again = kiln::empty({elems});
  kiln::CachingAllocatorStats after = kiln::cpu_allocator_stats();
  EXPECT_EQ(after.cache_hits, freed.cache_hits + 1);
  EXPECT_EQ(after.cache_misses, freed.cache_misses);
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(after.cached_bytes, freed.cached_bytes - elems * 4);
}

TEST(CpuAllocator, SmallCachedRequestDoesNotTakeAHugeBlock) {
  kiln::cpu_empty_cache();
  void* huge = nullptr;
  {
    Tensor t = kiln::empty({int64_t{16} << 20});  // 64 MiB
    huge = t.raw_data();
  }
  kiln::CachingAllocatorStats freed = kiln::cpu_allocator_stats();
  Tensor small = kiln::empty({int64_t{1} << 20});  // 4 MiB
  kiln::CachingAllocatorStats after = kiln::cpu_allocator_stats();
  EXPECT_NE(small.raw_data(), huge);
  EXPECT_EQ(after.cache_hits, freed.cache_hits);
  EXPECT_EQ(after.cached_bytes, freed.cached_bytes);
  kiln::cpu_empty_cache();
}

TEST(CpuAllocator, EmptyCacheDropsCachedBytes) {
  { Tensor t = kiln::empty({int64_t{1} << 20}); }
  EXPECT_GT(kiln::cpu_allocator_stats().cached_bytes, 0);
  kiln::cpu_empty_cache();
  EXPECT_EQ(kiln::cpu_allocator_stats().cached_bytes, 0);
  // After emptying, the next large allocation is a miss.
  int64_t misses = kiln::cpu_allocator_stats().cache_misses;
  Tensor t = kiln::empty({int64_t{1} << 20});
  EXPECT_EQ(kiln::cpu_allocator_stats().cache_misses, misses + 1);
}

TEST(CpuAllocator, AllocatedBytesFollowTensorLifetimes) {
  int64_t base = kiln::cpu_allocator_stats().allocated_bytes;
  {
    Tensor small = kiln::zeros({1000});              // 4000 bytes
    Tensor large = kiln::zeros({int64_t{1} << 20});  // 4 MiB
    int64_t live = kiln::cpu_allocator_stats().allocated_bytes;
    EXPECT_GE(live - base, 4000 + (int64_t{4} << 20));
    EXPECT_LE(live - base, 4096 + (int64_t{4} << 20) + 4096);  // rounding only
    Tensor view = large.slice(0, 10, 20);                      // views allocate nothing
    EXPECT_EQ(kiln::cpu_allocator_stats().allocated_bytes, live);
    large = Tensor();  // the view keeps the storage alive
    EXPECT_EQ(kiln::cpu_allocator_stats().allocated_bytes, live);
  }
  EXPECT_EQ(kiln::cpu_allocator_stats().allocated_bytes, base);
}

TEST(CpuAllocator, PeakTracksHighestUsageUntilReset) {
  kiln::cpu_allocator_reset_peak();
  int64_t base = kiln::cpu_allocator_stats().allocated_bytes;
  EXPECT_EQ(kiln::cpu_allocator_stats().peak_allocated_bytes, base);
  { Tensor t = kiln::empty({int64_t{2} << 20}); }
  kiln::CachingAllocatorStats s = kiln::cpu_allocator_stats();
  EXPECT_EQ(s.allocated_bytes, base);
  EXPECT_GE(s.peak_allocated_bytes, base + (int64_t{8} << 20));
  kiln::cpu_allocator_reset_peak();
  EXPECT_EQ(kiln::cpu_allocator_stats().peak_allocated_bytes, base);
}

TEST(CpuAllocator, MetaAndEmptyTensors) {
  int64_t base = kiln::cpu_allocator_stats().allocated_bytes;
  Tensor m = kiln::zeros({int64_t{1} << 24}, kiln::kMeta);
  EXPECT_EQ(kiln::cpu_allocator_stats().allocated_bytes, base);
  Tensor e1 = kiln::empty({0}), e2 = kiln::zeros({3, 0});
  EXPECT_NE(e1.raw_data(), nullptr);
  EXPECT_NE(e1.raw_data(), e2.raw_data());
}

TEST(CpuAllocator, SmallBlocksAreNotCounted) {
  kiln::CachingAllocatorStats before = kiln::cpu_allocator_stats();
  { Tensor t = kiln::empty({100}); }
  kiln::CachingAllocatorStats after = kiln::cpu_allocator_stats();
  EXPECT_EQ(after.cache_hits, before.cache_hits);
  EXPECT_EQ(after.cache_misses, before.cache_misses);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
}

}  // namespace
