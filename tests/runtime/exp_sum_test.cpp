// The float32 sums of exp(x - ref) behind logsumexp and log_softmax (Note [Table-driven exp for
// sums]) and logsumexp's one-pass blocks (Note [One pass for logsumexp]), against double loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/runtime/kernels/exp_sum_vec.h"
#include "test_util.h"

namespace {

using kiln::Tensor;

// Every shift d from -90 (0 below -87) up to kExpSumMaxShift, 1/64 apart and so across all
// eight table entries and both signs of the fraction. 32 copies fill each vector lane once, so
// each lane's float sum is the term itself and the double total is exactly 32 terms; one copy
// alone takes the scalar tail.
TEST(ExpSum, TermsMatchExpAcrossTheRangeInVectorAndTailForms) {
  double worst = 0;
  float worst_at = 0;
  for (int k = -90 * 64; k <= 64 * 64; ++k) {
    float d = static_cast<float>(k) / 64.0f;
    for (float ref : {0.0f, -3.25f, 1000.5f}) {
      float v = ref + d;
      if (v - ref != d) continue;  // d not representable at this ref's magnitude
      std::vector<float> x(32, v);
      double vec = kiln::sum_exp_shifted(x.data(), 32, ref).sum / 32.0;
      double tail = kiln::sum_exp_shifted(x.data(), 1, ref).sum;
      if (d < -87) {
        EXPECT_EQ(vec, 0) << d;
        EXPECT_EQ(tail, 0) << d;
        continue;
      }
      double exact = std::exp(static_cast<double>(d));
      double err = std::max(std::abs(vec / exact - 1), std::abs(tail / exact - 1));
      if (err > worst) {
        worst = err;
        worst_at = d;
      }
    }
  }
  // The bound scripts/fit_math_coefficients.py reports (1.5e-7, 2.5 float ulps): the fit, the
  // table's rounding and the final product.
  EXPECT_LE(worst, 1.6e-7) << "worst at d = " << worst_at;
}

// Fewer elements than one group of lanes go through the lanes padded with -inf.
TEST(ExpSum, ShortRunsMatchTheirSums) {
  for (int64_t n : {1, 3, 10, 31, 33}) {
    auto x = kiln_test::random_vector<float>(static_cast<size_t>(n), -5, 1, 44);
    double s = 0;
    float mx = -std::numeric_limits<float>::infinity();
    for (float v : x) {
      s += std::exp(static_cast<double>(v) - 1.0);
      mx = std::max(mx, v);
    }
    kiln::ExpSum e = kiln::sum_exp_shifted(x.data(), n, 1.0f);
    EXPECT_NEAR(e.sum, s, 2e-7 * s) << n;
    EXPECT_EQ(e.max, mx) << n;
  }
}

TEST(ExpSum, MaxSumAndNaNOverARaggedRun) {
  const int64_t n = 3 * 1024 + 77;  // several flushes of the float lanes and a scalar tail
  auto x = kiln_test::random_vector<float>(static_cast<size_t>(n), -20, 5, 41);
  x[2000] = 6.5f;
  double s = 0;
  for (float v : x)
    s += std::exp(static_cast<double>(v) - 2.0);
  kiln::ExpSum e = kiln::sum_exp_shifted(x.data(), n, 2.0f);
  EXPECT_EQ(e.max, 6.5f);
  EXPECT_NEAR(e.sum, s, 4e-7 * s);
  x[n - 3] = 7.0f;  // in the tail
  EXPECT_EQ(kiln::sum_exp_shifted(x.data(), n, 2.0f).max, 7.0f);
  x[100] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(kiln::sum_exp_shifted(x.data(), n, 2.0f).sum));
  EXPECT_EQ(kiln::sum_exp_shifted(x.data(), 0, 2.0f).max, -std::numeric_limits<float>::infinity());
}

double reference_logsumexp(const std::vector<float>& x) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float v : x)
    mx = std::max(mx, static_cast<double>(v));
  double s = 0;
  for (float v : x)
    s += std::exp(static_cast<double>(v) - mx);
  return mx + std::log(s);
}

// Two float ulps of the result: what the float sum lanes and the final rounding leave.
double two_ulps(double v) {
  auto f = static_cast<float>(v);
  return 2.0 * (std::nextafter(std::abs(f), std::numeric_limits<float>::infinity()) - std::abs(f));
}

