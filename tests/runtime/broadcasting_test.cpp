// Broadcasting in binary pointwise ops: output shapes and values against a reference loop that
// maps every output index to the input elements it reads, for contiguous, strided, expanded
// and empty operands, and the errors for incompatible shapes.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::broadcast_source;
using kiln_test::random_vector;
using kiln_test::ref_numel;
using kiln_test::unravel;

// A tensor together with its logical values (row-major) computed without the library.
template <class T>
struct Operand {
  Tensor t;
  std::vector<T> values;
  Shape sizes;
};

template <class T>
Operand<T> contiguous_operand(const Shape& sizes, uint32_t seed) {
  auto v = random_vector<T>(static_cast<size_t>(ref_numel(sizes)), -4, 4, seed);
  return {kiln::from_vector(v, sizes), v, sizes};
}

// out[i] = f(a[src_a(i)], b[src_b(i)]) over the broadcast shape.
template <class T, class F>
std::vector<double> ref_binary(const Operand<T>& a, const Operand<T>& b, const Shape& out_sizes,
                               F f) {
  std::vector<double> out;
  for (int64_t i = 0; i < ref_numel(out_sizes); ++i) {
    kiln_test::Index idx = unravel(i, out_sizes);
    out.push_back(f(static_cast<double>(a.values[broadcast_source(idx, a.sizes)]),
                    static_cast<double>(b.values[broadcast_source(idx, b.sizes)])));
  }
  return out;
}

template <class T>
void expect_add_mul_sub_div(const Operand<T>& a, const Operand<T>& b, const Shape& out_sizes) {
  Tensor sum = kiln::add(a.t, b.t);
  ASSERT_EQ(sum.sizes(), out_sizes);
  EXPECT_TRUE(sum.is_contiguous());
  EXPECT_ALL_CLOSE(sum.template to_vector<T>(),
                   ref_binary(a, b, out_sizes, [](double x, double y) { return x + y; }), 1e-6, 0);
  Tensor scaled = kiln::add(a.t, b.t, 0.5);
  EXPECT_ALL_CLOSE(scaled.template to_vector<T>(),
                   ref_binary(a, b, out_sizes, [](double x, double y) { return x + 0.5 * y; }),
                   1e-6, 1e-6);
  Tensor prod = kiln::mul(a.t, b.t);
  ASSERT_EQ(prod.sizes(), out_sizes);
  EXPECT_ALL_CLOSE(prod.template to_vector<T>(),
                   ref_binary(a, b, out_sizes, [](double x, double y) { return x * y; }), 1e-6, 0);
  Tensor diff = kiln::sub(b.t, a.t);  // b first: the broadcast is symmetric
  ASSERT_EQ(diff.sizes(), out_sizes);
  EXPECT_ALL_CLOSE(diff.template to_vector<T>(),
                   ref_binary(a, b, out_sizes, [](double x, double y) { return y - x; }), 1e-6,
                   1e-6);
  Tensor quot = kiln::div(a.t, b.t);
  ASSERT_EQ(quot.sizes(), out_sizes);
  EXPECT_ALL_CLOSE(quot.template to_vector<T>(),
                   ref_binary(a, b, out_sizes, [](double x, double y) { return x / y; }), 1e-5, 0);
}

struct ShapeCase {
  const char* name;
  Shape a, b, out;
};

class BroadcastShapes : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(BroadcastShapes, Float32ValuesMatchReferenceLoop) {
  const ShapeCase& c = GetParam();
  expect_add_mul_sub_div(contiguous_operand<float>(c.a, 1), contiguous_operand<float>(c.b, 2),
                         c.out);
}

TEST_P(BroadcastShapes, Float64ValuesMatchReferenceLoop) {
  const ShapeCase& c = GetParam();
  expect_add_mul_sub_div(contiguous_operand<double>(c.a, 3), contiguous_operand<double>(c.b, 4),
                         c.out);
}

