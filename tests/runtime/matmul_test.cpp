// mm, bmm and matmul against a triple loop in double: contiguous, transposed, sliced and
// expanded operands, degenerate sizes, every matmul rank combination with batch broadcasting,
// each float dtype, and the errors.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::random_vector;
using kiln_test::ref_numel;
using kiln_test::throws_error_containing;

// A matrix operand: the tensor (any layout) and its logical row-major values.
struct Mat {
  Tensor t;
  std::vector<double> v;
};

template <class T>
std::vector<double> doubles(const std::vector<T>& v) {
  std::vector<double> out;
  for (const T& x : v)
    out.push_back(kiln_test::to_d(x));
  return out;
}

// A contiguous random tensor of shape `sizes` and dtype T.
template <class T = float>
Mat random_mat(const Shape& sizes, uint32_t seed) {
  auto v = random_vector<T>(static_cast<size_t>(ref_numel(sizes)), -1, 1, seed);
  return {kiln::from_vector(v, sizes), doubles(v)};
}

// The logical values of a view of `base` (row-major values of a contiguous tensor).
Mat view_mat(const std::vector<double>& base, const Tensor& view) {
  return {view, kiln_test::ref_strided(base, view.sizes(), view.strides(), view.storage_offset())};
}

// C[b, i, j] = sum_p A[b, i, p] * B[b, p, j] for row-major [batch, n, k] x [batch, k, m].
std::vector<double> ref_bmm(const std::vector<double>& a, const std::vector<double>& b,
                            int64_t batch, int64_t n, int64_t k, int64_t m) {
  std::vector<double> c(static_cast<size_t>(batch * n * m), 0.0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += a[static_cast<size_t>((bi * n + i) * k + p)] *
                 b[static_cast<size_t>((bi * k + p) * m + j)];
        }
        c[static_cast<size_t>((bi * n + i) * m + j)] = acc;
      }
    }
  }
  return c;
}

constexpr double kF32Tol = 1e-5;  // |values| <= 1, k <= 64: float32 gemm error is far below

void expect_mm(const Mat& a, const Mat& b, double rtol = kF32Tol, double atol = kF32Tol) {
  int64_t n = a.t.size(0), k = a.t.size(1), m = b.t.size(1);
  Tensor c = kiln::mm(a.t, b.t);
  ASSERT_EQ(c.sizes(), (Shape{n, m}));
  EXPECT_EQ(c.dtype(), a.t.dtype());
  EXPECT_ALL_CLOSE(kiln_test::read_doubles(c), ref_bmm(a.v, b.v, 1, n, k, m), rtol, atol);
}

TEST(Mm, ContiguousShapes) {
  const Shape shapes[][2] = {{{3, 4}, {4, 5}}, {{1, 1}, {1, 1}},    {{1, 7}, {7, 1}},
                             {{7, 1}, {1, 6}}, {{17, 33}, {33, 9}}, {{64, 64}, {64, 64}}};
  uint32_t seed = 50;
  for (const auto& s : shapes) {
    SCOPED_TRACE(kiln::shape_str(s[0]) + " x " + kiln::shape_str(s[1]));
    expect_mm(random_mat(s[0], seed), random_mat(s[1], seed + 1));
    seed += 2;
  }
}

TEST(Mm, OneByOneIsAProduct) {
  Tensor c = kiln::mm(kiln::full({1, 1}, 3.0), kiln::full({1, 1}, -2.5));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{-7.5f}));
}

TEST(Mm, EmptyInnerDimGivesZeros) {
  Tensor c = kiln::mm(kiln::ones({3, 0}), kiln::ones({0, 2}));
  EXPECT_EQ(c.sizes(), (Shape{3, 2}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>(6, 0.0f)));
  EXPECT_EQ(kiln::mm(kiln::ones({0, 4}), kiln::ones({4, 3})).sizes(), (Shape{0, 3}));
  EXPECT_EQ(kiln::mm(kiln::ones({2, 4}), kiln::ones({4, 0})).sizes(), (Shape{2, 0}));
}

