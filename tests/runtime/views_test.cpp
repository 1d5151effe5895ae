// View ops: the geometry (sizes, strides, storage offset) of each view against hand-computed
// values, the values it reads against a strided reference index, and writes through views.
#include <gtest/gtest.h>

#include <numeric>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::ref_strided;
using kiln_test::throws_error_containing;

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

// x = arange(24).view({2, 3, 4}): element (i, j, k) holds 12 i + 4 j + k.
Tensor base24() {
  return kiln::arange(24).view({2, 3, 4});
}

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage().get() == b.impl()->storage().get();
}

// Checks a view of base24() (or any iota storage) against its expected geometry, and that its
// values are those the geometry reads from the iota storage.
void expect_view(const Tensor& v, const Shape& sizes, const Shape& strides, int64_t offset,
                 int64_t storage_numel = 24) {
  EXPECT_EQ(v.sizes(), sizes);
  EXPECT_EQ(v.strides(), strides);
  EXPECT_EQ(v.storage_offset(), offset);
  EXPECT_EQ(v.numel(), kiln_test::ref_numel(sizes));
  EXPECT_EQ(v.to_vector<int64_t>(), ref_strided(iota(storage_numel), sizes, strides, offset));
}

TEST(Views, Arange24ViewIsContiguous) {
  Tensor x = base24();
  EXPECT_EQ(x.dtype(), kiln::kInt64);
  expect_view(x, {2, 3, 4}, {12, 4, 1}, 0);
  EXPECT_TRUE(x.is_contiguous());
}

TEST(Views, ViewSharesStorageAndInfersMinusOne) {
  Tensor x = base24();
  Tensor v = x.view({6, 4});
  expect_view(v, {6, 4}, {4, 1}, 0);
  EXPECT_TRUE(shares_storage(x, v));
  expect_view(x.view({-1, 8}), {3, 8}, {8, 1}, 0);
  expect_view(x.view({4, -1}), {4, 6}, {6, 1}, 0);
  expect_view(x.view({-1}), {24}, {1}, 0);
  expect_view(x.view({2, 1, 12}).view({24}), {24}, {1}, 0);
}

TEST(Views, ViewToAndFromZeroDim) {
  Tensor one = kiln::arange(1);
  Tensor s = one.view({});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<int64_t>(), 0);
  EXPECT_EQ(s.view({1, 1}).sizes(), (Shape{1, 1}));
}

TEST(Views, ViewOfNonContiguousButCompatibleLayout) {
  // x[:, :, 0:2] has sizes [2, 3, 2] strides [12, 4, 1]: its first two dims merge.
  Tensor s = base24().slice(2, 0, 2);
  expect_view(s.view({6, 2}), {6, 2}, {4, 1}, 0);
  // A transposed tensor viewed with a size-1 dim inserted keeps sharing storage.
  Tensor t = base24().transpose(0, 1);  // [3, 2, 4] strides [4, 12, 1]
  Tensor v = t.view({3, 2, 1, 4});
  EXPECT_EQ(v.sizes(), (Shape{3, 2, 1, 4}));
  EXPECT_TRUE(shares_storage(t, v));
  EXPECT_EQ(v.to_vector<int64_t>(), ref_strided(iota(24), {3, 2, 4}, {4, 12, 1}, 0));
}

TEST(Views, ImpossibleViewThrowsWithShapesAndStrides) {
  Tensor x = kiln::arange(6).view({2, 3}).t();  // [3, 2] strides [1, 3]
  EXPECT_TRUE(
      throws_error_containing([&] { x.view({-1}); }, {"view", "[3, 2]", "[1, 3]", "stride"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        base24().slice(2, 0, 2).view({2, 6});
      },
      {"view", "[2, 3, 2]", "[12, 4, 1]"}));
  EXPECT_TRUE(throws_error_containing([&] { base24().view({5, 5}); }, {"view", "[5, 5]", "24"}));
  EXPECT_TRUE(throws_error_containing([&] { base24().view({-1, -1}); }, {"view", "[-1, -1]"}));
  EXPECT_TRUE(throws_error_containing([&] { base24().view({-1, 5}); }, {"view", "24"}));
}

TEST(Views, ReshapeViewsWhenPossible) {
  Tensor x = base24();
  Tensor r = x.reshape({4, 6});
  EXPECT_TRUE(shares_storage(x, r));
  expect_view(r, {4, 6}, {6, 1}, 0);
  r.select(0, 1).fill_(-1);  // elements 6..11 of x
  auto v = x.to_vector<int64_t>();
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(v[i], i >= 6 && i < 12 ? -1 : i) << i;
}

