// Joining and splitting: cat and stack along every dim (negative dims too), with dtype
// promotion and strided inputs; split and chunk sizes (uneven last piece), and that their
// pieces are views of the input.
#include <gtest/gtest.h>

#include <numeric>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::ref_numel;
using kiln_test::throws_error_containing;
using kiln_test::unravel;

// Reference concatenation of row-major tensors along `dim`.
std::vector<double> ref_cat(const std::vector<std::vector<double>>& parts,
                            const std::vector<Shape>& shapes, int64_t dim, Shape* out_shape) {
  Shape out = shapes[0];
  out[static_cast<size_t>(dim)] = 0;
  for (const Shape& s : shapes)
    out[static_cast<size_t>(dim)] += s[static_cast<size_t>(dim)];
  std::vector<double> values;
  for (int64_t i = 0; i < ref_numel(out); ++i) {
    kiln_test::Index idx = unravel(i, out);
    size_t p = 0;
    while (idx[static_cast<size_t>(dim)] >= shapes[p][static_cast<size_t>(dim)]) {
      idx[static_cast<size_t>(dim)] -= shapes[p][static_cast<size_t>(dim)];
      ++p;
    }
    int64_t pos = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      pos = pos * shapes[p][d] + idx[d];
    values.push_back(parts[p][static_cast<size_t>(pos)]);
  }
  *out_shape = out;
  return values;
}

std::vector<double> iota_d(int64_t n, double start) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(Cat, AlongEveryDimIncludingNegative) {
  const Shape sa = {2, 3, 4}, sb = {2, 3, 4};
  auto va = iota_d(24, 0), vb = iota_d(24, 100);
  Tensor a = kiln::from_vector(va, sa), b = kiln::from_vector(vb, sb);
  for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
    SCOPED_TRACE(dim);
    int64_t d = dim < 0 ? dim + 3 : dim;
    Shape want_shape;
    auto want = ref_cat({va, vb}, {sa, sb}, d, &want_shape);
    Tensor c = kiln::cat({a, b}, dim);
    EXPECT_EQ(c.sizes(), want_shape);
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(c.to_vector<double>(), want);
  }
}

TEST(Cat, DifferentSizesAlongTheCatDim) {
  const Shape s1 = {2, 1}, s2 = {2, 3}, s3 = {2, 2};
  auto v1 = iota_d(2, 0), v2 = iota_d(6, 10), v3 = iota_d(4, 20);
  Shape shape;
  auto want = ref_cat({v1, v2, v3}, {s1, s2, s3}, 1, &shape);
  Tensor c = kiln::cat(
      {kiln::from_vector(v1, s1), kiln::from_vector(v2, s2), kiln::from_vector(v3, s3)}, 1);
  EXPECT_EQ(c.sizes(), (Shape{2, 6}));
  EXPECT_EQ(c.to_vector<double>(), want);
}

TEST(Cat, EmptyPiecesAndSingleInput) {
  Tensor a = kiln::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor e = kiln::zeros({0, 2});
  EXPECT_EQ(kiln::cat({e, a, e}).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  Tensor one = kiln::cat({a});
  EXPECT_EQ(one.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(one.impl()->storage() == a.impl()->storage());  // a new tensor
}

TEST(Cat, StridedInputs) {
  auto va = iota_d(12, 0);
  Tensor base = kiln::from_vector(va, {3, 4});
  Tensor t = base.t();                    // [4, 3]
  Tensor s = base.slice(1, 0, 4, 2).t();  // [2, 3]
  Tensor c = kiln::cat({t, s}, 0);
  EXPECT_EQ(c.sizes(), (Shape{6, 3}));
  EXPECT_EQ(c.to_vector<double>(),
            (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 0, 4, 8, 2, 6, 10}));
}

TEST(Cat, PromotesDtypes) {
  Tensor i = kiln::from_vector<int32_t>({1, 2});
  Tensor f = kiln::from_vector<float>({0.5f});
  Tensor c = kiln::cat({i, f.view({1})});
  EXPECT_EQ(c.dtype(), kiln::kFloat32);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 0.5f}));
  Tensor l = kiln::cat({i, kiln::from_vector<int64_t>({int64_t{1} << 40, 3})});
  EXPECT_EQ(l.dtype(), kiln::kInt64);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, int64_t{1} << 40, 3}));
}

