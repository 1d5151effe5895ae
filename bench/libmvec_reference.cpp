// Reference rows for the compute-bound eager rows (pow, log1p): glibc's vector math library
// (libmvec, whose x86-64 float kernels came from Intel's SVML) computing the same x ** 2.5,
// x ** y and log1p(x) on the same inputs, on the runtime's threads, against the same interleaved
// copy. They show where an independently written, hand-tuned vector implementation of the
// function lands on this machine, so that a row far below the copy can be told apart from a slow
// Kiln kernel. Built on x86-64 with glibc only (bench/CMakeLists.txt), and the rows skip
// themselves on a CPU without AVX2.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench_util.h"
#include "kiln/kiln.h"

// The variants' names follow the x86-64 vector function ABI: 'e' is AVX-512 (16 floats), 'd'
// AVX2 (8); "vv" two vector arguments. Only the functions in these target regions (GCC's; the
// file is built with GCC only) use the wider instructions, and they run only where the CPU has
// them.
#pragma GCC push_options
#pragma GCC target("avx512f")
extern "C" __m512 _ZGVeN16vv_powf(__m512 x, __m512 y);
extern "C" __m512 _ZGVeN16v_log1pf(__m512 x);
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
extern "C" __m256 _ZGVdN8vv_powf(__m256 x, __m256 y);
extern "C" __m256 _ZGVdN8v_log1pf(__m256 x);
#pragma GCC pop_options

namespace {

enum class Fn { PowScalar, PowTensor, Log1p };

// out[i] = f(a[i], b[i]) over [begin, end) in vectors of W floats, where the last partial vector
// goes through a zero-padded copy (every function here is defined at 0). A macro rather than a
// template: a template or lambda does not take the target region of its caller.
#define KILN_LIBMVEC_LOOP(W, LOAD, STORE, EXPR)        \
  do {                                                 \
    int64_t i = begin;                                 \
    for (; i + (W) <= end; i += (W)) {                 \
      auto x = LOAD(a + i);                            \
      auto y = LOAD(b + i);                            \
      (void)y;                                         \
      STORE(out + i, EXPR);                            \
    }                                                  \
    if (i < end) {                                     \
      alignas(64) float pa[W] = {}, pb[W] = {}, po[W]; \
      auto rest = static_cast<size_t>(end - i);        \
      std::memcpy(pa, a + i, rest * sizeof(float));    \
      std::memcpy(pb, b + i, rest * sizeof(float));    \
      auto x = LOAD(pa);                               \
      auto y = LOAD(pb);                               \
      (void)y;                                         \
      STORE(po, EXPR);                                 \
      std::memcpy(out + i, po, rest * sizeof(float));  \
    }                                                  \
  } while (false)

// The runner for one vector width: W floats of type VEC, the ISA's loads and stores, and its
// libmvec variants POW and LOG1P (declared above the namespace).
#define KILN_LIBMVEC_RUNNER(NAME, W, VEC, LOAD, STORE, SET1, POW, LOG1P)                     \
  void NAME(Fn fn, const float* a, const float* b, float* out, int64_t begin, int64_t end) { \
    VEC exponent = SET1(2.5f);                                                               \
    if (fn == Fn::PowScalar)                                                                 \
      KILN_LIBMVEC_LOOP(W, LOAD, STORE, POW(x, exponent));                                   \
    else if (fn == Fn::PowTensor)                                                            \
      KILN_LIBMVEC_LOOP(W, LOAD, STORE, POW(x, y));                                          \
    else                                                                                     \
      KILN_LIBMVEC_LOOP(W, LOAD, STORE, LOG1P(x));                                           \
  }

#pragma GCC push_options
#pragma GCC target("avx512f")
KILN_LIBMVEC_RUNNER(run_avx512, 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps,
                    _ZGVeN16vv_powf, _ZGVeN16v_log1pf)
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
KILN_LIBMVEC_RUNNER(run_avx2, 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
                    _ZGVdN8vv_powf, _ZGVdN8v_log1pf)
#pragma GCC pop_options
#undef KILN_LIBMVEC_RUNNER
#undef KILN_LIBMVEC_LOOP

// One libmvec pass over n elements into a freshly allocated output, as an eager op allocates
// its result; 4 bytes read per input that varies (`inputs`) and 4 written per element.
void libmvec_bench(benchmark::State& state, Fn fn, kiln::Tensor a, kiln::Tensor b, int inputs) {
  bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    state.SkipWithError("libmvec's vector variants need AVX2 and FMA");
    return;
  }
  int64_t n = a.numel();
  const auto* pa = static_cast<const float*>(a.raw_data());
  const auto* pb = static_cast<const float*>(b.raw_data());
  auto run = [&](float* out, int64_t begin, int64_t end) {
    if (avx512)
      run_avx512(fn, pa, pb, out, begin, end);
    else
      run_avx2(fn, pa, pb, out, begin, end);
  };
  // A row is a reference only if it computes the function: its first elements against double
  // libm, within 2^-22 relative (2 to 4 float ulp); a NaN fails too.
  std::vector<float> head(1000);
  run(head.data(), 0, 1000);
  for (size_t i = 0; i < head.size(); ++i) {
    double want = fn == Fn::Log1p       ? std::log1p(double(pa[i]))
                  : fn == Fn::PowScalar ? std::pow(double(pa[i]), 2.5)
                                        : std::pow(double(pa[i]), double(pb[i]));
    if (!(std::fabs(head[i] - want) <= 0x1p-22 * std::fabs(want))) {
      state.SkipWithError("libmvec's result differs from double libm's");
      return;
    }
  }
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor out = kiln::empty({n});
        auto* po = static_cast<float*>(out.raw_data());
        kiln::parallel_for(0, n, int64_t{1} << 16,
                           [&](int64_t begin, int64_t end) { run(po, begin, end); });
        benchmark::DoNotOptimize(out.raw_data());
      },
      n * 4 * (inputs + 1));
  state.SetLabel(avx512 ? "libmvec AVX-512" : "libmvec AVX2");
}

constexpr int64_t kLarge = int64_t{1} << 24;

// The inputs of BM_EagerPow, BM_EagerPowTensor and BM_EagerLog1p (bench/eager_pointwise.cpp).
void BM_LibmvecPow(benchmark::State& s) {
  kiln::Tensor x = kiln::rand({kLarge}) + 0.5;
  libmvec_bench(s, Fn::PowScalar, x, x, 1);
}
void BM_LibmvecPowTensor(benchmark::State& s) {
  kiln::Tensor a = kiln::rand({kLarge}) + 0.5, b = kiln::randn({kLarge});
  libmvec_bench(s, Fn::PowTensor, a, b, 2);
}
void BM_LibmvecLog1p(benchmark::State& s) {
  kiln::Tensor x = kiln::rand({kLarge}) + 0.5;
  libmvec_bench(s, Fn::Log1p, x, x, 1);
}

BENCHMARK(BM_LibmvecPow)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LibmvecPowTensor)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LibmvecLog1p)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