TEST(Views, ReshapeCopiesWhenNoViewExists) {
  Tensor x = kiln::arange(6).view({2, 3});
  Tensor r = x.t().reshape({6});
  EXPECT_FALSE(shares_storage(x, r));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  r.fill_(9);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(x.t().reshape({-1, 2}).sizes(), (Shape{3, 2}));
  EXPECT_EQ(x.t().flatten().to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(Views, TransposeSwapsSizesAndStrides) {
  Tensor x = base24();
  expect_view(x.transpose(0, 2), {4, 3, 2}, {1, 4, 12}, 0);
  expect_view(x.transpose(-1, 0), {4, 3, 2}, {1, 4, 12}, 0);
  expect_view(x.transpose(1, 2), {2, 4, 3}, {12, 1, 4}, 0);
  expect_view(x.transpose(1, 1), {2, 3, 4}, {12, 4, 1}, 0);
  EXPECT_FALSE(x.transpose(0, 2).is_contiguous());
  EXPECT_TRUE(shares_storage(x, x.transpose(0, 2)));
}

TEST(Views, TOfMatrixVectorAndHigherDims) {
  Tensor m = kiln::arange(6).view({2, 3});
  expect_view(m.t(), {3, 2}, {1, 3}, 0, 6);
  Tensor v = kiln::arange(4);
  EXPECT_EQ(v.t().sizes(), (Shape{4}));
  EXPECT_TRUE(throws_error_containing([] { base24().t(); }, {"t", "[2, 3, 4]"}));
}

TEST(Views, PermuteReordersDims) {
  Tensor x = base24();
  expect_view(x.permute({2, 0, 1}), {4, 2, 3}, {1, 12, 4}, 0);
  expect_view(x.permute({-1, -3, -2}), {4, 2, 3}, {1, 12, 4}, 0);
  expect_view(x.permute({0, 1, 2}), {2, 3, 4}, {12, 4, 1}, 0);
  EXPECT_TRUE(throws_error_containing([&] { x.permute({0, 0, 1}); }, {"permute", "repeat"}));
  EXPECT_TRUE(throws_error_containing([&] { x.permute({0, 1}); }, {"permute", "[2, 3, 4]"}));
}

TEST(Views, ExpandUsesZeroStrides) {
  Tensor col = kiln::arange(3).view({3, 1});
  Tensor e = col.expand({2, 3, 4});
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_TRUE(shares_storage(col, e));
  auto v = e.to_vector<int64_t>();
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(v[i], (i / 4) % 3) << i;
  Tensor keep = col.expand({-1, 5});
  EXPECT_EQ(keep.sizes(), (Shape{3, 5}));
  EXPECT_EQ(keep.strides(), (Shape{1, 0}));
  Tensor s = kiln::full({}, 7, kiln::kInt64).expand({2, 2});
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 7, 7}));
}

TEST(Views, InvalidExpandThrows) {
  Tensor col = kiln::arange(3).view({3, 1});
  EXPECT_TRUE(throws_error_containing([&] { col.expand({4, 4}); }, {"expand", "[4, 4]", "[3, 1]"}));
  EXPECT_TRUE(throws_error_containing([&] { col.expand({3}); }, {"expand"}));
  EXPECT_TRUE(throws_error_containing([&] { col.expand({-1, 3, 1}); }, {"expand"}));
}

TEST(Views, UnsqueezeInsertsSizeOneDims) {
  Tensor x = base24();
  expect_view(x.unsqueeze(0), {1, 2, 3, 4}, {24, 12, 4, 1}, 0);
  expect_view(x.unsqueeze(1), {2, 1, 3, 4}, {12, 12, 4, 1}, 0);
  expect_view(x.unsqueeze(3), {2, 3, 4, 1}, {12, 4, 1, 1}, 0);
  expect_view(x.unsqueeze(-1), {2, 3, 4, 1}, {12, 4, 1, 1}, 0);
  expect_view(x.unsqueeze(-4), {1, 2, 3, 4}, {24, 12, 4, 1}, 0);
  EXPECT_EQ(kiln::full({}, 1).unsqueeze(0).sizes(), (Shape{1}));
  EXPECT_TRUE(throws_error_containing([&] { x.unsqueeze(4); }, {"unsqueeze", "4"}));
  EXPECT_TRUE(throws_error_containing([&] { x.unsqueeze(-5); }, {"unsqueeze", "-5"}));
}

TEST(Views, SqueezeDropsSizeOneDims) {
  Tensor x = kiln::arange(6).view({1, 3, 1, 2});
  expect_view(x.squeeze(), {3, 2}, {2, 1}, 0, 6);
  expect_view(x.squeeze(0), {3, 1, 2}, {2, 2, 1}, 0, 6);
  expect_view(x.squeeze(-2), {1, 3, 2}, {6, 2, 1}, 0, 6);
  expect_view(x.squeeze(1), {1, 3, 1, 2}, {6, 2, 2, 1}, 0, 6);  // size 3: unchanged
  EXPECT_EQ(kiln::ones({1, 1}).squeeze().dim(), 0);
  EXPECT_TRUE(throws_error_containing([&] { x.squeeze(4); }, {"squeeze", "4"}));
}

