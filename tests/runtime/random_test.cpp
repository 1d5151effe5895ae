// Random numbers: Philox4x32-10 against the Random123 known-answer vectors, the element
// formula of Note [Random streams], reproducibility under manual_seed and across thread
// counts, and the moments of rand / randn.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <numbers>

#include "kiln/base/philox.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Philox4x32;
using kiln::Tensor;
using Block = std::array<uint32_t, 4>;

// Packs four 32-bit counter words and two key words into block()'s 64-bit arguments: word 0 is
// the low half of counter_lo, word 2 the low half of counter_hi, key word 0 the low half of key.
Block philox(Block ctr, std::array<uint32_t, 2> key) {
  uint64_t k = (uint64_t{key[1]} << 32) | key[0];
  uint64_t lo = (uint64_t{ctr[1]} << 32) | ctr[0];
  uint64_t hi = (uint64_t{ctr[3]} << 32) | ctr[2];
  return Philox4x32::block(k, lo, hi);
}

// Random123 kat_vectors, philox4x32 with 10 rounds.
TEST(Philox, KnownAnswerZeroCounterZeroKey) {
  EXPECT_EQ(philox({0, 0, 0, 0}, {0, 0}), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, KnownAnswerAllOnes) {
  EXPECT_EQ(philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, KnownAnswerPiDigits) {
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, DifferentCountersAndKeysGiveDifferentBlocks) {
  Block a = Philox4x32::block(1, 0, 0), b = Philox4x32::block(1, 1, 0),
        c = Philox4x32::block(2, 0, 0), d = Philox4x32::block(1, 0, 1);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(a, Philox4x32::block(1, 0, 0));  // a pure function
}

// ---- the element formula ----

// Note [Random streams]: uniform element i uses word i % 4 of block (seed, offset + i / 4); the
// float is its top 24 bits times 2^-24.
float ref_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  uint32_t word = Philox4x32::block(seed, offset + i / 4, 0)[i % 4];
  return static_cast<float>(word >> 8) / 16777216.0f;
}

// Normal element i: Box-Muller of words 2(i%2), 2(i%2)+1 of block (seed, offset + i / 2), with
// u1 = (a + 1) / 2^32 in (0, 1] and u2 = b / 2^32.
double ref_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  Block w = Philox4x32::block(seed, offset + i / 2, 0);
  double u1 = (static_cast<double>(w[2 * (i % 2)]) + 1.0) / 4294967296.0;
  double u2 = static_cast<double>(w[2 * (i % 2) + 1]) / 4294967296.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

TEST(RandomStreams, RandFloat32FollowsTheNoteFormula) {
  const uint64_t seed = 20240601;
  kiln::manual_seed(seed);
  auto first = kiln::rand({10}).to_vector<float>();
  for (uint64_t i = 0; i < 10; ++i)
    EXPECT_EQ(first[i], ref_uniform(seed, 0, i)) << i;
  // The first call used ceil(10 / 4) = 3 blocks: the next call starts at offset 3.
  auto second = kiln::rand({2, 3}).to_vector<float>();
  for (uint64_t i = 0; i < 6; ++i)
    EXPECT_EQ(second[i], ref_uniform(seed, 3, i)) << i;
}

TEST(RandomStreams, RandnFloat32FollowsTheNoteFormula) {
  const uint64_t seed = 77;
  kiln::manual_seed(seed);
  auto first = kiln::randn({7}).to_vector<float>();
  for (uint64_t i = 0; i < 7; ++i) {
    EXPECT_NEAR(first[i], ref_normal(seed, 0, i), 1e-6 * (1 + std::abs(ref_normal(seed, 0, i))))
        << i;
  }
  // ceil(7 / 2) = 4 blocks used.
  auto second = kiln::randn({3}, kiln::kFloat64).to_vector<double>();
  for (uint64_t i = 0; i < 3; ++i)
    EXPECT_NEAR(second[i], ref_normal(seed, 4, i), 1e-12) << i;
}

TEST(RandomStreams, LargeRandMatchesFormulaAtEveryElement) {
  const uint64_t seed = 5;
  kiln::manual_seed(seed);
  kiln_test::NumThreadsGuard threads(4);
  auto v = kiln::rand({70001}).to_vector<float>();
  for (uint64_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], ref_uniform(seed, 0, i)) << i;
}

// ---- reproducibility ----

TEST(RandomSeeding, SameSeedSameValuesDifferentSeedDifferentValues) {
  kiln::manual_seed(123);
  auto a = kiln::rand({1000}).to_vector<float>();
  auto an = kiln::randn({1000}).to_vector<float>();
  kiln::manual_seed(123);
  auto b = kiln::rand({1000}).to_vector<float>();
  auto bn = kiln::randn({1000}).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_EQ(an, bn);
  kiln::manual_seed(124);
  auto c = kiln::rand({1000}).to_vector<float>();
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == c[i];
  EXPECT_LT(same, 5);
}

TEST(RandomSeeding, ConsecutiveCallsDiffer) {
  kiln::manual_seed(9);
  auto a = kiln::rand({256}).to_vector<float>();
  auto b = kiln::rand({256}).to_vector<float>();
  EXPECT_NE(a, b);
}

