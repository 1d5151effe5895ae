// Eager-mode core figures: the copy loop itself, large `add` and `sum` bandwidth against it,
// and the dispatch overhead of a tiny `add`.
#include "bench_util.h"
#include "kiln/kiln.h"

namespace {

constexpr int64_t kLarge = int64_t{1} << 24;

// The reference itself, as a benchmark row: a parallel memcpy of 2^24 floats (its copy_frac is
// about 1 by construction; its GB/s is the figure the other rows are fractions of).
void BM_CopyLoop(benchmark::State& state) {
  int64_t n = state.range(0);
  kiln::Tensor src = kiln::ones({n}), dst = kiln::empty({n});
  auto* d = static_cast<char*>(dst.raw_data());
  const auto* s = static_cast<const char*>(src.raw_data());
  int64_t bytes = n * 4;
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::bench::parallel_memcpy(d, s, bytes);
        benchmark::ClobberMemory();
      },
      2 * bytes);
}
BENCHMARK(BM_CopyLoop)->Arg(kLarge)->UseRealTime()->Unit(benchmark::kMillisecond);

// Eager add: reads two inputs, writes one fresh output (from the caching allocator).
void BM_EagerAdd(benchmark::State& state) {
  int64_t n = state.range(0);
  kiln::Tensor a = kiln::rand({n}), b = kiln::rand({n});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor c = kiln::add(a, b);
        benchmark::DoNotOptimize(c.raw_data());
      },
      3 * n * 4);
}
BENCHMARK(BM_EagerAdd)->Arg(kLarge)->UseRealTime()->Unit(benchmark::kMillisecond);

// Dispatch overhead: a 16-element add is all bookkeeping (keys, rules, allocation, loop setup).
void BM_AddDispatch16(benchmark::State& state) {
  kiln::Tensor a = kiln::rand({16}), b = kiln::rand({16});
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    kiln::Tensor c = kiln::add(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  kiln::bench::report_ns_per_op(state, timer, 1);
}
BENCHMARK(BM_AddDispatch16);

// Full reduction of 2^24 floats: reads once, writes one number.
void BM_EagerSumAll(benchmark::State& state) {
  int64_t n = state.range(0);
  kiln::Tensor a = kiln::rand({n});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor s = kiln::sum(a);
        benchmark::DoNotOptimize(s.raw_data());
      },
      n * 4);
}
BENCHMARK(BM_EagerSumAll)->Arg(kLarge)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
