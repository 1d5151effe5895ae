// Error messages of the indexing ops, dropout and linear: each names the op and the offending
// index, size, shape or dtype (DESIGN.md principle 9), and a failed call leaves its inputs as
// they were.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

Tensor ids(std::vector<int64_t> v, kiln::Shape shape = {}) {
  return kiln::from_vector(v, std::move(shape));
}

TEST(IndexingErrors, EmbeddingIndexOutOfRange) {
  Tensor w = kiln::zeros({5, 3});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::embedding(w, ids({0, 7, 1}));
      },
      {"embedding", "index 7", "size 5"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::embedding(w, ids({-1})); },
                                      {"embedding", "index -1", "size 5"}));
}

TEST(IndexingErrors, EmbeddingWrongIndexDtype) {
  Tensor w = kiln::zeros({5, 3});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::embedding(w, kiln::from_vector(std::vector<int32_t>{0, 1}));
      },
      {"embedding", "int64", "int32"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::embedding(w, kiln::zeros({2})); },
                                      {"embedding", "float32"}));
}

TEST(IndexingErrors, EmbeddingWeightNot2D) {
  EXPECT_TRUE(throws_error_containing([] { kiln::embedding(kiln::zeros({5}), ids({0})); },
                                      {"embedding", "2-D", "[5]"}));
}

TEST(IndexingErrors, IndexSelect) {
  Tensor x = kiln::zeros({4, 6});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::index_select(x, 1, ids({2, 6}));
      },
      {"index_select", "index 6", "size 6"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::index_select(x, -2, ids({4})); },
                                      {"index_select", "index 4", "size 4"}));
  EXPECT_TRUE(throws_error_containing(
      [&] { kiln::index_select(x, 0, kiln::from_vector(std::vector<int32_t>{0})); },
      {"index_select", "int32"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::index_select(x, 0, ids({0, 1}, {1, 2}));
      },
      {"index_select", "1-D", "[1, 2]"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::index_select(x, 2, ids({0})); }, {"index_select", "2"}));
}

TEST(IndexingErrors, GatherOutOfRangeAndShapes) {
  Tensor x = kiln::zeros({3, 4});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::gather(x, 1, ids({0, 4, 1}, {1, 3}));
      },
      {"gather", "index 4", "size 4"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::gather(x, 0, ids({0, 1, 0, 1, 0}, {1, 5}));
      },
      {"gather", "[1, 5]", "[3, 4]", "dimension 1"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::gather(x, 0, ids({0, 1}));
      },
      {"gather", "[2]", "[3, 4]", "dimensions"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::gather(x, 0, kiln::zeros({1, 4}, kiln::kInt32));
      },
      {"gather", "int32"}));
}

TEST(IndexingErrors, ScatterAdd) {
  Tensor x = kiln::zeros({3, 4});
  Tensor src = kiln::ones({2, 4});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::scatter_add(x, 0, ids({0, 3, 1, 1, 2, 0, 0, 0}, {2, 4}), src);
      },
      {"scatter_add", "index 3", "size 3"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::scatter_add(x, 0, kiln::zeros({3, 4}, kiln::kInt64), src);
      },
      {"scatter_add", "[3, 4]", "src", "[2, 4]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::scatter_add(x, 0, kiln::zeros({2, 4}, kiln::kInt64),
                          kiln::ones({2, 4}, kiln::kFloat64));
      },
      {"scatter_add", "float32", "float64"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::scatter_add(x, 1, kiln::zeros({4, 1}, kiln::kInt64), kiln::ones({4, 1}));
      },
      {"scatter_add", "[4, 1]", "[3, 4]", "dimension 0"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::scatter_add(x, 0, kiln::zeros({2, 4}, kiln::kFloat32), src);
      },
      {"scatter_add", "int64", "float32"}));
  // The failed call left x untouched.
  for (float v : x.to_vector<float>())
    EXPECT_EQ(v, 0.0f);
}

TEST(IndexingErrors, DropoutProbabilityOutOfRange) {
  Tensor x = kiln::ones({4});
  EXPECT_TRUE(throws_error_containing([&] { kiln::dropout(x, 1.5); }, {"dropout", "1.5"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::dropout(x, -0.25, false); }, {"dropout", "-0.25"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::dropout(kiln::ones({3}, kiln::kInt64), 0.5); },
                                      {"dropout", "int64"}));
}

TEST(IndexingErrors, DropoutEvalReturnsInput) {
  Tensor x = kiln::ones({4});
  EXPECT_TRUE(kiln::dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(kiln::dropout(x, 0.0, true).is_same(x));
}

TEST(LinearErrors, ShapesNamed) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::linear(kiln::zeros({2, 3}), kiln::zeros({5, 4}));
      },
      {"linear", "[2, 3]", "[5, 4]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::linear(kiln::zeros({2, 3}), kiln::zeros({1, 5, 3}));
      },
      {"linear", "[1, 5, 3]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::linear(kiln::zeros({2, 3}), kiln::zeros({5, 3}), kiln::zeros({4}));
      },
      {"linear", "[2, 5]", "[4]"}));
}

}  // namespace
