// Vectorized building blocks shared by the reduction and normalization kernels. GCC neither
// vectorizes a select-based max/min reduction loop without -ffinite-math-only nor lowers
// generic vector selects well at the SSE2 baseline, so on x86-64 the extreme of a run uses
// intrinsics (four independent accumulators): AVX where the build targets it
// (KILN_CPU_BASELINE, the same for every library source, so each template has one definition),
// SSE2 otherwise; elsewhere it is a scalar loop.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/runtime/kernels/float_loop_clones.h"

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kiln {

namespace detail {

template <bool kMax, class T>
T better(T a, T b) {
  if constexpr (kMax) {
    return b > a ? b : a;
  } else {
    return b < a ? b : a;
  }
}

#if defined(__SSE2__)
// SSE2 lanes of float (4) or double (2): max/min lanes plus an unordered (NaN) mask.
template <class T>
struct Sse;
template <>
struct Sse<float> {
  using V = __m128;
  static constexpr int kW = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static V set1(float v) { return _mm_set1_ps(v); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V min(V a, V b) { return _mm_min_ps(a, b); }
  static V unord(V a) { return _mm_cmpunord_ps(a, a); }
  static V bor(V a, V b) { return _mm_or_ps(a, b); }
  static bool any(V m) { return _mm_movemask_ps(m) != 0; }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
};
template <>
struct Sse<double> {
  using V = __m128d;
  static constexpr int kW = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static V set1(double v) { return _mm_set1_pd(v); }
  static V max(V a, V b) { return _mm_max_pd(a, b); }
  static V min(V a, V b) { return _mm_min_pd(a, b); }
  static V unord(V a) { return _mm_cmpunord_pd(a, a); }
  static V bor(V a, V b) { return _mm_or_pd(a, b); }
  static bool any(V m) { return _mm_movemask_pd(m) != 0; }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static V sub(V a, V b) { return _mm_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm_mul_pd(a, b); }
};
#endif

#if defined(__AVX__)
// The same interface over AVX lanes (8 float, 4 double), where the build targets them
// (KILN_CPU_BASELINE): twice the elements per instruction of SSE2.
template <class T>
struct Avx;
template <>
struct Avx<float> {
  using V = __m256;
  static constexpr int kW = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V unord(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V bor(V a, V b) { return _mm256_or_ps(a, b); }
  static bool any(V m) { return _mm256_movemask_ps(m) != 0; }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};
template <>
struct Avx<double> {
  using V = __m256d;
  static constexpr int kW = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V set1(double v) { return _mm256_set1_pd(v); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V min(V a, V b) { return _mm256_min_pd(a, b); }
  static V unord(V a) { return _mm256_cmp_pd(a, a, _CMP_UNORD_Q); }
  static V bor(V a, V b) { return _mm256_or_pd(a, b); }
  static bool any(V m) { return _mm256_movemask_pd(m) != 0; }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
};
template <class T>
using Wide = Avx<T>;
#elif defined(__SSE2__)
template <class T>
using Wide = Sse<T>;
#endif

}  // namespace detail

// The max (kMax) or min of x[0..n) and `init`; NaN if any element is NaN (as torch.amax).
template <class T, bool kMax>
T extreme_run(const T* x, int64_t n, T init) {
  using detail::better;
  T total = init;
  int64_t i = 0;
  bool nan = false;
#if defined(__SSE2__)
  if constexpr (std::is_floating_point_v<T>) {
    using S = detail::Wide<T>;
    using V = typename S::V;
    constexpr int kW = S::kW;
    auto pick = [](V a, V b) { return kMax ? S::max(a, b) : S::min(a, b); };
    V a0 = S::set1(init), a1 = a0, a2 = a0, a3 = a0;
    V mask = S::unord(S::set1(0));
    for (; i + 4 * kW <= n; i += 4 * kW) {
      V v0 = S::load(x + i), v1 = S::load(x + i + kW);
      V v2 = S::load(x + i + 2 * kW), v3 = S::load(x + i + 3 * kW);
      a0 = pick(a0, v0);
      a1 = pick(a1, v1);
      a2 = pick(a2, v2);
      a3 = pick(a3, v3);
      mask = S::bor(mask,
                    S::bor(S::bor(S::unord(v0), S::unord(v1)), S::bor(S::unord(v2), S::unord(v3))));
    }
    T lanes[kW];
    S::store(lanes, pick(pick(a0, a1), pick(a2, a3)));
    for (T v : lanes)
      total = better<kMax>(total, v);
    nan = S::any(mask);
  }
#endif
  for (; i < n; ++i) {
    total = better<kMax>(total, x[i]);
    nan = nan || x[i] != x[i];
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan) return std::numeric_limits<T>::quiet_NaN();
  }
  return total;
}

// sum(x[0..n)) (shift = 0) or sum((x - shift)^2) (kSquares): T lanes (four vector
// accumulators), added up in double. Meant for blocks of about a thousand elements, whose
// partial sums T holds accurately; callers combine blocks in double.
template <class T, bool kSquares>
double block_sum(const T* x, int64_t n, T shift) {
  int64_t i = 0;
  double total = 0;
#if defined(__SSE2__)
  if constexpr (std::is_floating_point_v<T>) {
    using S = detail::Wide<T>;
    using V = typename S::V;
    constexpr int kW = S::kW;
    V zero = S::set1(0), c = S::set1(shift);
    V a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    auto term = [&](V v) {
      if constexpr (kSquares) {
        V d = S::sub(v, c);
        return S::mul(d, d);
      } else {
        return v;
      }
    };
    for (; i + 4 * kW <= n; i += 4 * kW) {
      a0 = S::add(a0, term(S::load(x + i)));
      a1 = S::add(a1, term(S::load(x + i + kW)));
      a2 = S::add(a2, term(S::load(x + i + 2 * kW)));
      a3 = S::add(a3, term(S::load(x + i + 3 * kW)));
    }
    T lanes[kW];
    S::store(lanes, S::add(S::add(a0, a1), S::add(a2, a3)));
    for (T v : lanes)
      total += static_cast<double>(v);
  }
#endif
  for (; i < n; ++i) {
    double v = static_cast<double>(x[i]);
    if constexpr (kSquares) {
      double d = v - static_cast<double>(shift);
      total += d * d;
    } else {
      total += v;
    }
  }
  return total;
}

// Note [Prefetch across blocks]
// The blocked reducers (var, logsumexp) stream a block from memory, then stop to merge its result
// (chains of dependent adds, a division or a libm exp). During that stop the out-of-order window
// fills with the merge and issues no loads, and the hardware prefetcher alone left var's full
// reduction at 0.6 of sum's speed from DRAM. Their inner loops therefore ask for the lines a
// fixed distance ahead, so that the memory stays busy across the stops. A prefetch past the end
// of the data is harmless (it does not fault).

// Asks for the kBytes of lines that start `ahead` bytes past p. The address is computed as an
// integer: it may lie past the end of the data, where pointer arithmetic would be undefined.
template <int kBytes>
inline void prefetch_lines(const void* p, uintptr_t ahead) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p) + ahead;
  for (int b = 0; b < kBytes; b += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(a + static_cast<uintptr_t>(b)));
}

// Adds x[i] - shift and its square into lanes1[i % kMomentLanes] and lanes2[i % kMomentLanes] for
// the whole groups of kMomentLanes elements and returns how many elements it took: 2 x 32
// independent accumulators, which the compiler keeps in vector registers (the square's add is
// a multiply-add). With the AVX2 intrinsics this was compute bound at 0.4-0.6 of a fast copy;
// hence also the AVX-512 clone (Note [Multiversioned float loops]).
constexpr int kMomentLanes = 32;
template <class T>
KILN_FLOAT_LOOP_CLONES int64_t moments_into_lanes(const T* x, int64_t n, T shift, T* lanes1,
                                                  T* lanes2) {
  // Local accumulators: the caller's arrays might alias x, and through them every step would be
  // a load and a store (a store-forwarding chain); these the compiler keeps in registers.
  T a[kMomentLanes], q[kMomentLanes];
  for (int j = 0; j < kMomentLanes; ++j) {
    a[j] = lanes1[j];
    q[j] = lanes2[j];
  }
  int64_t i = 0;
  for (; i + kMomentLanes <= n; i += kMomentLanes) {
    // 2 KB ahead (Note [Prefetch across blocks]).
    prefetch_lines<kMomentLanes * sizeof(T)>(x + i, 2048);
    for (int j = 0; j < kMomentLanes; ++j) {
      T d = x[i + j] - shift;
      a[j] += d;
      q[j] += d * d;
    }
  }
  for (int j = 0; j < kMomentLanes; ++j) {
    lanes1[j] = a[j];
    lanes2[j] = q[j];
  }
  return i;
}

// One pass over x[0..n) for the moments about `shift`: {sum(x - shift), sum((x - shift)^2)},
// T lanes added up in double. With `shift` an element of the block, the deviations are small
// and M2 = s2 - s1^2 / n does not cancel; each lane adds a kMomentLanes-th of the block, and
// blocks of about two thousand elements (64 terms a lane) keep the T lanes accurate.
template <class T>
void block_moments(const T* x, int64_t n, T shift, double& s1, double& s2) {
  T lanes1[kMomentLanes] = {}, lanes2[kMomentLanes] = {};
  int64_t i = 0;
  // Integer inputs are never reduced this way (var computes in a float type); their squares
  // would overflow T.
  if constexpr (std::is_floating_point_v<T>) i = moments_into_lanes(x, n, shift, lanes1, lanes2);
  // The lanes in double, four partial sums each: a single chain of 32 dependent adds cost as
  // much as the block's loop.
  double p1[4] = {}, p2[4] = {};
  for (int j = 0; j < kMomentLanes; ++j) {
    p1[j % 4] += static_cast<double>(lanes1[j]);
    p2[j % 4] += static_cast<double>(lanes2[j]);
  }
  s1 = (p1[0] + p1[1]) + (p1[2] + p1[3]);
  s2 = (p2[0] + p2[1]) + (p2[2] + p2[3]);
  for (; i < n; ++i) {
    double d = static_cast<double>(x[i]) - static_cast<double>(shift);
    s1 += d;
    s2 += d * d;
  }
}

}  // namespace kiln