TEST(Views, SliceWithStepOffsetsAndClamps) {
  Tensor x = base24();
  expect_view(x.slice(2, 1, 4, 2), {2, 3, 2}, {12, 4, 2}, 1);
  expect_view(x.slice(1, 1, 3), {2, 2, 4}, {12, 4, 1}, 4);
  expect_view(x.slice(2, 0, 4, 3), {2, 3, 2}, {12, 4, 3}, 0);
  expect_view(x.slice(-1, -3, -1), {2, 3, 2}, {12, 4, 1}, 1);    // negative start/end
  expect_view(x.slice(2, -100, 100), {2, 3, 4}, {12, 4, 1}, 0);  // clamped to the dim
  expect_view(x.slice(0, 1, INT64_MAX), {1, 3, 4}, {12, 4, 1}, 12);
  EXPECT_EQ(x.slice(2, 3, 1).sizes(), (Shape{2, 3, 0}));  // empty, not negative
  EXPECT_EQ(x.slice(2, 5, 9).sizes(), (Shape{2, 3, 0}));
  EXPECT_TRUE(throws_error_containing([&] { x.slice(2, 0, 4, 0); }, {"slice", "step"}));
  EXPECT_TRUE(throws_error_containing([&] { x.slice(3, 0, 1); }, {"slice", "3"}));
}

TEST(Views, SelectDropsADim) {
  Tensor x = base24();
  expect_view(x.select(1, 2), {2, 4}, {12, 1}, 8);
  expect_view(x.select(1, -1), {2, 4}, {12, 1}, 8);
  expect_view(x.select(0, 1), {3, 4}, {4, 1}, 12);
  expect_view(x.select(-1, 3), {2, 3}, {12, 4}, 3);
  expect_view(x.select(0, 1).select(0, 2).select(0, 3), {}, {}, 23);
  EXPECT_TRUE(throws_error_containing([&] { x.select(1, 3); }, {"select", "3", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error_containing([&] { x.select(0, -3); }, {"select", "-3"}));
  EXPECT_TRUE(throws_error_containing([&] { x.select(5, 0); }, {"select", "5"}));
}

TEST(Views, NarrowIsASliceOfALength) {
  Tensor x = base24();
  expect_view(x.narrow(2, 1, 2), {2, 3, 2}, {12, 4, 1}, 1);
  expect_view(x.narrow(1, -2, 2), {2, 2, 4}, {12, 4, 1}, 4);
  expect_view(x.narrow(0, 1, 0), {0, 3, 4}, {12, 4, 1}, 12);
  EXPECT_TRUE(throws_error_containing([&] { x.narrow(2, 3, 2); }, {"narrow"}));
}

TEST(Views, ChainOfViewsComposesGeometry) {
  // transpose -> [4,3,2] {1,4,12}; slice(0,1,3) -> [2,3,2] offset 1; select(1,1) -> [2,2]
  // strides {1,12} offset 1 + 4.
  Tensor v = base24().transpose(0, 2).slice(0, 1, 3).select(1, 1);
  expect_view(v, {2, 2}, {1, 12}, 5);
  expect_view(v.t().unsqueeze(1), {2, 1, 2}, {12, 2, 1}, 5);
}

TEST(Views, ContiguousCopiesOnlyNonContiguousTensors) {
  Tensor x = base24();
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor t = x.transpose(0, 2);
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.strides(), (Shape{6, 2, 1}));
  EXPECT_EQ(c.storage_offset(), 0);
  EXPECT_FALSE(shares_storage(c, x));
  EXPECT_EQ(c.to_vector<int64_t>(), ref_strided(iota(24), {4, 3, 2}, {1, 4, 12}, 0));
}

TEST(Views, CloneHasIndependentStorage) {
  Tensor x = base24();
  Tensor c = x.clone();
  EXPECT_FALSE(shares_storage(c, x));
  c.fill_(0);
  EXPECT_EQ(x.to_vector<int64_t>(), iota(24));
  Tensor cs = x.slice(2, 1, 4, 2).clone();
  EXPECT_TRUE(cs.is_contiguous());
  EXPECT_EQ(cs.to_vector<int64_t>(), ref_strided(iota(24), {2, 3, 2}, {12, 4, 2}, 1));
}

TEST(Views, FillThroughSteppedSliceWritesBase) {
  Tensor x = base24();
  x.slice(1, 0, 4, 2).fill_(7);  // rows j = 0 and j = 2 of every i
  auto v = x.to_vector<int64_t>();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        int64_t flat = 12 * i + 4 * j + k;
        EXPECT_EQ(v[flat], j % 2 == 0 ? 7 : flat) << i << "," << j << "," << k;
      }
    }
  }
}

