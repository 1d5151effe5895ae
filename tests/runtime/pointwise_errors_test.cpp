// Errors of the pointwise ops: each message names the op and the offending dtypes or shapes
// (DESIGN.md principle 9), and a failed in-place op leaves self untouched.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

Tensor f32(std::vector<float> v, kiln::Shape s) {
  return kiln::from_vector(v, s);
}

TEST(PointwiseErrors, WhereConditionMustBeBool) {
  Tensor c = kiln::from_vector(std::vector<int32_t>{1, 0}, {2});
  Tensor a = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::where(c, a, a); },
                                      {"where", "condition", "bool", "int32", "[2]"}));
}

TEST(PointwiseErrors, WhereShapesMustBroadcast) {
  Tensor c = kiln::from_vector(std::vector<bool>{true, false, true}, {3});
  Tensor a = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::where(c, a, a); }, {"where", "[3]", "[2]"}));
}

TEST(PointwiseErrors, MaskedFillMaskMustBeBool) {
  Tensor x = f32({1, 2, 3, 4}, {2, 2});
  Tensor m = f32({1, 0}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::masked_fill(x, m, 0.0); },
                                      {"masked_fill", "mask", "bool", "float32", "[2]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::masked_fill_(x, m, 0.0); },
                                      {"masked_fill_", "mask", "float32"}));
}

TEST(PointwiseErrors, MaskedFillMaskMustBroadcastToSelf) {
  Tensor x = f32({1, 2}, {2});
  Tensor m = kiln::from_vector(std::vector<bool>{true, false, true, true}, {2, 2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::masked_fill(x, m, 0.0); },
                                      {"masked_fill", "[2, 2]", "[2]"}));
}

TEST(PointwiseErrors, GeluApproximateString) {
  Tensor x = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::gelu(x, "sigmoid"); },
                                      {"gelu", "approximate", "\"sigmoid\"", "none", "tanh"}));
}

TEST(PointwiseErrors, ClampNeedsABound) {
  Tensor x = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::clamp(x, std::nullopt, std::nullopt); },
                                      {"clamp", "min", "max", "float32"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::clamp_(x, std::nullopt, std::nullopt); },
                                      {"clamp_", "min", "max"}));
}

TEST(PointwiseErrors, InplaceResultTypeMustCastToSelf) {
  Tensor i = kiln::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  Tensor f = f32({0.5f, 1.5f, 2.5f}, {3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::add_(i, f); },
                                      {"add_", "float32", "can't be cast", "int32"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::add_(i, 1.5); }, {"add_scalar_", "int32"}));
  // True division of an integer tensor gives float, which can't go back in place.
  EXPECT_TRUE(throws_error_containing([&] { kiln::div_(i, i); }, {"div_", "float32", "int32"}));
  Tensor b = kiln::from_vector(std::vector<bool>{true, false, true}, {3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::mul_(b, i); }, {"mul_", "int32", "bool"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::clamp_(i, 0.5); }, {"clamp_", "int32"}));
  // Nothing was written and no version was bumped.
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(i.version(), 0u);
}

TEST(PointwiseErrors, InplaceOtherMustBroadcastToSelf) {
  Tensor self = f32({1, 2, 3}, {3});
  Tensor wide = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::add_(self, wide); }, {"add_", "[3]", "[2, 3]"}));
  Tensor bad = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::mul_(self, bad); }, {"mul_", "[3]", "[2]"}));
}

TEST(PointwiseErrors, MismatchedShapes) {
  Tensor a = f32({1, 2, 3}, {3});
  Tensor b = f32({1, 2}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::pow(a, b); }, {"pow", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::maximum(a, b); }, {"maximum", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::eq(a, b); }, {"eq", "[3]", "[2]"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::logical_and(a, b); }, {"logical_and", "[3]", "[2]"}));
}

TEST(PointwiseErrors, BoolAndIntegerRestrictions) {
  Tensor b = kiln::from_vector(std::vector<bool>{true, false}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::abs(b); }, {"abs", "bool"}));
  Tensor i = kiln::from_vector(std::vector<int64_t>{2, 3}, {2});
  EXPECT_TRUE(throws_error_containing([&] { kiln::pow(i, -1); },
                                      {"pow_scalar", "negative integer powers", "int64"}));
}

