// Error messages of the normalization and loss ops: each names the op and the offending shapes,
// dims, dtypes or values.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

Tensor int64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return kiln::from_vector(v, {n});
}

TEST(NnErrors, CrossEntropyFloatTargetNamesOpAndDType) {
  Tensor logits = kiln::zeros({3, 4});
  Tensor target = kiln::zeros({3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::cross_entropy(logits, target); },
                                      {"cross_entropy", "float32", "int64", "[3]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::nll_loss(logits, target); },
                                      {"nll_loss", "float32", "int64"}));
}

TEST(NnErrors, TargetOutOfRange) {
  Tensor logits = kiln::zeros({3, 4});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::cross_entropy(logits, int64s({0, 4, 1}));
      },
      {"nll_loss", "Target 4 is out of bounds", "classes 4"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::nll_loss(logits, int64s({-1, 0, 1}));
      },
      {"nll_loss", "Target -1"}));
  // ignore_index is not range-checked.
  EXPECT_NO_THROW(kiln::cross_entropy(logits, int64s({0, -100, 1})));
}

TEST(NnErrors, LossShapesAndReductionNamed) {
  Tensor logits = kiln::zeros({3, 4});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::nll_loss(logits, int64s({0, 1}));
      },
      {"nll_loss", "[3, 4]", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::nll_loss(logits, int64s({0, 1, 2}), "avg");
      },
      {"nll_loss", "reduction", "avg"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::mse_loss(logits, kiln::zeros({4, 3}));
      },
      {"mse_loss", "[3, 4]", "[4, 3]"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::mse_loss(logits, logits, "max"); }, {"mse_loss", "max"}));
}

TEST(NnErrors, LayerNormShapeMismatch) {
  Tensor x = kiln::zeros({2, 5});
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::layer_norm(x, {10}); },
                              {"layer_norm", "normalized_shape=[10]", "[*, 10]", "[2, 5]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::layer_norm(x, {2, 5, 1});
      },
      {"layer_norm", "[2, 5, 1]", "[2, 5]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::layer_norm(x, {5}, kiln::ones({4})); },
                                      {"layer_norm", "weight", "[5]", "[4]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::layer_norm(x, {5}, {}, kiln::ones({2, 5}));
      },
      {"layer_norm", "bias", "[2, 5]"}));
}

TEST(NnErrors, SoftmaxDimOutOfRange) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::softmax(x, 2); }, {"softmax", "[-2, 1]", "got 2"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::log_softmax(x, -3); }, {"log_softmax", "got -3"}));
  Tensor i = kiln::zeros({3}, kiln::TensorOptions().dtype(kiln::kInt64));
  EXPECT_TRUE(throws_error_containing([&] { kiln::softmax(i, 0); }, {"softmax", "int64", "[3]"}));
}

}  // namespace
