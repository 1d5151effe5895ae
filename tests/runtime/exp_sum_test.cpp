// The float32 sums of exp(x - ref) behind logsumexp and log_softmax (Note [Table-driven exp for
// sums]) and logsumexp's one-pass blocks (Note [One pass for logsumexp]), against double loops.
#include <gtest/gtest.h>

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
  // 2 float ulps (2^-23 = 1.2e-7): the fit, the table's rounding and the final product.
  EXPECT_LE(worst, 2.4e-7) << "worst at d = " << worst_at;
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
  EXPECT_NEAR(logsumexp_one_thread(x), ref, 2e-7 * std::abs(ref));
  // Rising steadily: every block's max is above the last one's, some by more than the margin.
  for (size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i) * 0.01f;
  ref = reference_logsumexp(x);
  EXPECT_NEAR(logsumexp_one_thread(x), ref, 2e-7 * std::abs(ref));
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
  EXPECT_NEAR(with(8192 + 10, -inf), ref_without, 2e-7 * std::abs(ref_without));
  // All -inf after the first block: those blocks add nothing.
  std::fill(y.begin() + 8192, y.end(), -inf);
  std::vector<float> first(x.begin(), x.begin() + 8192);
  double ref_first = reference_logsumexp(first);
  EXPECT_NEAR(logsumexp_one_thread(y), ref_first, 2e-7 * std::abs(ref_first) + 1e-7);
  // All -inf everywhere stays -inf.
  std::fill(y.begin(), y.end(), -inf);
  EXPECT_EQ(logsumexp_one_thread(y), -inf);
}

}  // namespace
