#include "kiln/runtime/kernels/exp_sum_vec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "kiln/runtime/kernels/reduction_vec.h"

#if defined(__GNUC__) && !defined(__clang__)
// The 16-lane helpers below are inlined into the AVX-512 version and never called across an ABI
// boundary, so GCC's note that passing 64-byte vectors without AVX-512 changed ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln {

// Note [Table-driven exp for sums]
// logsumexp reads 4 bytes per element and computes one exp for each. With exp_poly's range
// reduction and polynomial, about 17 vector operations per 16 lanes, it ran at 0.45 of the copy
// bandwidth in runs where the copy reaches 80 GB/s: compute bound. The terms here cost about 13:
// - n = round(d * 8/ln 2), and f = d * 8/ln 2 - n, with the constant in two float parts (each
//   step one multiply-add, so that a float 8/ln 2 does not err by 2^-24 |d| in every term);
// - 2^(f/8) = 1 + f S(f) for |f| <= 1/2, S of degree 2 (the fit leaves 2.5e-8);
// - 2^(n/8) = 2^(n >> 3) * 2^((n & 7)/8): the eighth from an 8-entry table (one permute of a
//   vector register) and the power of two added to its exponent bits.
// The terms are within 1.2e-7 of exp(d) (2 float ulp, as exp_poly).
// scripts/fit_math_coefficients.py computes the table, the split constant and S, and checks that
// bound. GCC's vector extensions write the permute portably (__builtin_shuffle). The loop is
// compiled twice: with 16-lane vectors for AVX-512, where the permute is one vpermps (0.10 ns per
// element in cache, where exp_poly's loop took 0.13); and with 8-lane vectors for everything else,
// AVX2 in particular. A 16-lane shuffle at AVX2 would be split into element moves. The two versions
// compute the same operations per element and per lane, so their results are equal bit for bit.
// Compilers without __builtin_shuffle run the scalar form of the same steps.

namespace {

constexpr float kEighths[8] = {1.0f,        1.09050775f, 1.18920708f, 1.29683959f,
                               1.41421354f, 1.54221082f, 1.68179286f, 1.8340081f};
constexpr float kScale = 11.5415602f;        // 8 / ln 2, rounded to float
constexpr float kScaleLow = 1.54077043e-7f;  // 8 / ln 2 - kScale
constexpr float kRound = 12582912.0f;        // 1.5 * 2^23: d * kScale + kRound holds round(n)
constexpr float kLowest = -87.0f;            // exp(-87) is still a normal float
constexpr float kS2 = 1.08391054e-4f;
constexpr float kS1 = 3.75402556e-3f;
constexpr float kS0 = 8.66434053e-2f;

// exp(d) for one lane or a vector of lanes: F is float or a float vector, U the unsigned integer
// type of its width, and eighth(bits) looks up kEighths[bits % 8] for each lane. Below kLowest the
// term is 0, selected at the end (true value under 2e-38; there n >> 3 would leave the exponent
// field, and clamping d instead lets the compiler fold the clamped lanes' constant without the
// fused roundings). NaN fails that comparison and propagates through p.
template <class F, class U, class Eighth>
[[gnu::always_inline]] inline F shifted_exp_term(F d, Eighth eighth) {
  // The low bits of s hold n, as in math::exp2i; s - kRound is n as a float.
  F s = d * kScale + kRound;
  F n = s - kRound;
  F f = d * kScale - n;
  f = d * kScaleLow + f;
  F p = ((kS2 * f + kS1) * f + kS0) * f + 1.0f;
  U bits = std::bit_cast<U>(s);
  // The shift moves n >> 3 into the exponent field. The constant bits of s shift out.
  U scale = std::bit_cast<U>(eighth(bits)) + ((bits << 20) & 0xFF800000u);
  F term = p * std::bit_cast<F>(scale);
  return d < kLowest ? F{} : term;
}

[[gnu::always_inline]] inline float scalar_term(float d) {
  return shifted_exp_term<float, uint32_t>(d, [](uint32_t b) { return kEighths[b & 7]; });
}

// Each float32 lane adds at most kFlushEvery / kExpSumLanes = 32 terms before it is added into its
// double lane, so that long runs stay accurate to float rounding.
constexpr int64_t kFlushEvery = 1024;

void flush(float (&lanes)[kExpSumLanes], double (&wide)[kExpSumLanes]) {
  for (int j = 0; j < kExpSumLanes; ++j) {
    wide[j] += static_cast<double>(lanes[j]);
    lanes[j] = 0;
  }
}

// The double lanes added through four partial sums, and the elements past the last whole group
// of lanes.
ExpSum finish(const double (&wide)[kExpSumLanes], float max, const float* x, int64_t i, int64_t n,
              float ref) {
  double partial[4] = {};
  for (int j = 0; j < kExpSumLanes; ++j)
    partial[j % 4] += wide[j];
  double total = (partial[0] + partial[1]) + (partial[2] + partial[3]);
  for (; i < n; ++i) {
    max = x[i] > max ? x[i] : max;
    total += static_cast<double>(scalar_term(x[i] - ref));
  }
  return {total, max};
}

// How far ahead the loop asks for lines: the loop is compute bound, and the hardware prefetcher
// alone left it waiting on DRAM (Note [Prefetch across blocks], reduction_vec.h).
constexpr uintptr_t kPrefetchAhead = 2048;

#if defined(__GNUC__) && !defined(__clang__)
#define KILN_EXP_SUM_VECTORS 1

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
  auto eighth = [&](U b) { return __builtin_shuffle(table, b); };
  F acc[kVecs] = {};
  F mx = F{} - std::numeric_limits<float>::infinity();
  float lanes[kExpSumLanes];
  double wide[kExpSumLanes] = {};
  int64_t i = 0;
  while (i + kExpSumLanes <= n) {
    int64_t stop = std::min(n, i + kFlushEvery);
    for (; i + kExpSumLanes <= stop; i += kExpSumLanes) {
      prefetch_lines<kExpSumLanes * sizeof(float)>(x + i, kPrefetchAhead);
      for (int k = 0; k < kVecs; ++k) {
        F v;
        __builtin_memcpy(&v, x + i + k * W, sizeof(F));
        mx = v > mx ? v : mx;
        acc[k] += shifted_exp_term<F, U>(v - ref, eighth);
      }
    }
    for (int k = 0; k < kVecs; ++k) {
      __builtin_memcpy(lanes + k * W, &acc[k], sizeof(F));
      acc[k] = F{};
    }
    flush(lanes, wide);
  }
  float max = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < W; ++j)
    max = mx[j] > max ? mx[j] : max;
  return finish(wide, max, x, i, n, ref);
}

#if defined(__x86_64__) && defined(__linux__)
// Function multiversioning: the loader picks the AVX-512 version where the CPU has it.
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
  int64_t i = 0;
  while (i + kExpSumLanes <= n) {
    int64_t stop = std::min(n, i + kFlushEvery);
    for (; i + kExpSumLanes <= stop; i += kExpSumLanes) {
      for (int j = 0; j < kExpSumLanes; ++j) {
        float v = x[i + j];
        max = v > max ? v : max;
        lanes[j] += scalar_term(v - ref);
      }
    }
    flush(lanes, wide);
  }
  return finish(wide, max, x, i, n, ref);
#endif
}

}  // namespace kiln
