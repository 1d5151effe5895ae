#include "kiln/runtime/kernels/exp_sum_vec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#if defined(__GNUC__) && !defined(__clang__)
#include "kiln/runtime/kernels/reduction_vec.h"
// The 16-lane helpers below are inlined into the AVX-512 version and never called across an ABI
// boundary, so GCC's note that passing 64-byte vectors without AVX-512 changed ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln {

// Note [Table-driven exp for sums]
// logsumexp reads 4 bytes per element and computes one exp for each. With exp_poly's range
// reduction and polynomial it ran at 0.45 of the copy bandwidth in runs where the copy reaches
// 80 GB/s: compute bound. The terms here cost fewer vector operations:
// - n = round(d * 8/ln 2) and r = d - n ln2/8, |r| <= ln2/16, with ln2/8 in two float parts
//   (Cephes' reduction: n c1 is exact, so the result does not depend on fused multiply-adds);
// - e^r = 1 + r S(r), S of degree 2 (the fit leaves 2e-8);
// - 2^(n/8) = 2^(n >> 3) * 2^((n & 7)/8): the eighth from an 8-entry table (one permute of a
//   vector register) and the power of two added to its exponent bits.
// The terms are within 1.5e-7 of exp(d) (2.5 float ulp; exp_poly's are within 2).
// scripts/fit_math_coefficients.py computes the table, the split constant and S, and checks that
// bound. GCC's vector extensions write the permute portably (__builtin_shuffle). The loop is
// compiled twice, as the loops of Note [Multiversioned float loops] are: with 16-lane vectors for
// AVX-512, where the permute is one vpermps, and with 8-lane vectors for everything else (a
// 16-lane shuffle at AVX2 would be split into element moves). In cache, logsumexp's whole
// reduction went from 0.20 to 0.10 ns per element on one thread. The two versions map elements
// to the same lanes and compute the same operations, so where both contract the same multiply-adds
// (the build has FMA, as x86-64-v3 does) their results are equal bit for bit. Compilers without
// __builtin_shuffle run the scalar form of the same steps.

