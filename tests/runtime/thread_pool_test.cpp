// parallel_for: exact coverage of the range, serial execution below the grain and when nested,
// exception propagation, thread-count control, and concurrent callers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "kiln/base/options.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln_test::NumThreadsGuard;

// Runs parallel_for over [begin, end) and returns how many times each index was visited.
std::vector<int> visit_counts(int64_t begin, int64_t end, int64_t grain) {
  auto counts = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(end - begin));
  std::atomic<bool> out_of_range{false};
  kiln::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    if (b < begin || e > end || b >= e) out_of_range = true;
    for (int64_t i = b; i < e; ++i)
      counts[static_cast<size_t>(i - begin)]++;
  });
  EXPECT_FALSE(out_of_range.load());
  std::vector<int> out;
  for (int64_t i = 0; i < end - begin; ++i)
    out.push_back(counts[static_cast<size_t>(i)].load());
  return out;
}

TEST(ThreadPool, EveryIndexIsVisitedExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    NumThreadsGuard guard(threads);
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{1000}, int64_t{100003}}) {
      for (int64_t grain : {int64_t{1}, int64_t{7}, int64_t{32768}}) {
        auto counts = visit_counts(17, 17 + n, grain);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(counts[static_cast<size_t>(i)], 1)
              << "threads " << threads << " n " << n << " grain " << grain << " index " << i;
        }
      }
    }
  }
}

TEST(ThreadPool, EmptyAndReversedRangesDoNothing) {
  int calls = 0;
  kiln::parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  kiln::parallel_for(9, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, RangeBelowGrainRunsOnceOnTheCaller) {
  NumThreadsGuard guard(4);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::thread::id ran_on;
  kiln::parallel_for(10, 100, 1000, [&](int64_t b, int64_t e) {
    chunks.emplace_back(b, e);
    ran_on = std::this_thread::get_id();
  });
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], (std::pair<int64_t, int64_t>{10, 100}));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(ThreadPool, NonPositiveGrainIsTreatedAsOne) {
  NumThreadsGuard guard(2);
  std::atomic<int64_t> total{0};
  kiln::parallel_for(0, 1000, 0, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 1000);
}

TEST(ThreadPool, ChunksAreContiguousAndAtMostThreadCount) {
  NumThreadsGuard guard(3);
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::set<std::thread::id> threads;
  kiln::parallel_for(0, 3000, 1, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    chunks.emplace_back(b, e);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_LE(chunks.size(), 3u);
  std::sort(chunks.begin(), chunks.end());
  int64_t next = 0;
  for (const auto& [b, e] : chunks) {
    EXPECT_EQ(b, next);
    next = e;
  }
  EXPECT_EQ(next, 3000);
  EXPECT_EQ(threads.size(), chunks.size());                  // one chunk per thread
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u);  // the caller takes a chunk
}

TEST(ThreadPool, OneThreadRunsEverythingOnTheCaller) {
  NumThreadsGuard guard(1);
  EXPECT_EQ(kiln::get_num_threads(), 1);
  std::set<std::thread::id> ids;
  kiln::parallel_for(0, 1 << 20, 1,
                     [&](int64_t, int64_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids, (std::set<std::thread::id>{std::this_thread::get_id()}));
}

TEST(ThreadPool, InParallelRegionInsideChunksOnly) {
  NumThreadsGuard guard(2);
  EXPECT_FALSE(kiln::in_parallel_region());
  std::atomic<int> inside{0}, chunks{0};
  kiln::parallel_for(0, 1000, 1, [&](int64_t, int64_t) {
    ++chunks;
    inside += kiln::in_parallel_region() ? 1 : 0;
  });
  EXPECT_EQ(chunks.load(), 2);
  EXPECT_EQ(inside.load(), 2);
  EXPECT_FALSE(kiln::in_parallel_region());
}

TEST(ThreadPool, NestedParallelForRunsSeriallyWithoutDeadlock) {
  NumThreadsGuard guard(4);
  const int64_t outer = 16, inner = 5000;
  auto counts = std::make_unique<std::atomic<int>[]>(outer * inner);
  std::atomic<bool> inner_left_thread{false};
  std::atomic<int> inner_calls{0};
  kiln::parallel_for(0, outer, 1, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      std::thread::id me = std::this_thread::get_id();
      kiln::parallel_for(0, inner, 1, [&](int64_t ib, int64_t ie) {
        ++inner_calls;
        if (std::this_thread::get_id() != me) inner_left_thread = true;
        for (int64_t i = ib; i < ie; ++i)
          counts[static_cast<size_t>(o * inner + i)]++;
      });
    }
  });
  EXPECT_FALSE(inner_left_thread.load());
  EXPECT_EQ(inner_calls.load(), outer);  // each inner loop is one serial call
  for (int64_t i = 0; i < outer * inner; ++i)
    ASSERT_EQ(counts[static_cast<size_t>(i)].load(), 1);
}

