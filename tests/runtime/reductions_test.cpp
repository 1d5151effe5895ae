// sum and mean over dims: every dim subset of a 3-D tensor (with and without keepdim, negative
// and unordered dims), strided inputs, empty dims, integer and bool inputs, large inputs, and
// the row/column kernels, against a reference loop accumulating in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::random_vector;
using kiln_test::ref_numel;
using kiln_test::throws_error_containing;
using kiln_test::unravel;

struct RefReduction {
  Shape sizes;               // output shape
  std::vector<double> sums;  // per output element
  std::vector<int64_t> counts;
};

// Reduces row-major `values` of shape `sizes` over `dims` (already non-negative; empty = all).
template <class T>
RefReduction ref_reduce(const std::vector<T>& values, const Shape& sizes, std::vector<int64_t> dims,
                        bool keepdim) {
  std::vector<bool> reduced(sizes.size(), dims.empty());
  for (int64_t d : dims)
    reduced[static_cast<size_t>(d)] = true;
  RefReduction r;
  Shape kept_sizes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced[d]) kept_sizes.push_back(sizes[d]);
    if (!reduced[d]) {
      r.sizes.push_back(sizes[d]);
    } else if (keepdim) {
      r.sizes.push_back(1);
    }
  }
  int64_t out_n = ref_numel(kept_sizes);
  r.sums.assign(static_cast<size_t>(out_n), 0.0);
  r.counts.assign(static_cast<size_t>(out_n), 0);
  for (int64_t i = 0; i < ref_numel(sizes); ++i) {
    kiln_test::Index idx = unravel(i, sizes);
    int64_t o = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (!reduced[d]) o = o * sizes[d] + idx[d];
    }
    r.sums[static_cast<size_t>(o)] += kiln_test::to_d(values[static_cast<size_t>(i)]);
    r.counts[static_cast<size_t>(o)] += 1;
  }
  return r;
}

std::vector<double> means_of(const RefReduction& r) {
  std::vector<double> out;
  for (size_t i = 0; i < r.sums.size(); ++i) {
    out.push_back(r.counts[i] == 0 ? std::numeric_limits<double>::quiet_NaN()
                                   : r.sums[i] / static_cast<double>(r.counts[i]));
  }
  return out;
}

struct DimsCase {
  const char* name;
  Shape dims;     // as passed to the op
  Shape wrapped;  // the same dims, non-negative
};

using ReduceParam = std::tuple<DimsCase, bool>;
class ReduceDims : public ::testing::TestWithParam<ReduceParam> {};

const Shape kSizes = {3, 4, 5};

TEST_P(ReduceDims, SumAndMeanFloat32) {
  const auto& [c, keepdim] = GetParam();
  auto x = random_vector<float>(60, -2, 2, 31);
  Tensor t = kiln::from_vector(x, kSizes);
  RefReduction ref = ref_reduce(x, kSizes, c.wrapped, keepdim);
  Tensor s = kiln::sum(t, c.dims, keepdim);
  ASSERT_EQ(s.sizes(), ref.sizes);
  EXPECT_EQ(s.dtype(), kiln::kFloat32);
  EXPECT_ALL_CLOSE(s.to_vector<float>(), ref.sums, 1e-4, 1e-5);
  Tensor m = t.mean(c.dims, keepdim);
  ASSERT_EQ(m.sizes(), ref.sizes);
  EXPECT_ALL_CLOSE(m.to_vector<float>(), means_of(ref), 1e-4, 1e-6);
}

TEST_P(ReduceDims, SumAndMeanFloat64) {
  const auto& [c, keepdim] = GetParam();
  auto x = random_vector<double>(60, -2, 2, 32);
  Tensor t = kiln::from_vector(x, kSizes);
  RefReduction ref = ref_reduce(x, kSizes, c.wrapped, keepdim);
  EXPECT_ALL_CLOSE(kiln::sum(t, c.dims, keepdim).to_vector<double>(), ref.sums, 1e-12, 1e-13);
  EXPECT_ALL_CLOSE(kiln::mean(t, c.dims, keepdim).to_vector<double>(), means_of(ref), 1e-12, 1e-13);
}