TEST(Mm, TransposedOperands) {
  Mat a_t = random_mat({6, 4}, 60), b_t = random_mat({5, 6}, 61);  // stored transposed
  Mat a = view_mat(a_t.v, a_t.t.t()), b = view_mat(b_t.v, b_t.t.t());
  Mat a_plain = random_mat({4, 6}, 62), b_plain = random_mat({6, 5}, 63);
  expect_mm(a, b_plain);
  expect_mm(a_plain, b);
  expect_mm(a, b);
}

TEST(Mm, SlicedNonContiguousOperands) {
  Mat wide = random_mat({5, 16}, 64), tall = random_mat({16, 9}, 65);
  expect_mm(view_mat(wide.v, wide.t.slice(1, 0, 16, 2)),
            view_mat(tall.v, tall.t.slice(0, 1, 16, 2)));
  expect_mm(view_mat(wide.v, wide.t.slice(1, 3, 11)), view_mat(tall.v, tall.t.slice(0, 4, 12)));
  // Every other row: row stride 32 > 16 columns; column slice with step 3.
  Mat big = random_mat({10, 16}, 66);
  expect_mm(view_mat(big.v, big.t.slice(0, 0, 10, 2)), view_mat(tall.v, tall.t.slice(1, 0, 9, 3)));
  // The transposed slice of a slice.
  expect_mm(view_mat(big.v, big.t.slice(1, 2, 12).t()), view_mat(big.v, big.t.slice(1, 5, 7)));
}

TEST(Mm, ExpandedOperandsWithZeroStrides) {
  Mat row = random_mat({4}, 67), col = random_mat({5, 1}, 68);
  expect_mm(view_mat(row.v, row.t.expand({3, 4})), random_mat({4, 2}, 69));
  expect_mm(random_mat({2, 5}, 70), view_mat(col.v, col.t.expand({5, 3})));
}

TEST(Mm, Float64IsNearlyExact) {
  Mat a = random_mat<double>({13, 21}, 71), b = random_mat<double>({21, 8}, 72);
  expect_mm(a, b, 1e-13, 1e-13);
  expect_mm(view_mat(b.v, b.t.t()), view_mat(a.v, a.t.t()), 1e-13, 1e-13);
}

TEST(Mm, HalfTypesComputeInFloat) {
  Mat a = random_mat<kiln::Half>({9, 16}, 73), b = random_mat<kiln::Half>({16, 7}, 74);
  Tensor c = kiln::mm(a.t, b.t);
  EXPECT_EQ(c.dtype(), kiln::kFloat16);
  EXPECT_ALL_CLOSE(c.to_vector<kiln::Half>(), ref_bmm(a.v, b.v, 1, 9, 16, 7), 2e-3, 2e-3);
  Mat x = random_mat<kiln::BFloat16>({4, 8}, 75), y = random_mat<kiln::BFloat16>({8, 3}, 76);
  Tensor z = kiln::mm(x.t, y.t);
  EXPECT_EQ(z.dtype(), kiln::kBFloat16);
  EXPECT_ALL_CLOSE(z.to_vector<kiln::BFloat16>(), ref_bmm(x.v, y.v, 1, 4, 8, 3), 1e-2, 1e-2);
}

// ---- bmm ----