struct ChunkError : std::runtime_error {
  explicit ChunkError(int64_t at) : std::runtime_error("chunk failed"), index(at) {}
  int64_t index;
};

TEST(ThreadPool, ExceptionInAWorkerChunkReachesTheCaller) {
  NumThreadsGuard guard(4);
  for (int64_t bad : {int64_t{0}, int64_t{999}, int64_t{600}}) {  // caller's chunk and workers'
    try {
      kiln::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
        if (bad >= b && bad < e) throw ChunkError(bad);
      });
      ADD_FAILURE() << "no exception for index " << bad;
    } catch (const ChunkError& err) {
      EXPECT_EQ(err.index, bad);
    } catch (...) {
      ADD_FAILURE() << "a different exception type for index " << bad;
    }
  }
  // The pool is still usable afterwards.
  auto counts = visit_counts(0, 50000, 1);
  for (int c : counts)
    ASSERT_EQ(c, 1);
}

TEST(ThreadPool, KilnErrorInAKernelChunkPropagates) {
  NumThreadsGuard guard(3);
  EXPECT_THROW(kiln::parallel_for(0, 100, 1,
                                  [](int64_t b, int64_t) {
                                    if (b > 0) throw kiln::Error("worker says no");
                                  }),
               kiln::Error);
  EXPECT_THROW(
      kiln::parallel_for(0, 10, 100, [](int64_t, int64_t) { throw std::logic_error("x"); }),
      std::logic_error);
}

TEST(ThreadPool, SetNumThreadsIsReported) {
  NumThreadsGuard guard;
  kiln::set_num_threads(3);
  EXPECT_EQ(kiln::get_num_threads(), 3);
  kiln::set_num_threads(1);
  EXPECT_EQ(kiln::get_num_threads(), 1);
  // torch.set_num_threads(0) raises; so does this, and the pool keeps its size.
  EXPECT_THROW(kiln::set_num_threads(0), kiln::Error);
  EXPECT_THROW(kiln::set_num_threads(kiln::kMaxThreads + 1), kiln::Error);
  EXPECT_EQ(kiln::get_num_threads(), 1);
  kiln::set_num_threads(5);
  EXPECT_EQ(kiln::get_num_threads(), 5);
  std::set<std::thread::id> ids;
  std::mutex m;
  kiln::parallel_for(0, 5000, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 5u);
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeRange) {
  NumThreadsGuard guard(3);
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&bad, c] {
      for (int rep = 0; rep < 25; ++rep) {
        int64_t n = 1000 + 37 * c + rep;
        auto counts = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(n));
        kiln::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i)
            counts[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < n; ++i)
          bad += counts[static_cast<size_t>(i)].load() != 1;
      }
    });
  }
  for (auto& t : callers)
    t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(ThreadPool, ResultsOfKernelsDoNotDependOnThreadCount) {
  auto x = kiln_test::random_vector<float>(200003, -3, 3, 60);
  std::vector<float> one, four;
  {
    NumThreadsGuard guard(1);
    one = kiln::sigmoid(kiln::from_vector(x)).to_vector<float>();
  }
  {
    NumThreadsGuard guard(4);
    four = kiln::sigmoid(kiln::from_vector(x)).to_vector<float>();
  }
  EXPECT_EQ(one, four);
}

}  // namespace

// Note [Spin before sleeping]: workers pick up jobs while spinning, after sleeping, and when a
// job with fewer chunks than workers leaves some of them out. Back-to-back jobs of changing
// width must each run every chunk exactly once.
TEST(ThreadPool, BackToBackJobsOfChangingWidthRunEachChunkOnce) {
  NumThreadsGuard guard(4);
  for (int round = 0; round < 3000; ++round) {
    const int64_t chunks = 1 + round % 4;  // grain makes exactly `chunks` pieces
    std::atomic<int64_t> covered{0};
    std::atomic<int> calls{0};
    kiln::parallel_for(0, chunks * 100, 100, [&](int64_t b, int64_t e) {
      covered += e - b;
      ++calls;
    });
    ASSERT_EQ(covered.load(), chunks * 100) << "round " << round;
    ASSERT_EQ(calls.load(), chunks) << "round " << round;
  }
}

TEST(ThreadPool, JobsAfterIdlePausesAndResizesComplete) {
  NumThreadsGuard guard;
  for (int round = 0; round < 20; ++round) {
    kiln::set_num_threads(2 + round % 3);  // a fresh job right after the workers start
    auto counts = visit_counts(0, 4096, 1);
    for (int c : counts)
      ASSERT_EQ(c, 1) << "round " << round;
    if (round % 5 == 0)  // long enough for every worker to stop spinning and sleep
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    counts = visit_counts(0, 4096, 1);
    for (int c : counts)
      ASSERT_EQ(c, 1) << "round " << round;
  }
}
