// Eager pointwise figures: large contiguous float32 ops (2^24 elements) as GB/s and as a
// fraction of the copy bandwidth (run_against_copy: copies timed between the op's calls). Simple
// arithmetic is memory bound; the transcendental ones show how far their math is from the memory
// floor.
#include "bench_util.h"
#include "kiln/kiln.h"

namespace {

constexpr int64_t kLarge = int64_t{1} << 24;

// out = f(x) for one float32 input: 4 bytes read + `out_bytes` written per element. x is normal,
// or uniform in [0.5, 1.5) for functions of positive numbers (log, pow); normal x times `scale`.
template <class F>
void unary_bench(benchmark::State& state, const F& f, int64_t out_bytes = 4, bool positive = false,
                 double scale = 1.0) {
  int64_t n = state.range(0);
  kiln::Tensor x = positive ? kiln::rand({n}) + 0.5 : kiln::randn({n}) * scale;
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor y = f(x);
        benchmark::DoNotOptimize(y.raw_data());
      },
      n * (4 + out_bytes));
}

// out = f(a, b) for two float32 inputs: 8 bytes read + `out_bytes` written per element. a and b
// are normal, or a is uniform in [0.5, 1.5) when `positive_a` (pow's base).
template <class F>
void binary_bench(benchmark::State& state, const F& f, int64_t out_bytes = 4,
                  bool positive_a = false) {
  int64_t n = state.range(0);
  kiln::Tensor a = positive_a ? kiln::rand({n}) + 0.5 : kiln::randn({n}), b = kiln::randn({n});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor y = f(a, b);
        benchmark::DoNotOptimize(y.raw_data());
      },
      n * (8 + out_bytes));
}

using T = kiln::Tensor;

void BM_EagerMul(benchmark::State& s) {
  binary_bench(s, [](const T& a, const T& b) { return kiln::mul(a, b); });
}
void BM_EagerMaximum(benchmark::State& s) {
  binary_bench(s, [](const T& a, const T& b) { return kiln::maximum(a, b); });
}
void BM_EagerExp(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::exp(x); });
}
void BM_EagerTanh(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::tanh(x); });
}
void BM_EagerErf(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::erf(x); });
}
void BM_EagerSigmoid(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::sigmoid(x); });
}
void BM_EagerGeluTanh(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::gelu(x, "tanh"); });
}
void BM_EagerGeluErf(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::gelu(x); });
}
void BM_EagerSqrt(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::sqrt(x); });
}
void BM_EagerLog(benchmark::State& s) {
  unary_bench(
      s, [](const T& x) { return kiln::log(x); }, 4, true);
}
void BM_EagerLog1p(benchmark::State& s) {
  unary_bench(
      s, [](const T& x) { return kiln::log1p(x); }, 4, true);
}
void BM_EagerExpm1(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::expm1(x); });
}
// Note [pow by a constant exponent]: x ** 2 without pow, x ** 2.5 with it.
void BM_EagerPowSquare(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::pow(x, 2.0); });
}
void BM_EagerPow(benchmark::State& s) {
  unary_bench(
      s, [](const T& x) { return kiln::pow(x, 2.5); }, 4, true);
}
// A tensor exponent (Note [pow in double-float]): base in [0.5, 1.5), normal exponents.
void BM_EagerPowTensor(benchmark::State& s) {
  binary_bench(
      s, [](const T& a, const T& b) { return kiln::pow(a, b); }, 4, true);
}
// gelu's derivative in one pass (gelu_backward): reads the gradient and x, writes the result.
void BM_EagerGeluBackward(benchmark::State& s) {
  binary_bench(s, [](const T& g, const T& x) { return kiln::gelu_backward(g, x); });
}
// sin and cos: the polynomial within |x| <= 8192 (Note [sin and cos by one polynomial]). cos
// gets randn * 100: angles over many periods.
void BM_EagerSin(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::sin(x); });
}
void BM_EagerCos(benchmark::State& s) {
  unary_bench(
      s, [](const T& x) { return kiln::cos(x); }, 4, false, 100.0);
}
void BM_EagerClamp(benchmark::State& s) {
  unary_bench(s, [](const T& x) { return kiln::clamp(x, -0.5, 0.5); });
}
// Comparisons write one byte per element (a Bool tensor).
void BM_EagerGt(benchmark::State& s) {
  binary_bench(
      s, [](const T& a, const T& b) { return kiln::gt(a, b); }, 1);
}
void BM_EagerGtScalar(benchmark::State& s) {
  unary_bench(
      s, [](const T& x) { return kiln::gt(x, 0.0); }, 1);
}
// In place: reads self and other, writes self; no allocation.
void BM_EagerAddInplace(benchmark::State& state) {
  int64_t n = state.range(0);
  kiln::Tensor a = kiln::randn({n}), b = kiln::randn({n});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::add_(a, b);
        benchmark::DoNotOptimize(a.raw_data());
      },
      3 * n * 4);
}

#define KILN_PW_BENCH(fn) BENCHMARK(fn)->Arg(kLarge)->UseRealTime()->Unit(benchmark::kMillisecond)
KILN_PW_BENCH(BM_EagerMul);
KILN_PW_BENCH(BM_EagerMaximum);
KILN_PW_BENCH(BM_EagerExp);
KILN_PW_BENCH(BM_EagerTanh);
KILN_PW_BENCH(BM_EagerErf);
KILN_PW_BENCH(BM_EagerSigmoid);
KILN_PW_BENCH(BM_EagerGeluTanh);
KILN_PW_BENCH(BM_EagerGeluErf);
KILN_PW_BENCH(BM_EagerSqrt);
KILN_PW_BENCH(BM_EagerLog);
KILN_PW_BENCH(BM_EagerLog1p);
KILN_PW_BENCH(BM_EagerExpm1);
KILN_PW_BENCH(BM_EagerPowSquare);
KILN_PW_BENCH(BM_EagerPow);
KILN_PW_BENCH(BM_EagerPowTensor);
KILN_PW_BENCH(BM_EagerGeluBackward);
KILN_PW_BENCH(BM_EagerSin);
KILN_PW_BENCH(BM_EagerCos);
KILN_PW_BENCH(BM_EagerClamp);
KILN_PW_BENCH(BM_EagerGt);
KILN_PW_BENCH(BM_EagerGtScalar);
KILN_PW_BENCH(BM_EagerAddInplace);
#undef KILN_PW_BENCH

}  // namespace