TEST_P(BroadcastShapes, Int64AddMatchesReferenceLoopExactly) {
  const ShapeCase& c = GetParam();
  auto a = contiguous_operand<int64_t>(c.a, 5), b = contiguous_operand<int64_t>(c.b, 6);
  Tensor r = kiln::add(a.t, b.t, 3);
  ASSERT_EQ(r.sizes(), c.out);
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  std::vector<int64_t> want;
  for (double v : ref_binary(a, b, c.out, [](double x, double y) { return x + 3 * y; })) {
    want.push_back(static_cast<int64_t>(v));
  }
  EXPECT_EQ(r.to_vector<int64_t>(), want);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BroadcastShapes,
    ::testing::Values(ShapeCase{"ColumnRow", {3, 1}, {1, 4}, {3, 4}},
                      ShapeCase{"TrailingVector", {2, 3, 4}, {4}, {2, 3, 4}},
                      ShapeCase{"Interleaved", {5, 1, 3}, {1, 6, 1}, {5, 6, 3}},
                      ShapeCase{"ZeroDimLeft", {}, {7}, {7}},
                      ShapeCase{"ZeroDimRight", {7}, {}, {7}}, ShapeCase{"BothZeroDim", {}, {}, {}},
                      ShapeCase{"SameShape", {2, 3}, {2, 3}, {2, 3}},
                      ShapeCase{"SizeOneBecomesZero", {0, 3}, {1, 3}, {0, 3}},
                      ShapeCase{"EmptyTrailing", {2, 0}, {1}, {2, 0}},
                      ShapeCase{"OnesAgainstVector", {1, 1, 1}, {3}, {1, 1, 3}},
                      ShapeCase{"FiveDims", {2, 1, 3, 1, 2}, {4, 1, 2, 1}, {2, 4, 3, 2, 2}},
                      ShapeCase{"LargeOuterProduct", {300, 1}, {1, 200}, {300, 200}},
                      ShapeCase{"LargeRowBroadcast", {257, 131}, {131}, {257, 131}}),
    [](const ::testing::TestParamInfo<ShapeCase>& p) { return std::string(p.param.name); });

// ---- non-contiguous operands ----

template <class T>
Operand<T> view_of(const std::vector<T>& base, Tensor view) {
  return {view, kiln_test::ref_strided(base, view.sizes(), view.strides(), view.storage_offset()),
          view.sizes()};
}

TEST(BroadcastStrided, TransposedPlusVector) {
  auto base = random_vector<float>(12, -4, 4, 10);
  Tensor t = kiln::from_vector(base, {4, 3}).t();  // [3, 4] strides [1, 3]
  ASSERT_EQ(t.strides(), (Shape{1, 3}));
  Operand<float> a{t, kiln_test::ref_strided(base, {3, 4}, {1, 3}, 0), {3, 4}};
  expect_add_mul_sub_div(a, contiguous_operand<float>({4}, 11), {3, 4});
}

TEST(BroadcastStrided, SteppedSlicePlusSlicedColumn) {
  auto base_a = random_vector<float>(24, -4, 4, 12);
  auto base_b = random_vector<float>(6, 1, 4, 13);
  Tensor a = kiln::from_vector(base_a, {3, 8}).slice(1, 0, 8, 2);  // [3, 4] strides [8, 2]
  Tensor b = kiln::from_vector(base_b, {3, 2}).slice(1, 1, 2);     // [3, 1] strides [2, 1]
  ASSERT_EQ(a.strides(), (Shape{8, 2}));
  ASSERT_EQ(b.storage_offset(), 1);
  Operand<float> oa{a, kiln_test::ref_strided(base_a, {3, 4}, {8, 2}, 0), {3, 4}};
  Operand<float> ob{b, kiln_test::ref_strided(base_b, {3, 1}, {2, 1}, 1), {3, 1}};
  expect_add_mul_sub_div(oa, ob, {3, 4});
}

