#include "bench_util.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::bench {

void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
  parallel_for(0, bytes, int64_t{1} << 20, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
  });
}

double copy_bandwidth_bytes_per_s(int64_t bytes) {
  Tensor src = ones({bytes / 4}), dst = zeros({bytes / 4});
  auto* d = static_cast<char*>(dst.raw_data());
  const auto* s = static_cast<const char*>(src.raw_data());
  // Median of 31 timed runs after 3 warm-ups: the best single run is an outlier on a shared
  // machine, and a median is what the workloads' own figures are compared as.
  for (int rep = 0; rep < 3; ++rep)
    parallel_memcpy(d, s, bytes);
  std::vector<double> seconds;
  for (int rep = 0; rep < 31; ++rep) {
    LoopTimer t;
    parallel_memcpy(d, s, bytes);
    seconds.push_back(t.seconds());
  }
  std::nth_element(seconds.begin(), seconds.begin() + 15, seconds.end());
  return 2.0 * static_cast<double>(bytes) / seconds[15];
}

namespace {
double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
}  // namespace

InterleavedCopy::InterleavedCopy(int64_t bytes)
    : src_(ones({bytes / 4})), dst_(zeros({bytes / 4})) {
  for (int rep = 0; rep < 3; ++rep)
    run_timed();
  seconds_.clear();
}

void InterleavedCopy::run_timed() {
  LoopTimer t;
  parallel_memcpy(static_cast<char*>(dst_.raw_data()), static_cast<const char*>(src_.raw_data()),
                  src_.numel() * 4);
  seconds_.push_back(t.seconds());
}

void InterleavedCopy::report(benchmark::State& state, std::vector<double> workload_seconds,
                             int64_t ideal_bytes_per_iter) {
  double rate = static_cast<double>(ideal_bytes_per_iter) / median(std::move(workload_seconds));
  double copy = 2.0 * static_cast<double>(src_.numel() * 4) / median(seconds_);
  state.counters["GB/s"] = rate * 1e-9;
  state.counters["copy_GB/s"] = copy * 1e-9;
  state.counters["copy_frac"] = rate / copy;
}

void report_ns_per_op(benchmark::State& state, const LoopTimer& timer, int64_t ops_per_iter) {
  state.counters["ns/op"] =
      timer.seconds() * 1e9 / static_cast<double>(state.iterations() * ops_per_iter);
}

}  // namespace kiln::bench