TEST(Views, CopyIntoSelectWritesBase) {
  Tensor x = base24();
  std::vector<int64_t> src = {100, 101, 102, 103, 104, 105};
  x.select(2, 1).copy_(kiln::from_vector(src, {2, 3}));
  auto v = x.to_vector<int64_t>();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        int64_t flat = 12 * i + 4 * j + k;
        EXPECT_EQ(v[flat], k == 1 ? src[3 * i + j] : flat);
      }
    }
  }
}

TEST(Views, CopyBroadcastsAndConvertsIntoTransposedView) {
  Tensor x = kiln::zeros({3, 2}, kiln::kFloat64);
  x.t().copy_(kiln::from_vector<int32_t>({1, 2, 3}));  // x.t() is [2, 3]: rows broadcast
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  EXPECT_TRUE(
      throws_error_containing([&] { x.copy_(kiln::zeros({4})); }, {"copy_", "[4]", "[3, 2]"}));
}

TEST(Views, LargeCopyAndFillIntoStridedViewAcrossThreads) {
  kiln_test::NumThreadsGuard threads(4);
  const int64_t rows = 300, cols = 500;
  Tensor base = kiln::zeros({rows, cols});
  Tensor v = base.t().slice(0, 1, cols, 3);  // [167, 300] strides [3, 500] offset 1
  ASSERT_EQ(v.sizes(), (Shape{167, 300}));
  ASSERT_EQ(v.strides(), (Shape{3, 500}));
  auto src = kiln_test::random_vector<float>(167 * 300, -1, 1, 70);
  v.copy_(kiln::from_vector(src, {167, 300}));
  auto got = base.to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float want = (c % 3 == 1) ? src[static_cast<size_t>((c / 3) * 300 + r)] : 0.0f;
      ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], want) << r << "," << c;
    }
  }
  // fill_ of the complementary columns, and a converting broadcast copy into a column view.
  base.t().slice(0, 0, cols, 3).fill_(2.0);
  base.select(1, 2).copy_(kiln::arange(rows, kiln::kInt32));
  got = base.to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float want = c == 2       ? static_cast<float>(r)
                   : c % 3 == 0 ? 2.0f
                   : c % 3 == 1 ? src[static_cast<size_t>((c / 3) * 300 + r)]
                                : 0.0f;
      ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], want) << r << "," << c;
    }
  }
}

TEST(Views, VersionCounterIsSharedWithViews) {
  Tensor x = base24();
  Tensor v = x.slice(1, 0, 2);
  uint32_t v0 = x.version();
  EXPECT_EQ(v.version(), v0);
  v.fill_(1);
  EXPECT_EQ(x.version(), v0 + 1);
  EXPECT_EQ(v.version(), v0 + 1);
  x.select(0, 0).zero_();
  EXPECT_EQ(v.version(), v0 + 2);
  v.copy_(kiln::zeros({2, 2, 4}, kiln::kInt64));
  EXPECT_EQ(x.version(), v0 + 3);
  Tensor y = x + 1;  // out-of-place ops leave the counter alone
  (void)x.transpose(0, 1);
  EXPECT_EQ(x.version(), v0 + 3);
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(x.clone().version(), 0u);
}

TEST(Views, OutOfRangeDimsNameTheOp) {
  Tensor x = base24();
  EXPECT_TRUE(throws_error_containing([&] { x.transpose(0, 3); }, {"transpose", "3"}));
  EXPECT_TRUE(throws_error_containing([&] { x.transpose(-4, 0); }, {"transpose", "-4"}));
  EXPECT_TRUE(throws_error_containing([&] { x.permute({0, 1, 5}); }, {"permute", "5"}));
  EXPECT_TRUE(throws_error_containing([&] { x.size(3); }, {"3"}));
  // narrow is the op the user called, so the message should name it (not an internal helper).
  EXPECT_TRUE(throws_error_containing([&] { x.narrow(7, 0, 1); }, {"narrow", "7"}));
}

TEST(Views, SizeAndStrideAcceptNegativeDims) {
  Tensor x = base24().transpose(0, 2);
  EXPECT_EQ(x.size(-1), 2);
  EXPECT_EQ(x.size(0), 4);
  EXPECT_EQ(x.stride(-1), 12);
  EXPECT_EQ(x.stride(-3), 1);
  EXPECT_EQ(x.dim(), 3);
}

}  // namespace
