// Shared benchmark plumbing: the copy-bandwidth reference every memory-bound workload is
// compared with, measured in the same process, and plain-number counters computed from a
// timer around the benchmark loop.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::bench {

// Bandwidth (bytes read + bytes written per second) of a parallel memcpy of `bytes` bytes on
// the runtime's thread pool: what this machine does for a streaming workload. Median of
// several warm runs, measured anew at each call. Workloads compare themselves with an
// InterleavedCopy instead (below); this one gives the run's context line.
double copy_bandwidth_bytes_per_s(int64_t bytes = int64_t{64} << 20);

void parallel_memcpy(char* dst, const char* src, int64_t bytes);

// Wall-clock timer started before a benchmark's loop.
class LoopTimer {
 public:
  LoopTimer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// A parallel memcpy timed between a workload's iterations: on a shared machine the bandwidth
// drifts by 2x within minutes, so a workload is best compared with copies that ran in the
// same seconds as it did.
class InterleavedCopy {
 public:
  explicit InterleavedCopy(int64_t bytes = int64_t{64} << 20);
  void run_timed();  // one copy, its time recorded
  // Adds "GB/s" (ideal bytes over the median workload time), "copy_GB/s" (bytes read and
  // written over the median copy time) and "copy_frac".
  void report(benchmark::State& state, std::vector<double> workload_seconds,
              int64_t ideal_bytes_per_iter);

 private:
  // Kiln tensors, so that the copy's memory comes from the allocator the workloads' does.
  Tensor src_, dst_;
  std::vector<double> seconds_;
};

// Runs `iteration` once per benchmark iteration, timed, with an InterleavedCopy between
// iterations (outside the timed region), and reports as InterleavedCopy::report does: the
// fraction compares the workload's median with copies that ran in the same seconds.
template <class F>
void run_against_copy(benchmark::State& state, const F& iteration, int64_t ideal_bytes_per_iter) {
  InterleavedCopy copy;
  std::vector<double> seconds;
  for (auto _ : state) {
    LoopTimer t;
    iteration();
    seconds.push_back(t.seconds());
    state.PauseTiming();
    copy.run_timed();
    state.ResumeTiming();
  }
  copy.report(state, std::move(seconds), ideal_bytes_per_iter);
}

// Adds "ns/op": wall time per iteration divided by ops per iteration.
void report_ns_per_op(benchmark::State& state, const LoopTimer& timer, int64_t ops_per_iter);

}  // namespace kiln::bench
