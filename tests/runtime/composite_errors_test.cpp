// Errors of the composite ops (std, any, all, tril, triu, flip, roll, repeat, outer, addmm,
// baddbmm, einsum, pad, one_hot): each names the op the user called, not the table op it is
// made of, and the shapes or values at fault.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

TEST(CompositeErrors, ReductionsNameThemselves) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::any(x, {2}); }, {"any", "got 2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::all(x, {-3}); }, {"all", "got -3"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::std(x, {1, -1});
      },
      {"std", "dim -1 appears multiple times", "[1, -1]", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::std(kiln::zeros({2}, kiln::kInt64)); },
                                      {"std", "floating", "int64", "[2]"}));
}

TEST(CompositeErrors, TrianglesNeedTwoDims) {
  Tensor v = kiln::zeros({4});
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::tril(v); }, {"tril", "at least 2 dimensions", "[4]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::triu(kiln::zeros({})); },
                                      {"triu", "at least 2 dimensions", "[]"}));
}

TEST(CompositeErrors, FlipRollRepeat) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::flip(x, {2}); }, {"flip", "got 2"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::flip(x, {0, -2});
      },
      {"flip", "dim -2 appears multiple times", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::roll(x, {1, 2}, {0});
      },
      {"roll", "shifts and dimensions must align", "[1, 2]", "[0]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::roll(x, {1, 2});
      },
      {"roll", "without dims", "[1, 2]", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::roll(x, {1}, {-3}); }, {"roll", "got -3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::repeat(x, {2}); },
                                      {"repeat", "can not be smaller", "[2]", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::repeat(x, {2, -1});
      },
      {"repeat", "negative dimension -1"}));
}

TEST(CompositeErrors, Products) {
  Tensor m = kiln::zeros({3, 4});
  EXPECT_TRUE(throws_error_containing([&] { kiln::outer(m, kiln::zeros({3})); },
                                      {"outer", "1-D", "[3, 4]", "[3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::addmm(kiln::zeros({3, 5}), m, kiln::zeros({5, 5}));
      },
      {"addmm", "cannot be multiplied", "3x4 and 5x5"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::addmm(kiln::zeros({3}), m, kiln::zeros({4, 5}));
      },
      {"addmm", "[3]", "[3, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::addmm(kiln::zeros({2, 3, 5}), m, kiln::zeros({4, 5}));
      },
      {"addmm", "self of shape [2, 3, 5] cannot be broadcast", "[3, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::addmm(kiln::zeros({3, 5}), kiln::zeros({4}), m);
      },
      {"addmm", "2-D", "[4]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::baddbmm(kiln::zeros({2, 3, 5}), kiln::zeros({2, 3, 4}), kiln::zeros({3, 4, 5}));
      },
      {"baddbmm", "[2, 3, 4]", "[3, 4, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::baddbmm(kiln::zeros({3, 5}), m, kiln::zeros({4, 5}));
      },
      {"baddbmm", "3-D"}));
}

TEST(CompositeErrors, Einsum) {
  Tensor a = kiln::zeros({2, 3}), b = kiln::zeros({4, 5});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::einsum("ij,jk->ik", {a, b});
      },
      {"einsum", "subscript j", "size 3", "size 4", "[2, 3]", "[4, 5]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("ij,jk->ik", {a}); },
                                      {"einsum", "fewer operands"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::einsum("ij->ij", {a, a});
      },
      {"einsum", "more operands"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("ijk->i", {a}); },
                                      {"einsum", "number of subscripts", "(3)", "(2)", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("i1->i", {a}); },
                                      {"einsum", "invalid subscript", "index 1", "[a-zA-Z]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("ij->ik", {a}); },
                                      {"einsum", "output subscript k does not appear"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("ij->ii", {a}); },
                                      {"einsum", "output subscript i appears more than once"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("ii->i", {a}); },
                                      {"einsum", "subscript i is repeated", "2 != 3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("i..j->i", {a}); },
                                      {"einsum", "not part of any ellipsis"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("...i...->i", {a}); },
                                      {"einsum", "more than one ellipsis"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::einsum("i->i", {}); },
                                      {"einsum", "at least one operand"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::einsum("ij,ij->ij", {a, kiln::zeros({2, 3}, kiln::kFloat64)});
      },
      {"einsum", "same dtype", "float32", "float64"}));
}

TEST(CompositeErrors, Pad) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {1, 2, 3});
      },
      {"pad", "divisible by 2", "[1, 2, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {1, 1, 1, 1, 1, 1});
      },
      {"pad", "too large", "[2, 3]"}));
  EXPECT_NO_THROW(kiln::pad(x, {2, 2}, "reflect"));  // 2 < 3
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {3, 0}, "reflect");
      },
      {"pad", "less than the corresponding input dimension", "(3, 0)", "dimension 1", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {0, 0, 0, 2}, "reflect");
      },
      {"pad", "(0, 2)", "dimension 0"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {-2, -2});
      },
      {"pad", "negative output size", "dimension 1"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {1, 1}, "wrap");
      },
      {"pad", "'wrap'", "'circular'"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {4, 0}, "circular");
      },
      {"pad", "wrapping around more than once", "(4, 0)", "dimension 1"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(x, {1, 1}, "replicate", 2.0);
      },
      {"pad", "doesn't take in value"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::pad(kiln::zeros({2, 0}), {1, 0}, "replicate");
      },
      {"pad", "size 0", "[2, 0]"}));
}

TEST(CompositeErrors, OneHot) {
  Tensor idx = kiln::from_vector<int64_t>({0, 2, 1});
  EXPECT_TRUE(throws_error_containing([&] { kiln::one_hot(idx.to(kiln::kFloat32), 3); },
                                      {"one_hot", "int64", "float32", "[3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::one_hot(idx, 2); },
                                      {"one_hot", "smaller than num_classes (2)"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::one_hot(idx - 1, 3); }, {"one_hot", "non-negative"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::one_hot(kiln::zeros({0}, kiln::kInt64)); },
                                      {"one_hot", "empty tensor", "[0]"}));
}

// num_classes = -1 reads the largest index: the one form no OpInfo can trace.
TEST(CompositeOps, OneHotInfersTheClassCount) {
  Tensor out = kiln::one_hot(kiln::from_vector<int64_t>({1, 3, 0}));
  EXPECT_EQ(out.sizes(), (kiln::Shape{3, 4}));
  EXPECT_EQ(out.dtype(), kiln::kInt64);
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0}));
}

// The results are new tensors even where nothing moves, as torch's: writing to one must not
// change the input.
TEST(CompositeOps, ResultsNeverAliasTheInput) {
  Tensor x = kiln::zeros({1, 3});
  std::vector<Tensor> outs = {kiln::flip(x, {}),
                              kiln::roll(x, {0}, {1}),
                              kiln::roll(x, {3}),
                              kiln::repeat(x, {2, 1}),
                              kiln::repeat(x, {1, 1}),
                              kiln::pad(x, {0, 0}),
                              kiln::pad(x, {0, 0}, "reflect")};
  for (const Tensor& out : outs) {
    out.fill_(7);
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  }
}

}  // namespace