TEST(Bmm, BatchesOfContiguousAndStridedOperands) {
  Mat a = random_mat({3, 2, 4}, 80), b = random_mat({3, 4, 5}, 81);
  Tensor c = kiln::bmm(a.t, b.t);
  ASSERT_EQ(c.sizes(), (Shape{3, 2, 5}));
  EXPECT_ALL_CLOSE(c.to_vector<float>(), ref_bmm(a.v, b.v, 3, 2, 4, 5), kF32Tol, kF32Tol);
  // Matrices transposed inside each batch.
  Mat bt = random_mat({3, 5, 4}, 82);
  Mat bv = view_mat(bt.v, bt.t.transpose(1, 2));
  EXPECT_ALL_CLOSE(kiln::bmm(a.t, bv.t).to_vector<float>(), ref_bmm(a.v, bv.v, 3, 2, 4, 5), kF32Tol,
                   kF32Tol);
  // The batch dim is not the outermost in memory: a [2, 3, 4] view of a [3, 2, 4] tensor.
  Mat p = random_mat({3, 2, 4}, 83);
  Mat pv = view_mat(p.v, p.t.transpose(0, 1));  // [2, 3, 4] strides [4, 8, 1]
  Mat q = random_mat({2, 4, 6}, 84);
  EXPECT_ALL_CLOSE(kiln::bmm(pv.t, q.t).to_vector<float>(), ref_bmm(pv.v, q.v, 2, 3, 4, 6), kF32Tol,
                   kF32Tol);
  // Every other batch.
  Mat r = random_mat({6, 3, 4}, 85);
  Mat rv = view_mat(r.v, r.t.slice(0, 0, 6, 2));
  Mat s = random_mat({3, 4, 2}, 86);
  EXPECT_ALL_CLOSE(kiln::bmm(rv.t, s.t).to_vector<float>(), ref_bmm(rv.v, s.v, 3, 3, 4, 2), kF32Tol,
                   kF32Tol);
}

TEST(Bmm, EmptyBatchAndInnerDims) {
  EXPECT_EQ(kiln::bmm(kiln::ones({0, 2, 3}), kiln::ones({0, 3, 4})).sizes(), (Shape{0, 2, 4}));
  Tensor z = kiln::bmm(kiln::ones({2, 2, 0}), kiln::ones({2, 0, 3}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>(12, 0.0f)));
}

// ---- matmul ----

// Reference matmul following torch.matmul's rules, for operands of rank >= 1.
std::vector<double> ref_matmul(const Mat& a, const Mat& b, Shape* out_sizes) {
  Shape as = a.t.sizes(), bs = b.t.sizes();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape batch = kiln_test::ref_broadcast_shape(ba, bb);
  int64_t nb = ref_numel(batch);
  std::vector<double> ea, eb;  // operands with batch dims materialized
  for (int64_t i = 0; i < nb; ++i) {
    kiln_test::Index idx = kiln_test::unravel(i, batch);
    int64_t sa = kiln_test::broadcast_source(idx, ba), sb = kiln_test::broadcast_source(idx, bb);
    ea.insert(ea.end(), a.v.begin() + sa * n * k, a.v.begin() + (sa + 1) * n * k);
    eb.insert(eb.end(), b.v.begin() + sb * k * m, b.v.begin() + (sb + 1) * k * m);
  }
  *out_sizes = batch;
  if (!a_vec) out_sizes->push_back(n);
  if (!b_vec) out_sizes->push_back(m);
  return ref_bmm(ea, eb, nb, n, k, m);
}

struct MatmulCase {
  const char* name;
  Shape a, b, out;
};

class Matmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(Matmul, MatchesReference) {
  const MatmulCase& c = GetParam();
  Mat a = random_mat(c.a, 90), b = random_mat(c.b, 91);
  Shape ref_sizes;
  std::vector<double> want = ref_matmul(a, b, &ref_sizes);
  ASSERT_EQ(ref_sizes, c.out);  // the hand-written shape agrees with the reference rule
  Tensor r = kiln::matmul(a.t, b.t);
  ASSERT_EQ(r.sizes(), c.out);
  EXPECT_ALL_CLOSE(r.to_vector<float>(), want, kF32Tol, kF32Tol);
  EXPECT_ALL_CLOSE(a.t.matmul(b.t).to_vector<float>(), want, kF32Tol, kF32Tol);
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, Matmul,
    ::testing::Values(MatmulCase{"Dot", {5}, {5}, {}}, MatmulCase{"VecMat", {4}, {4, 3}, {3}},
                      MatmulCase{"MatVec", {2, 4}, {4}, {2}},
                      MatmulCase{"MatMat", {3, 4}, {4, 2}, {3, 2}},
                      MatmulCase{"BatchedBroadcast", {2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
                      MatmulCase{"BatchedBoth", {3, 2, 4}, {3, 4, 5}, {3, 2, 5}},
                      MatmulCase{"BatchTimesMat", {3, 2, 4}, {4, 5}, {3, 2, 5}},
                      MatmulCase{"MatTimesBatch", {2, 4}, {3, 4, 5}, {3, 2, 5}},
                      MatmulCase{"BatchTimesVec", {3, 2, 4}, {4}, {3, 2}},
                      MatmulCase{"VecTimesBatch", {4}, {2, 3, 4, 5}, {2, 3, 5}},
                      MatmulCase{"SizeOneBatch", {1, 3, 4}, {6, 4, 2}, {6, 3, 2}}),
    [](const ::testing::TestParamInfo<MatmulCase>& p) { return std::string(p.param.name); });

TEST(MatmulValues, DotOfKnownVectorsIsZeroDim) {
  Tensor r =
      kiln::matmul(kiln::from_vector<double>({1, 2, 3}), kiln::from_vector<double>({4, -5, 6}));
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.dtype(), kiln::kFloat64);
  EXPECT_EQ(r.item<double>(), 12.0);
}

TEST(MatmulValues, StridedVectorsAndBatches) {
  Mat v = random_mat({10}, 92);
  Mat w = random_mat({5, 3}, 93);
  Mat vs = view_mat(v.v, v.t.slice(0, 0, 10, 2));  // stride 2
  Shape sizes;
  auto want = ref_matmul(vs, w, &sizes);
  EXPECT_ALL_CLOSE(kiln::matmul(vs.t, w.t).to_vector<float>(), want, kF32Tol, kF32Tol);
  Mat x = random_mat({4, 3, 2}, 94);
  Mat xt = view_mat(x.v, x.t.permute({2, 0, 1}));  // [2, 4, 3]
  Mat y = random_mat({3, 5}, 95);
  want = ref_matmul(xt, y, &sizes);
  EXPECT_EQ(sizes, (Shape{2, 4, 5}));
  EXPECT_ALL_CLOSE(kiln::matmul(xt.t, y.t).to_vector<float>(), want, kF32Tol, kF32Tol);
}

// ---- errors ----

TEST(MatmulErrors, MmInnerDimMismatchNamesBothShapes) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::mm(kiln::zeros({2, 3}), kiln::zeros({4, 5}));
      },
      {"mm", "[2, 3]", "[4, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::mm(kiln::zeros({2, 3, 1}), kiln::zeros({1, 5}));
      },
      {"mm", "[2, 3, 1]"}));
}

TEST(MatmulErrors, BmmBatchAndInnerMismatch) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::bmm(kiln::zeros({2, 3, 4}), kiln::zeros({3, 4, 5}));
      },
      {"bmm", "[2, 3, 4]", "[3, 4, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::bmm(kiln::zeros({2, 3, 4}), kiln::zeros({2, 5, 5}));
      },
      {"bmm", "[2, 5, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::bmm(kiln::zeros({3, 4}), kiln::zeros({4, 5}));
      },
      {"bmm", "[3, 4]"}));
}

TEST(MatmulErrors, MatmulRejectsZeroDimAndBadShapes) {
  EXPECT_TRUE(throws_error_containing([] { kiln::matmul(kiln::full({}, 1.0), kiln::ones({2})); },
                                      {"matmul"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::matmul(kiln::ones({3}), kiln::ones({4})); },
                                      {"matmul", "[3]", "[4]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::matmul(kiln::ones({2, 2, 3}), kiln::ones({2, 4, 5}));
      },
      {"matmul", "[2, 2, 3]", "[2, 4, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::matmul(kiln::ones({2, 2, 3}), kiln::ones({3, 3, 5}));
      },
      {"matmul", "[2]", "[3]"}));
}

TEST(MatmulErrors, MixedAndIntegerDtypesThrow) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::mm(kiln::ones({2, 2}), kiln::ones({2, 2}, kiln::kFloat64));
      },
      {"mm", "float32", "float64"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::mm(kiln::ones({2, 2}, kiln::kInt64), kiln::ones({2, 2}, kiln::kInt64));
      },
      {"mm", "int64"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::matmul(kiln::ones({2, 2, 2}), kiln::ones({2, 2, 2}, kiln::kFloat16));
      },
      {"float16"}));
}

}  // namespace