TEST(BroadcastStrided, ExpandedOperandHasStrideZero) {
  auto base = random_vector<float>(4, 1, 4, 14);
  Tensor e = kiln::from_vector(base, {4}).expand({3, 4});
  Operand<float> a{e, kiln_test::ref_strided(base, {3, 4}, {0, 1}, 0), {3, 4}};
  expect_add_mul_sub_div(a, contiguous_operand<float>({2, 1, 4}, 15), {2, 3, 4});
}

TEST(BroadcastStrided, PermutedThreeDimOperands) {
  auto base_a = random_vector<double>(60, -4, 4, 16);
  auto base_b = random_vector<double>(20, 1, 4, 17);
  Tensor a = kiln::from_vector(base_a, {3, 4, 5}).permute({2, 0, 1});  // [5, 3, 4]
  Tensor b = kiln::from_vector(base_b, {4, 5}).t().unsqueeze(1);       // [5, 1, 4]
  expect_add_mul_sub_div(view_of(base_a, a), view_of(base_b, b), {5, 3, 4});
}

TEST(BroadcastStrided, LargeTransposedAndSteppedAboveParallelGrain) {
  kiln_test::NumThreadsGuard threads(3);
  auto base_a = random_vector<float>(400 * 300, -4, 4, 18);
  auto base_b = random_vector<float>(800, 1, 4, 19);
  Tensor a = kiln::from_vector(base_a, {400, 300}).t();             // [300, 400] strides [1, 300]
  Tensor b = kiln::from_vector(base_b, {800}).slice(0, 1, 800, 2);  // [400] stride 2
  expect_add_mul_sub_div(view_of(base_a, a), view_of(base_b, b), {300, 400});
}

TEST(BroadcastStrided, SlicedRowsOfLargeTensorUnaligned) {
  // Rows of odd length so that parallel chunks start in the middle of a row.
  kiln_test::NumThreadsGuard threads(4);
  auto base_a = random_vector<float>(331 * 217, -4, 4, 20);
  Tensor a = kiln::from_vector(base_a, {331, 217}).slice(1, 3, 214);  // [331, 211]
  auto vb = random_vector<float>(331, 1, 4, 22);
  Operand<float> ob{kiln::from_vector(vb, {331, 1}), vb, {331, 1}};
  expect_add_mul_sub_div(view_of(base_a, a), ob, {331, 211});
}

// ---- mixed dtypes broadcast too ----

TEST(BroadcastMixed, Int32MatrixPlusFloat64Row) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  std::vector<double> b = {0.5, -1.25, 2.0};
  Tensor r = kiln::from_vector(a, {2, 3}) + kiln::from_vector(b, {1, 3});
  EXPECT_EQ(r.dtype(), kiln::kFloat64);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1.5, 0.75, 5.0, 4.5, 3.75, 8.0}));
}

// ---- errors ----

TEST(BroadcastErrors, IncompatibleShapesNameOpAndBothShapes) {
  Tensor a = kiln::zeros({2, 3}), b = kiln::zeros({4});
  EXPECT_TRUE(
      kiln_test::throws_error_containing([&] { kiln::add(a, b); }, {"add", "[2, 3]", "[4]"}));
  EXPECT_TRUE(
      kiln_test::throws_error_containing([&] { kiln::mul(a, b); }, {"mul", "[2, 3]", "[4]"}));
  EXPECT_TRUE(
      kiln_test::throws_error_containing([&] { kiln::sub(b, a); }, {"sub", "[4]", "[2, 3]"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::div(a, b); }, {"div"}));
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [&] {
        kiln::add(kiln::zeros({2, 3, 4}), kiln::zeros({3, 3, 4}));
      },
      {"add", "[2, 3, 4]", "[3, 3, 4]"}));
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [&] { kiln::add(kiln::zeros({0}), kiln::zeros({2})); }, {"add", "[0]", "[2]"}));
}

}  // namespace