TEST(RandomSeeding, ValuesDoNotDependOnThreadCount) {
  std::vector<float> u1, n1, u2, n2;
  std::vector<double> d1, d2;
  {
    kiln_test::NumThreadsGuard threads(1);
    kiln::manual_seed(2024);
    u1 = kiln::rand({100003}).to_vector<float>();
    n1 = kiln::randn({100003}).to_vector<float>();
    d1 = kiln::rand({50001}, kiln::kFloat64).to_vector<double>();
  }
  {
    kiln_test::NumThreadsGuard threads(2);
    kiln::manual_seed(2024);
    u2 = kiln::rand({100003}).to_vector<float>();
    n2 = kiln::randn({100003}).to_vector<float>();
    d2 = kiln::rand({50001}, kiln::kFloat64).to_vector<double>();
  }
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(n1, n2);
  EXPECT_EQ(d1, d2);
}

// ---- distributions ----

struct Moments {
  double mean, var, min, max;
};
template <class T>
Moments moments(const std::vector<T>& v) {
  double s = 0, s2 = 0, lo = 1e300, hi = -1e300;
  for (const T& x : v) {
    double d = kiln_test::to_d(x);
    s += d;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  double mean = s / static_cast<double>(v.size());
  for (const T& x : v)
    s2 += (kiln_test::to_d(x) - mean) * (kiln_test::to_d(x) - mean);
  return {mean, s2 / static_cast<double>(v.size()), lo, hi};
}

constexpr int64_t kSamples = 1000000;

TEST(RandomDistribution, RandFloat32IsUniformOnUnitInterval) {
  kiln::manual_seed(31337);
  Tensor t = kiln::rand({1000, 1000});
  EXPECT_EQ(t.dtype(), kiln::kFloat32);
  Moments m = moments(t.to_vector<float>());
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  // Standard errors: mean sqrt(1/12/n) = 2.9e-4, variance sqrt((1/80 - 1/144)/n) = 7.5e-5.
  EXPECT_NEAR(m.mean, 0.5, 5 * 2.9e-4);
  EXPECT_NEAR(m.var, 1.0 / 12, 5 * 7.5e-5);
}

TEST(RandomDistribution, RandFloat64IsUniformOnUnitInterval) {
  kiln::manual_seed(4242);
  Moments m = moments(kiln::rand({kSamples}, kiln::kFloat64).to_vector<double>());
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  EXPECT_NEAR(m.mean, 0.5, 5 * 2.9e-4);
  EXPECT_NEAR(m.var, 1.0 / 12, 5 * 7.5e-5);
}

// Consecutive float64 values must be independent. frac(x_i * 2^32) is the low 21 bits of
// element i; for independent uniforms it is uncorrelated with x_{i+1}.
TEST(RandomDistribution, ConsecutiveFloat64ValuesAreUncorrelated) {
  kiln::manual_seed(99);
  auto v = kiln::rand({100000}, kiln::kFloat64).to_vector<double>();
  std::vector<double> low, next;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    double scaled = v[i] * 4294967296.0;
    low.push_back(scaled - std::floor(scaled));
    next.push_back(v[i + 1]);
  }
  Moments ml = moments(low), mn = moments(next);
  double cov = 0;
  for (size_t i = 0; i < low.size(); ++i)
    cov += (low[i] - ml.mean) * (next[i] - mn.mean);
  cov /= static_cast<double>(low.size());
  double corr = cov / std::sqrt(ml.var * mn.var);
  EXPECT_LT(std::abs(corr), 0.02) << "lag-1 correlation of the low bits with the next value";
}

TEST(RandomDistribution, RandnIsStandardNormal) {
  kiln::manual_seed(555);
  Tensor t = kiln::randn({kSamples});
  Moments m = moments(t.to_vector<float>());
  // Standard errors: mean 1/sqrt(n) = 1e-3, variance sqrt(2/n) = 1.4e-3.
  EXPECT_NEAR(m.mean, 0.0, 5e-3);
  EXPECT_NEAR(m.var, 1.0, 7e-3);
  EXPECT_LT(m.min, -4.0);  // a million samples reach past 4 sigma
  EXPECT_GT(m.max, 4.0);
  // Fraction within one sigma: 0.682689 (standard error 4.7e-4).
  auto v = t.to_vector<float>();
  int64_t inside = 0;
  for (float x : v)
    inside += std::abs(x) < 1.0f;
  EXPECT_NEAR(static_cast<double>(inside) / kSamples, 0.682689, 5 * 4.7e-4);
}

TEST(RandomDistribution, HalfTypesStayBelowOne) {
  // rand is uniform on [0, 1): rounding to a 16-bit type must not produce 1.0.
  kiln::manual_seed(8);
  auto h = kiln_test::to_floats(kiln::rand({200000}, kiln::kFloat16).to_vector<kiln::Half>());
  auto b = kiln_test::to_floats(kiln::rand({200000}, kiln::kBFloat16).to_vector<kiln::BFloat16>());
  Moments mh = moments(h), mb = moments(b);
  EXPECT_GE(mh.min, 0.0);
  EXPECT_LT(mh.max, 1.0);
  EXPECT_GE(mb.min, 0.0);
  EXPECT_LT(mb.max, 1.0);
  EXPECT_NEAR(mh.mean, 0.5, 0.01);
  EXPECT_NEAR(mb.mean, 0.5, 0.01);
}

TEST(RandomDistribution, ShapesAndErrors) {
  Tensor t = kiln::rand({2, 3, 4});
  EXPECT_EQ(t.sizes(), (kiln::Shape{2, 3, 4}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(kiln::randn({0, 5}).numel(), 0);
  EXPECT_EQ(kiln::rand({}).dim(), 0);
  EXPECT_TRUE(
      kiln_test::throws_error_containing([] { kiln::rand({3}, kiln::kInt64); }, {"rand", "int64"}));
  EXPECT_TRUE(
      kiln_test::throws_error_containing([] { kiln::randn({3}, kiln::kBool); }, {"randn", "bool"}));
}

}  // namespace