TEST_P(ReduceDims, SumOfTransposedInput) {
  const auto& [c, keepdim] = GetParam();
  // t is the [3, 4, 5] permutation of a contiguous [5, 3, 4] tensor: not contiguous.
  auto base = random_vector<float>(60, -2, 2, 33);
  Tensor t = kiln::from_vector(base, {5, 3, 4}).permute({1, 2, 0});
  ASSERT_FALSE(t.is_contiguous());
  auto logical = kiln_test::ref_strided(base, kSizes, {4, 1, 12}, 0);
  RefReduction ref = ref_reduce(logical, kSizes, c.wrapped, keepdim);
  EXPECT_ALL_CLOSE(kiln::sum(t, c.dims, keepdim).to_vector<float>(), ref.sums, 1e-4, 1e-5);
  EXPECT_ALL_CLOSE(kiln::mean(t, c.dims, keepdim).to_vector<float>(), means_of(ref), 1e-4, 1e-6);
}

TEST_P(ReduceDims, SumOfInt32GivesExactInt64) {
  const auto& [c, keepdim] = GetParam();
  auto x = random_vector<int32_t>(60, -1000000, 1000000, 34);
  RefReduction ref = ref_reduce(x, kSizes, c.wrapped, keepdim);
  Tensor s = kiln::sum(kiln::from_vector(x, kSizes), c.dims, keepdim);
  EXPECT_EQ(s.dtype(), kiln::kInt64);
  std::vector<int64_t> want(ref.sums.begin(), ref.sums.end());
  EXPECT_EQ(s.to_vector<int64_t>(), want);
}

INSTANTIATE_TEST_SUITE_P(
    AllDimSubsets, ReduceDims,
    ::testing::Combine(::testing::Values(DimsCase{"All", {}, {}}, DimsCase{"D0", {0}, {0}},
                                         DimsCase{"D1", {1}, {1}}, DimsCase{"D2", {2}, {2}},
                                         DimsCase{"Neg1", {-1}, {2}}, DimsCase{"Neg3", {-3}, {0}},
                                         DimsCase{"D0D2", {0, 2}, {0, 2}},
                                         DimsCase{"D2D0", {2, 0}, {0, 2}},
                                         DimsCase{"D0D1", {0, 1}, {0, 1}},
                                         DimsCase{"D1Neg1", {1, -1}, {1, 2}},
                                         DimsCase{"AllExplicit", {0, 1, 2}, {0, 1, 2}}),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<ReduceParam>& p) {
      return std::string(std::get<0>(p.param).name) +
             (std::get<1>(p.param) ? "_keepdim" : "_dropdim");
    });

TEST(Reductions, FullReductionGivesZeroDimOrKeptOnes) {
  Tensor t = kiln::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = t.sum();
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 21.0f);
  EXPECT_EQ(t.sum({}, true).sizes(), (Shape{1, 1}));
  EXPECT_EQ(t.mean().item<float>(), 3.5f);
  EXPECT_EQ(t.sum({1}).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(t.sum({0}, true).sizes(), (Shape{1, 3}));
  EXPECT_EQ(t.sum({0}, true).to_vector<float>(), (std::vector<float>{5, 7, 9}));
}

TEST(Reductions, ZeroDimInput) {
  Tensor s = kiln::full({}, 2.5);
  EXPECT_EQ(kiln::sum(s).item<float>(), 2.5f);
  EXPECT_EQ(kiln::sum(s, {0}).item<float>(), 2.5f);
  EXPECT_EQ(kiln::mean(s, {-1}).item<float>(), 2.5f);
}

TEST(Reductions, EmptyDims) {
  Tensor e = kiln::zeros({0, 3});
  EXPECT_EQ(kiln::sum(e).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(kiln::mean(e).item<float>()));
  Tensor s0 = kiln::sum(e, {0});
  EXPECT_EQ(s0.sizes(), (Shape{3}));
  EXPECT_EQ(s0.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  auto m0 = kiln::mean(e, {0}).to_vector<float>();
  ASSERT_EQ(m0.size(), 3u);
  for (float v : m0)
    EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(kiln::sum(e, {1}).sizes(), (Shape{0}));
  EXPECT_EQ(kiln::sum(e, {1}, true).sizes(), (Shape{0, 1}));
  EXPECT_EQ(kiln::sum(kiln::zeros({0}, kiln::kInt32)).item<int64_t>(), 0);
}

TEST(Reductions, BoolSumCountsTrueAsInt64) {
  std::vector<bool> v = {true, false, true, true, false, true};
  Tensor b = kiln::from_vector(v, {2, 3});
  Tensor s = b.sum();
  EXPECT_EQ(s.dtype(), kiln::kInt64);
  EXPECT_EQ(s.item<int64_t>(), 4);
  EXPECT_EQ(b.sum({0}).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 2}));
  EXPECT_EQ(b.sum({1}).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
}