// ---- in-place semantics ----

TEST(PointwiseInplace, WritesThroughViewIntoBase) {
  Tensor base = kiln::zeros({3, 4});
  Tensor col = base.slice(1, 1, 4, 2);  // columns 1 and 3, non-contiguous
  uint32_t before = base.version();
  kiln::add_(col, f32({10, 20}, {2}));  // broadcast over rows
  EXPECT_EQ(base.version(), before + 1);
  EXPECT_EQ(col.version(), before + 1);
  std::vector<float> expect = {0, 10, 0, 20, 0, 10, 0, 20, 0, 10, 0, 20};
  EXPECT_EQ(base.to_vector<float>(), expect);

  Tensor t = base.transpose(0, 1);
  kiln::mul_(t, 2.0);
  kiln::clamp_(t, std::nullopt, 30.0);
  kiln::relu_(t);
  kiln::masked_fill_(t, kiln::from_vector(std::vector<bool>{true, false, false}, {3}), -1.0);
  EXPECT_EQ(base.version(), before + 5);
  expect = {-1, -1, -1, -1, 0, 20, 0, 30, 0, 20, 0, 30};
  EXPECT_EQ(base.to_vector<float>(), expect);
}

TEST(PointwiseInplace, EveryInplaceOpBumpsVersionOnce) {
  Tensor x = f32({1, 2, 3, 4}, {2, 2});
  Tensor o = f32({1, 1}, {2});
  Tensor m = kiln::from_vector(std::vector<bool>{true, false}, {2});
  uint32_t v = x.version();
  auto step = [&](auto f) {
    f();
    EXPECT_EQ(x.version(), ++v);
  };
  step([&] { kiln::add_(x, o); });
  step([&] { kiln::add_(x, 1.0, 2.0); });
  step([&] { kiln::sub_(x, o); });
  step([&] { kiln::sub_(x, 1.0); });
  step([&] { kiln::mul_(x, o); });
  step([&] { kiln::mul_(x, 2.0); });
  step([&] { kiln::div_(x, o); });
  step([&] { kiln::div_(x, 2.0); });
  step([&] { kiln::clamp_(x, 0.0, 5.0); });
  step([&] { kiln::masked_fill_(x, m, 9.0); });
  step([&] { kiln::relu_(x); });
  // add_ of float64 into float32: computed in float64, rounded once into self.
  step([&] { kiln::add_(x, kiln::from_vector(std::vector<double>{0.25, 0.5}, {2})); });
  EXPECT_EQ(x.dtype(), kiln::kFloat32);
}

TEST(PointwiseInplace, LargeInplaceUsesThreads) {
  int64_t n = 100003;
  Tensor x = kiln::ones({n});
  kiln::add_(x, kiln::full({n}, 2.0), 3.0);
  for (float v : x.to_vector<float>())
    ASSERT_EQ(v, 7.0f);
}

// ---- promotion and NaN details not covered by the OpInfo references ----

TEST(PointwiseSemantics, Promotion) {
  Tensor i = kiln::from_vector(std::vector<int32_t>{4, 9}, {2});
  EXPECT_EQ(kiln::sqrt(i).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::pow(i, i).dtype(), kiln::kInt32);
  EXPECT_EQ(kiln::pow(i, 0.5).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::clamp(i, 0, 5).dtype(), kiln::kInt32);
  EXPECT_EQ(kiln::clamp(i, 0, 5.5).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::eq(i, 4.0).dtype(), kiln::kBool);
  EXPECT_EQ(kiln::lt(i, 4.5).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(kiln::maximum(i, f32({5, 5}, {2})).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::logical_and(i, f32({0, 5}, {2})).to_vector<bool>(),
            (std::vector<bool>{false, true}));
}

TEST(PointwiseSemantics, IntegerPowNegativeExponents) {
  Tensor base = kiln::from_vector(std::vector<int64_t>{2, 1, -1, -1, 0}, {5});
  Tensor e = kiln::from_vector(std::vector<int64_t>{-1, -3, -3, -2, 3}, {5});
  EXPECT_EQ(kiln::pow(base, e).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, -1, 1, 0}));
}

}  // namespace
