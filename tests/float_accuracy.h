// Helpers of the float32 accuracy tests (tests/runtime/pointwise_accuracy_test.cpp and
// tests/cuda_host/cuda_preamble_host_test.cpp): the distance in ulps between two floats, and the
// inputs both sweep.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kiln/base/pointwise_math.h"

namespace kiln_test {

// Distance in representable floats between a and b (0 when equal, both NaN, or 0 and -0).
inline int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto key = [](float f) {
    auto i = static_cast<int64_t>(std::bit_cast<int32_t>(f));
    return i < 0 ? -(i & 0x7fffffff) : i;
  };
  int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

// Inputs: a uniform grid of `n` steps over [-limit, limit] plus +-2^k * (1 + j/64) for every
// binade down to 1e-30, zeros, infinities and NaN.
inline std::vector<float> accuracy_sweep(float limit, int n = 400000) {
  std::vector<float> v;
  for (int i = 0; i <= n; ++i)
    v.push_back(-limit + 2 * limit * static_cast<float>(i) / static_cast<float>(n));
  for (int k = -100; k <= 8; ++k) {
    for (int j = 0; j < 64; ++j) {
      float x = std::ldexp(1.0f + static_cast<float>(j) / 64, k);
      if (x > limit) continue;
      v.push_back(x);
      v.push_back(-x);
    }
  }
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::nanf("")})
    v.push_back(x);
  return v;
}

// Signed zeros, infinities and NaNs of both signs: where a copysign or a clamp by bits (Note
// [Clamps and signs by bits]) can go wrong while every ulp distance above stays 0.
// Each is repeated in a rotating order over 96 elements, so that the vectorized bodies of the
// kernels see every one in every lane position, not only their scalar tails.
inline std::vector<float> signed_special_inputs() {
  float inf = std::numeric_limits<float>::infinity();
  const float values[] = {0.0f, -0.0f, inf, -inf, std::nanf(""), -std::nanf("")};
  std::vector<float> v;
  for (int i = 0; i < 96; ++i)
    v.push_back(values[(i + i / 6) % 6]);
  return v;
}

// got equals ref rounded to float bit for bit (so the sign of a zero counts), or both are NaN.
inline bool same_bits_or_both_nan(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got);
  return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(static_cast<float>(ref));
}

// gelu(approximate="none") = x Phi(x) in double, with its limit -0 at -inf (where
// 0.5 x (1 + erf) gives NaN): the value every backend must give at signed_special_inputs().
inline double gelu_special(float x) {
  if (std::isinf(x) && x < 0) return -0.0;
  return static_cast<double>(x) * (std::erfc(static_cast<double>(x) * -0.70710678118654752440) / 2);
}
// The float32 gelu is -0 below -4 sqrt 2 (Note [gelu as one branch]), where the exact value is
// under 4.4e-8 in magnitude (GeluErfNegativeTailKeepsItsRelativeAccuracy checks that bound); the
// reference for ulp measurements over a sweep, which would otherwise count that as billions of ulp.
inline double gelu_sweep_reference(float x) {
  return x < -kiln::math::kGeluTailCap ? -0.0 : gelu_special(x);
}

// (x, y) pairs for pow (Note [pow in double-float]), where t = y log2|x| stretches the error of
// log2|x| most: y scaled so that |t| reaches 150 (2^t near the ends of the float range), with x
// from every binade (subnormals too) and of both signs (a negative x with an integer y), x within
// 2^-9 of 1 (log2|x| tiny), and x next to the mantissa split points sqrt(1/2) and sqrt(2), where
// the double-float log2 carries its largest correction. Seeded, so every run checks the same.
struct PowInputs {
  std::vector<float> x, y;
};
inline PowInputs pow_accuracy_inputs(int per_kind = 100000) {
  PowInputs in;
  std::mt19937 gen(20261123);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  auto add = [&](float x, bool integer_y) {
    double l = std::log2(std::fabs(static_cast<double>(x)));
    if (l == 0 || !std::isfinite(l)) return;
    double y = unit(gen) * 150.0 / std::fabs(l);
    in.x.push_back(x);
    in.y.push_back(static_cast<float>(integer_y ? std::nearbyint(y) : y));
  };
  for (int i = 0; i < per_kind; ++i) {
    auto bits = static_cast<uint32_t>(gen()) % 0x7f800000u;
    bool negative = (i & 1) != 0;
    float x = std::bit_cast<float>(bits);
    add(negative ? -x : x, negative);
    add(1.0f + static_cast<float>(unit(gen) * 0x1p-9), false);
    auto offset = static_cast<int32_t>(gen() % 200001) - 100000;
    float near_split = std::bit_cast<float>(static_cast<uint32_t>(0x3f3504f3 + offset));
    add((i & 2) != 0 ? near_split * 2 : near_split, false);
  }
  return in;
}

// Values where C99's pow has its special cases: zeros, +-1, infinities, NaN, integers odd and
// even (around 2^23 and 2^24, where floats stop having fractions and odd integers), non-integers,
// the smallest subnormal and the largest float.
inline std::vector<float> pow_special_values() {
  float inf = std::numeric_limits<float>::infinity();
  return {0.0f,
          -0.0f,
          1.0f,
          -1.0f,
          inf,
          -inf,
          std::nanf(""),
          2.0f,
          -2.0f,
          0.5f,
          -0.5f,
          3.0f,
          -3.0f,
          2.5f,
          -2.5f,
          0x1p-149f,
          -0x1p-149f,
          0x1.fffffep127f,
          -0x1.fffffep127f,
          0x1p23f,
          0x1.000002p23f,
          -0x1.000002p23f,
          0x1.fffffep23f,
          0x1p24f,
          -0x1p24f,
          0x1p31f,
          -0x1p31f,
          1e-3f,
          1.0000001f,
          0.99999994f};
}

}  // namespace kiln_test