namespace {

constexpr float kEighths[8] = {1.0f,        1.09050775f, 1.18920708f, 1.29683959f,
                               1.41421354f, 1.54221082f, 1.68179286f, 1.8340081f};
constexpr float kInvStep = 11.5415602f;     // 8 / ln 2, rounded to float
constexpr float kStepHigh = 0.0866394043f;  // ln 2 / 8 to 12 significant bits: n c1 is exact
constexpr float kStepLow = 3.99327291e-6f;  // ln 2 / 8 - kStepHigh
constexpr float kRound = 12582912.0f;       // 1.5 * 2^23: d * kInvStep + kRound holds round(n)
constexpr float kLowest = -87.0f;           // exp(-87) is still a normal float
constexpr float kS2 = 0.166642934f;
constexpr float kS1 = 0.500064909f;

// exp(d) for one lane or a vector of lanes: F is float or a float vector, U the unsigned integer
// type of its width, and eighth(bits) looks up kEighths[bits % 8] for each lane. Below kLowest the
// term is 0, selected at the end (true value under 2e-38; there n >> 3 would leave the exponent
// field, and clamping d instead lets the compiler fold the clamped lanes' constant without the
// fused roundings). -inf gives 0; NaN fails that comparison and propagates through p.
template <class F, class U, class Eighth>
[[gnu::always_inline]] inline F shifted_exp_term(F d, Eighth eighth) {
  // The low bits of s hold n, as in math::exp2i; s - kRound is n as a float.
  F s = d * kInvStep + kRound;
  F n = s - kRound;
  F r = d - n * kStepHigh;
  r = r - n * kStepLow;
  F p = ((kS2 * r + kS1) * r + 1.0f) * r + 1.0f;
  U bits = std::bit_cast<U>(s);
  // The shift moves n >> 3 into the exponent field. The constant bits of s shift out.
  U scale = std::bit_cast<U>(eighth(bits)) + ((bits << 20) & 0xFF800000u);
  F term = p * std::bit_cast<F>(scale);
  return d < kLowest ? F{} : term;
}

// Each float32 lane adds at most kFlushEvery / kExpSumLanes = 32 terms before it is added into its
// double lane, so that long runs stay accurate to float rounding.
constexpr int64_t kFlushEvery = 1024;
static_assert(kFlushEvery % kExpSumLanes == 0 && kExpSumLanes % 16 == 0);

// The elements past the last whole group of lanes, padded with -inf (terms 0, max unchanged), so
// that they go through the same lanes as a whole group: rows shorter than kExpSumLanes (a
// 10-class log_softmax) stay vectorized.
void pad_tail(const float* x, int64_t count, float (&group)[kExpSumLanes]) {
  std::fill(group, group + kExpSumLanes, -std::numeric_limits<float>::infinity());
  std::copy(x, x + count, group);
}

void flush(float (&lanes)[kExpSumLanes], double (&wide)[kExpSumLanes]) {
  for (int j = 0; j < kExpSumLanes; ++j) {
    wide[j] += static_cast<double>(lanes[j]);
    lanes[j] = 0;
  }
}

// The double lanes added through four partial sums.
double lanes_total(const double (&wide)[kExpSumLanes]) {
  double partial[4] = {};
  for (int j = 0; j < kExpSumLanes; ++j)
    partial[j % 4] += wide[j];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

#if defined(__GNUC__) && !defined(__clang__)
#define KILN_EXP_SUM_VECTORS 1

// How far ahead the loop asks for lines: the loop is compute bound, and the hardware prefetcher
// alone left it waiting on DRAM (Note [Prefetch across blocks], reduction_vec.h).
constexpr uintptr_t kPrefetchAhead = 2048;

// W lanes of float and of uint32 (a typedef in a class template: GCC drops vector_size on a
// dependent alias declaration).
template <int W>
struct Lanes {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef uint32_t U __attribute__((vector_size(4 * W)));
};

template <int W>
[[gnu::always_inline]] inline ExpSum sum_lanes(const float* x, int64_t n, float ref) {
  using F = typename Lanes<W>::F;
  using U = typename Lanes<W>::U;
  constexpr int kVecs = kExpSumLanes / W;
  // kEighths repeated across the vector: the shuffle takes each index modulo W, a multiple of 8.
  F table;
  for (int j = 0; j < W; ++j)
    table[j] = kEighths[j % 8];
  auto eighth = [&](U b) __attribute__((always_inline)) {
    return __builtin_shuffle(table, b);
  };
  F acc[kVecs] = {};
  F mx = F{} - std::numeric_limits<float>::infinity();
  auto add_group = [&](const float* g) __attribute__((always_inline)) {
    for (int k = 0; k < kVecs; ++k) {
      F v;
      __builtin_memcpy(&v, g + k * W, sizeof(F));
      mx = v > mx ? v : mx;
      acc[k] += shifted_exp_term<F, U>(v - ref, eighth);
    }
  };
  float lanes[kExpSumLanes];
  double wide[kExpSumLanes] = {};
  auto flush_acc = [&] {
    for (int k = 0; k < kVecs; ++k) {
      __builtin_memcpy(lanes + k * W, &acc[k], sizeof(F));
      acc[k] = F{};
    }
    flush(lanes, wide);
  };
  int64_t i = 0;
  while (i + kExpSumLanes <= n) {
    int64_t stop = std::min(n, i + kFlushEvery);
    for (; i + kExpSumLanes <= stop; i += kExpSumLanes) {
      prefetch_lines<kExpSumLanes * sizeof(float)>(x + i, kPrefetchAhead);
      add_group(x + i);
    }
    flush_acc();
  }
  if (i < n) {
    float group[kExpSumLanes];
    pad_tail(x + i, n - i, group);
    add_group(group);
    flush_acc();
  }
  float max = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < W; ++j)
    max = mx[j] > max ? mx[j] : max;
  return {lanes_total(wide), max};
}

#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)
// Function multiversioning: the loader picks the AVX-512 version where the CPU has it (not
// under ThreadSanitizer, which crashes in the resolver: runtime/kernels/float_loop_clones.h).
__attribute__((target("default"))) ExpSum sum_exp_dispatch(const float* x, int64_t n, float ref) {
  return sum_lanes<8>(x, n, ref);
}
__attribute__((target("arch=x86-64-v4"))) ExpSum sum_exp_dispatch(const float* x, int64_t n,
                                                                  float ref) {
  return sum_lanes<16>(x, n, ref);
}
#else
ExpSum sum_exp_dispatch(const float* x, int64_t n, float ref) {
  return sum_lanes<8>(x, n, ref);
}
#endif
#endif  // GCC

}  // namespace

ExpSum sum_exp_shifted(const float* x, int64_t n, float ref) {
#if defined(KILN_EXP_SUM_VECTORS)
  return sum_exp_dispatch(x, n, ref);
#else
  float lanes[kExpSumLanes] = {};
  double wide[kExpSumLanes] = {};
  float max = -std::numeric_limits<float>::infinity();
  auto add_group = [&](const float* g) {
    for (int j = 0; j < kExpSumLanes; ++j) {
      max = g[j] > max ? g[j] : max;
      lanes[j] +=
          shifted_exp_term<float, uint32_t>(g[j] - ref, [](uint32_t b) { return kEighths[b & 7]; });
    }
  };
  int64_t i = 0;
  while (i + kExpSumLanes <= n) {
    int64_t stop = std::min(n, i + kFlushEvery);
    for (; i + kExpSumLanes <= stop; i += kExpSumLanes)
      add_group(x + i);
    flush(lanes, wide);
  }
  if (i < n) {
    float group[kExpSumLanes];
    pad_tail(x + i, n - i, group);
    add_group(group);
    flush(lanes, wide);
  }
  return {lanes_total(wide), max};
#endif
}

}  // namespace kiln