TEST(Reductions, LargeInt64SumIsExact) {
  Tensor a = kiln::arange(100000);
  EXPECT_EQ(a.sum().item<int64_t>(), int64_t{4999950000});
  Tensor big = kiln::full({3}, int64_t{1} << 61, kiln::kInt64);
  EXPECT_EQ(big.sum({0}).to_vector<int64_t>()[0], int64_t{3} << 61);
}

TEST(Reductions, MeanOfIntegerTensorThrows) {
  EXPECT_TRUE(throws_error_containing([] { kiln::mean(kiln::arange(5)); }, {"mean", "int64"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::mean(kiln::zeros({2}, kiln::kInt32), {0}); },
                                      {"mean", "int32"}));
  EXPECT_TRUE(
      throws_error_containing([] { kiln::mean(kiln::zeros({2}, kiln::kBool)); }, {"mean", "bool"}));
}

TEST(Reductions, DuplicateAndOutOfRangeDimsThrow) {
  Tensor t = kiln::zeros({2, 3, 4});
  EXPECT_TRUE(throws_error_containing([&] { kiln::sum(t, {0, 0}); }, {"sum", "0"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::sum(t, {2, -1}); }, {"sum", "2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mean(t, {1, -2}); }, {"mean"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::sum(t, {3}); }, {"sum", "3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mean(t, {-4}); }, {"mean", "-4"}));
}

TEST(Reductions, HalfTypesAccumulateInFloat) {
  auto x = random_vector<kiln::Half>(3000, -1, 1, 35);
  Tensor t = kiln::from_vector(x, {3, 1000});
  RefReduction ref = ref_reduce(x, {3, 1000}, {1}, false);
  Tensor s = t.sum({1});
  EXPECT_EQ(s.dtype(), kiln::kFloat16);
  std::vector<double> want;
  for (double v : ref.sums)
    want.push_back(static_cast<float>(kiln::Half(static_cast<float>(v))));
  EXPECT_ALL_CLOSE(s.to_vector<kiln::Half>(), want, 1.0 / 1024, 1e-3);
  Tensor m = t.mean({1});
  want.clear();
  for (double v : means_of(ref))
    want.push_back(static_cast<float>(kiln::Half(static_cast<float>(v))));
  EXPECT_ALL_CLOSE(m.to_vector<kiln::Half>(), want, 1.0 / 1024, 1e-6);
  auto b = random_vector<kiln::BFloat16>(2048, 0, 1, 36);
  RefReduction rb = ref_reduce(b, {2048}, {}, false);
  Tensor sb = kiln::from_vector(b).sum();
  EXPECT_EQ(sb.dtype(), kiln::kBFloat16);
  EXPECT_NEAR(static_cast<float>(sb.item<kiln::BFloat16>()), rb.sums[0], rb.sums[0] / 128);
}

// 2^22 random floats in one row: the multi-threaded whole-tensor path.
TEST(ReductionsLarge, Float32SumOf4MElementsMatchesDoubleReference) {
  kiln_test::NumThreadsGuard threads(4);
  const size_t n = size_t{1} << 22;
  auto x = random_vector<float>(n, 0, 1, 37);
  double ref = 0;
  for (float v : x)
    ref += v;
  Tensor t = kiln::from_vector(x);
  float s = t.sum().item<float>();
  EXPECT_NEAR(s, ref, 1e-5 * ref);
  float m = t.mean().item<float>();
  EXPECT_NEAR(m, ref / static_cast<double>(n), 1e-5 * ref / static_cast<double>(n));
  EXPECT_NEAR(t.sum({0}).item<float>(), ref, 1e-5 * ref);
}