TEST(Stack, AlongEveryDim) {
  auto va = iota_d(6, 0), vb = iota_d(6, 10);
  Tensor a = kiln::from_vector(va, {2, 3}), b = kiln::from_vector(vb, {2, 3});
  Tensor s0 = kiln::stack({a, b}, 0);
  EXPECT_EQ(s0.sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(s0.to_vector<double>(),
            (std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}));
  Tensor s1 = kiln::stack({a, b}, 1);
  EXPECT_EQ(s1.sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(s1.to_vector<double>(),
            (std::vector<double>{0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15}));
  for (int64_t dim : {2, -1}) {
    Tensor s2 = kiln::stack({a, b}, dim);
    EXPECT_EQ(s2.sizes(), (Shape{2, 3, 2}));
    EXPECT_EQ(s2.to_vector<double>(),
              (std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15}));
  }
  EXPECT_EQ(kiln::stack({a, b, a}, -3).sizes(), (Shape{3, 2, 3}));
}

TEST(Stack, ZeroDimInputsMakeAVector) {
  Tensor s = kiln::stack({kiln::full({}, 1.0), kiln::full({}, 2.0), kiln::full({}, 3.0)});
  EXPECT_EQ(s.sizes(), (Shape{3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Split, EvenAndUnevenPieces) {
  Tensor x = kiln::arange(10);
  auto parts = x.split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(parts[1].to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(parts[2].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(kiln::split(x, 5).size(), 2u);
  EXPECT_EQ(kiln::split(x, 20).size(), 1u);
  EXPECT_EQ(kiln::split(x, 1).size(), 10u);
}

TEST(Split, AlongAnInnerDimGivesViews) {
  Tensor x = kiln::arange(12).view({3, 4});
  auto parts = x.split(3, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].sizes(), (Shape{3, 3}));
  EXPECT_EQ(parts[0].strides(), (Shape{4, 1}));
  EXPECT_EQ(parts[1].sizes(), (Shape{3, 1}));
  EXPECT_EQ(parts[1].storage_offset(), 3);
  EXPECT_EQ(parts[1].to_vector<int64_t>(), (std::vector<int64_t>{3, 7, 11}));
  parts[1].fill_(-1);  // writes through to x
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, -1, 4, 5, 6, -1, 8, 9, 10, -1}));
  EXPECT_EQ(x.split(2, -2).size(), 2u);
}

TEST(Chunk, UnevenSizes) {
  Tensor x = kiln::arange(5);
  auto c = x.chunk(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].sizes(), (Shape{2}));
  EXPECT_EQ(c[1].sizes(), (Shape{2}));
  EXPECT_EQ(c[2].sizes(), (Shape{1}));
  EXPECT_EQ(c[2].to_vector<int64_t>(), (std::vector<int64_t>{4}));
  // torch.chunk: 6 elements into 4 chunks gives 3 chunks of 2; 3 into 5 gives 3 chunks of 1.
  EXPECT_EQ(kiln::chunk(kiln::arange(6), 4).size(), 3u);
  auto small = kiln::chunk(kiln::arange(3), 5);
  ASSERT_EQ(small.size(), 3u);
  for (const Tensor& t : small)
    EXPECT_EQ(t.numel(), 1);
}

TEST(Chunk, AlongDimOneAndNegativeDim) {
  Tensor x = kiln::arange(14).view({2, 7});
  for (int64_t dim : {1, -1}) {
    auto c = x.chunk(3, dim);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].sizes(), (Shape{2, 3}));
    EXPECT_EQ(c[1].sizes(), (Shape{2, 3}));
    EXPECT_EQ(c[2].sizes(), (Shape{2, 1}));
    EXPECT_EQ(c[1].to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5, 10, 11, 12}));
    EXPECT_EQ(c[2].to_vector<int64_t>(), (std::vector<int64_t>{6, 13}));
  }
}

TEST(Chunk, EmptyDimGivesOnePiece) {
  auto c = kiln::zeros({0, 3}).chunk(2);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].sizes(), (Shape{0, 3}));
}

TEST(SplitAndCat, RoundTrip) {
  auto v = kiln_test::random_vector<float>(5 * 7 * 3, -1, 1, 3);
  Tensor x = kiln::from_vector(v, {5, 7, 3});
  for (int64_t dim : {0, 1, 2}) {
    Tensor back = kiln::cat(x.chunk(3, dim), dim);
    EXPECT_EQ(back.sizes(), x.sizes());
    EXPECT_EQ(back.to_vector<float>(), v);
  }
}

TEST(JoiningErrors, ShapesAndDims) {
  Tensor a = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::cat({a, kiln::zeros({3, 3})}, 1);
      },
      {"cat", "[2, 3]", "[3, 3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::cat({a, a}, 2); }, {"cat"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::stack({a, kiln::zeros({3, 2})});
      },
      {"stack", "[2, 3]", "[3, 2]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::stack({a, a}, -4); }, {"stack", "-4"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::split(kiln::full({}, 1.0), 1); }, {"split"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::chunk(kiln::full({}, 1.0), 1); }, {"chunk"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::cat({kiln::zeros({2}), kiln::zeros({2}, kiln::kMeta)});
      },
      {"cat", "meta"}));
}

}  // namespace