// One thread, so that the whole run is one chunk and every later block goes through the one-pass
// form against the first block's max.
float logsumexp_one_thread(const std::vector<float>& x) {
  kiln_test::NumThreadsGuard threads(1);
  return kiln::logsumexp(kiln::from_vector(x), {0}).item<float>();
}

// Blocks whose max exceeds the reference by more than kExpSumMaxShift are redone the careful way:
// a later block 200 above the first, then one 40 above that (terms up to e^40 against the
// reference), then blocks far below it.
TEST(LogSumExpOnePass, JumpsAboveAndBelowTheReference) {
  const size_t n = 6 * 8192 + 300;
  auto x = kiln_test::random_vector<float>(n, -2, 2, 42);
  for (size_t i = 2 * 8192; i < 3 * 8192; ++i)
    x[i] += 200;
  for (size_t i = 3 * 8192; i < 4 * 8192; ++i)
    x[i] += 240;
  for (size_t i = 4 * 8192; i < n; ++i)
    x[i] -= 500;
  double ref = reference_logsumexp(x);
  EXPECT_NEAR(logsumexp_one_thread(x), ref, two_ulps(ref));
  // Rising steadily: every block's max is above the last one's by more than the margin.
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i) * 0.01f;
  ref = reference_logsumexp(x);
  EXPECT_NEAR(logsumexp_one_thread(x), ref, two_ulps(ref));
}

// The margin is checked as the difference the terms are computed from: at 2^30, floats are 128
// apart and ref + 64 rounds up to ref + 128 when ref's last bit is odd, which let a term of e^128
// through (it wrapped the exponent field) and put the result 128 low.
TEST(LogSumExpOnePass, MarginIsCheckedWithoutRounding) {
  const float ref = 1073741952.0f;  // 2^30 + 128
  std::vector<float> x(2 * 8192, ref);
  x[8192 + 7] = 1073742080.0f;  // 2^30 + 256
  EXPECT_EQ(logsumexp_one_thread(x), 1073742080.0f);
  // A later block exactly kExpSumMaxShift above the first takes the one-pass form.
  std::vector<float> y(2 * 8192, 0.0f);
  y[8192 + 3] = kiln::kExpSumMaxShift;
  double r = reference_logsumexp(y);
  EXPECT_NEAR(logsumexp_one_thread(y), r, two_ulps(r));
}

// The first blocks may leave no reference (all -inf, or +inf or NaN): later finite blocks start
// one when they come.
TEST(LogSumExpOnePass, FirstBlocksWithoutAReference) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = kiln_test::random_vector<float>(3 * 8192 + 11, -3, 3, 45);
  std::fill(x.begin(), x.begin() + 2 * 8192, -inf);
  std::vector<float> finite(x.begin() + 2 * 8192, x.end());
  double r = reference_logsumexp(finite);
  EXPECT_NEAR(logsumexp_one_thread(x), r, two_ulps(r));
  x[5] = inf;
  EXPECT_EQ(logsumexp_one_thread(x), inf);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(logsumexp_one_thread(x)));
}

TEST(LogSumExpOnePass, SpecialValuesInLaterBlocks) {
  const size_t n = 4 * 8192 + 5;
  const float inf = std::numeric_limits<float>::infinity();
  auto x = kiln_test::random_vector<float>(n, -1, 1, 43);
  auto with = [&](size_t i, float v) {
    auto y = x;
    y[i] = v;
    return logsumexp_one_thread(y);
  };
  EXPECT_TRUE(std::isnan(with(3 * 8192 + 10, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(with(2 * 8192 + 10, inf), inf);
  // -inf terms are 0: the result is that of the other elements.
  auto y = x;
  double ref_without = 0;
  {
    std::vector<float> rest(x.begin(), x.end());
    rest.erase(rest.begin() + 8192 + 10);
    ref_without = reference_logsumexp(rest);
  }
  EXPECT_NEAR(with(8192 + 10, -inf), ref_without, two_ulps(ref_without));
  // All -inf after the first block: those blocks add nothing.
  std::fill(y.begin() + 8192, y.end(), -inf);
  std::vector<float> first(x.begin(), x.begin() + 8192);
  double ref_first = reference_logsumexp(first);
  EXPECT_NEAR(logsumexp_one_thread(y), ref_first, two_ulps(ref_first));
  // All -inf everywhere stays -inf.
  std::fill(y.begin(), y.end(), -inf);
  EXPECT_EQ(logsumexp_one_thread(y), -inf);
}

}  // namespace