// var and logsumexp over many blocks (and both threads' chunks, and a ragged tail): the blocked
// moments merged with Chan's formula, and the log-sum-exp blocks rescaled to the larger max. A
// rising ramp under the noise makes later blocks' maxima larger and an early spike makes one
// earlier block's larger, so both sides of the merge get rescaled. Against two-pass double loops.
TEST(ReductionsLarge, VarAndLogSumExpOverManyBlocksMatchDoubleReferences) {
  kiln_test::NumThreadsGuard threads(2);
  const size_t n = (size_t{1} << 20) + 37;
  auto x = random_vector<float>(n, -1, 1, 39);
  for (size_t i = 0; i < n; ++i)
    x[i] += 100.0f + 4.0f * static_cast<float>(i) / static_cast<float>(n);
  x[5000] = 106.5f;
  double mean = 0;
  for (float v : x)
    mean += v;
  mean /= static_cast<double>(n);
  double m2 = 0, mx = -std::numeric_limits<double>::infinity();
  for (float v : x) {
    m2 += (v - mean) * (v - mean);
    mx = std::max(mx, static_cast<double>(v));
  }
  double s = 0;
  for (float v : x)
    s += std::exp(v - mx);
  Tensor t = kiln::from_vector(x);
  double var = m2 / static_cast<double>(n - 1);
  EXPECT_NEAR(kiln::var(t).item<float>(), var, 1e-5 * var);
  EXPECT_NEAR(kiln::logsumexp(t, {0}).item<float>(), mx + std::log(s), 2e-6 * (mx + std::log(s)));
}

TEST(ReductionsLarge, SumIsIndependentOfThreadCount) {
  auto x = random_vector<float>(size_t{1} << 18, -1, 1, 38);
  Tensor t = kiln::from_vector(x, {512, 512});
  std::vector<float> one, three;
  {
    kiln_test::NumThreadsGuard threads(1);
    one = t.sum({1}).to_vector<float>();
  }
  {
    kiln_test::NumThreadsGuard threads(3);
    three = t.sum({1}).to_vector<float>();
  }
  EXPECT_EQ(one, three);
}

TEST(ReductionsLarge, ColumnReductionOfTallMatrix) {
  kiln_test::NumThreadsGuard threads(3);
  auto x = random_vector<float>(1000 * 37, -1, 1, 39);
  RefReduction ref = ref_reduce(x, {1000, 37}, {0}, false);
  Tensor t = kiln::from_vector(x, {1000, 37});
  EXPECT_ALL_CLOSE(t.sum({0}).to_vector<float>(), ref.sums, 1e-4, 1e-4);
  EXPECT_ALL_CLOSE(t.mean({0}).to_vector<float>(), means_of(ref), 1e-4, 1e-6);
  RefReduction rows = ref_reduce(x, {1000, 37}, {1}, true);
  Tensor r = t.sum({1}, true);
  EXPECT_EQ(r.sizes(), (Shape{1000, 1}));
  EXPECT_ALL_CLOSE(r.to_vector<float>(), rows.sums, 1e-4, 1e-5);
}

TEST(ReductionsLarge, ColumnReductionWithManyColumns) {
  // More kept columns than the column kernel's block of accumulators, split across threads.
  kiln_test::NumThreadsGuard threads(4);
  auto x = random_vector<double>(64 * 5000, -1, 1, 40);
  RefReduction ref = ref_reduce(x, {64, 5000}, {0}, false);
  Tensor t = kiln::from_vector(x, {64, 5000});
  EXPECT_ALL_CLOSE(t.sum({0}).to_vector<double>(), ref.sums, 1e-12, 1e-12);
  RefReduction ref3 = ref_reduce(x, {8, 8, 5000}, {0, 1}, false);
  EXPECT_ALL_CLOSE(t.view({8, 8, 5000}).sum({0, 1}).to_vector<double>(), ref3.sums, 1e-12, 1e-12);
}

TEST(ReductionsLarge, MiddleDimOfLargeStridedTensor) {
  kiln_test::NumThreadsGuard threads(2);
  auto base = random_vector<float>(40 * 50 * 60, -1, 1, 41);
  Tensor t = kiln::from_vector(base, {40, 50, 60}).slice(2, 0, 60, 2);  // [40, 50, 30]
  auto logical = kiln_test::ref_strided(base, {40, 50, 30}, {3000, 60, 2}, 0);
  RefReduction ref = ref_reduce(logical, {40, 50, 30}, {1}, false);
  EXPECT_ALL_CLOSE(t.sum({1}).to_vector<float>(), ref.sums, 1e-4, 1e-5);
  RefReduction ref02 = ref_reduce(logical, {40, 50, 30}, {0, 2}, true);
  EXPECT_ALL_CLOSE(t.sum({0, 2}, true).to_vector<float>(), ref02.sums, 1e-4, 1e-4);
}

TEST(Reductions, InputIsUnchanged) {
  auto x = random_vector<float>(24, -1, 1, 42);
  Tensor t = kiln::from_vector(x, {2, 3, 4});
  (void)t.sum({1});
  (void)t.mean({0, 2}, true);
  EXPECT_EQ(t.to_vector<float>(), x);
  EXPECT_EQ(t.version(), 0u);
}

}  // namespace
