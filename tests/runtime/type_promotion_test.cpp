// result_type through ops: dimensioned tensors outrank 0-dim tensors, which outrank scalars,
// unless the lower tier has a higher category (bool < integer < floating). Expected dtypes
// are PyTorch's for the same expressions.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "kiln/runtime/type_promotion.h"
#include "test_util.h"

namespace {

using kiln::from_vector;
using kiln::full;
using kiln::Tensor;

Tensor i32(std::vector<int32_t> v) {
  return from_vector(v);
}

TEST(TypePromotion, IntTensorPlusFloatScalarIsDefaultFloat) {
  Tensor r = i32({1, 2, -3}) + 2.5;
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5f, 4.5f, -0.5f}));
}

TEST(TypePromotion, Int64TensorPlusIntScalarStaysInt64) {
  Tensor r = from_vector<int64_t>({1, 2, 3}) + 4;
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{5, 6, 7}));
}

TEST(TypePromotion, Int32TensorPlusIntScalarStaysInt32) {
  Tensor r = kiln::add(i32({1, 2, 3}), int64_t{1} << 40);
  EXPECT_EQ(r.dtype(), kiln::kInt32);
}

TEST(TypePromotion, Int32TensorPlusZeroDimInt64StaysInt32) {
  Tensor zero_dim = full({}, 10, kiln::kInt64);
  ASSERT_EQ(zero_dim.dim(), 0);
  Tensor r = i32({1, 2, 3}) + zero_dim;
  EXPECT_EQ(r.dtype(), kiln::kInt32);
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{11, 12, 13}));
  EXPECT_EQ((zero_dim + i32({1, 2})).dtype(), kiln::kInt32);  // order does not matter
}

TEST(TypePromotion, Int32TensorPlusZeroDimFloat64IsFloat64) {
  Tensor r = i32({1, 2}) + full({}, 0.25, kiln::kFloat64);
  EXPECT_EQ(r.dtype(), kiln::kFloat64);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1.25, 2.25}));
}

TEST(TypePromotion, Float16TensorPlusZeroDimFloat64StaysFloat16) {
  Tensor h = kiln::ones({2}, kiln::kFloat16);
  EXPECT_EQ((h + full({}, 1.0, kiln::kFloat64)).dtype(), kiln::kFloat16);
}

TEST(TypePromotion, BoolTensorPlusZeroDimInt64IsInt64) {
  Tensor r = from_vector<bool>({true, false}) + full({}, 5, kiln::kInt64);
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{6, 5}));
}

TEST(TypePromotion, TwoZeroDimTensorsPromoteNormally) {
  Tensor r = full({}, 1, kiln::kInt32) + full({}, 2, kiln::kInt64);
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.item<int64_t>(), 3);
  EXPECT_EQ((full({}, 1, kiln::kInt32) + 0.5).dtype(), kiln::kFloat32);
}

TEST(TypePromotion, Float16PlusFloat32TensorIsFloat32) {
  Tensor r = kiln::ones({3}, kiln::kFloat16) + kiln::full({3}, 0.5);
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.5f, 1.5f, 1.5f}));
}

TEST(TypePromotion, Float16PlusBFloat16TensorIsFloat32) {
  Tensor r = kiln::ones({2}, kiln::kFloat16) + kiln::ones({2}, kiln::kBFloat16);
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{2.0f, 2.0f}));
}

TEST(TypePromotion, Float16TensorPlusFloatScalarStaysFloat16) {
  Tensor r = kiln::ones({2}, kiln::kFloat16) + 0.1;
  EXPECT_EQ(r.dtype(), kiln::kFloat16);
  // 1.1 rounded to float16 is 1.099609375.
  EXPECT_EQ(kiln_test::to_floats(r.to_vector<kiln::Half>()),
            (std::vector<float>{1.099609375f, 1.099609375f}));
}

TEST(TypePromotion, Int32PlusInt64TensorIsInt64) {
  Tensor r = i32({1, 2}) + from_vector<int64_t>({int64_t{1} << 40, 1});
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{(int64_t{1} << 40) + 1, 3}));
}

TEST(TypePromotion, BoolPlusBoolIsLogicalOr) {
  Tensor a = from_vector<bool>({true, true, false, false});
  Tensor b = from_vector<bool>({true, false, true, false});
  Tensor r = a + b;
  EXPECT_EQ(r.dtype(), kiln::kBool);
  EXPECT_EQ(kiln_test::bool_values(r), (std::vector<int>{1, 1, 1, 0}));
}

TEST(TypePromotion, BoolTimesBoolIsLogicalAnd) {
  Tensor r =
      from_vector<bool>({true, true, false, false}) * from_vector<bool>({true, false, true, false});
  EXPECT_EQ(r.dtype(), kiln::kBool);
  EXPECT_EQ(kiln_test::bool_values(r), (std::vector<int>{1, 0, 0, 0}));
}

TEST(TypePromotion, BoolPlusIntScalarIsInt64) {
  Tensor r = from_vector<bool>({true, false}) + 3;
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{4, 3}));
}

TEST(TypePromotion, BoolPlusFloatScalarIsFloat32) {
  Tensor r = from_vector<bool>({true, false}) + 0.5;
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.5f, 0.5f}));
}

TEST(TypePromotion, IntDivIntIsTrueDivisionInFloat32) {
  Tensor r = i32({7, -7, 1, 9}) / i32({2, 2, 4, 3});
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5f, -3.5f, 0.25f, 3.0f}));
  Tensor s = from_vector<int64_t>({7, 1}) / 2;
  EXPECT_EQ(s.dtype(), kiln::kFloat32);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3.5f, 0.5f}));
}

TEST(TypePromotion, IntDivByZeroGivesInfinity) {
  auto v = (i32({1, -1}) / i32({0, 0})).to_vector<float>();
  EXPECT_EQ(v[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[1], -std::numeric_limits<float>::infinity());
}

TEST(TypePromotion, UnaryFloatOpsOnIntTensorsGiveFloat32) {
  Tensor x = i32({0, 1, 2});
  Tensor e = kiln::exp(x);
  EXPECT_EQ(e.dtype(), kiln::kFloat32);
  EXPECT_ALL_CLOSE(e.to_vector<float>(), (std::vector<double>{1.0, std::exp(1.0), std::exp(2.0)}),
                   1e-6, 0);
  EXPECT_EQ(kiln::log(x).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::tanh(x).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::sigmoid(from_vector<int64_t>({0})).dtype(), kiln::kFloat32);
  EXPECT_EQ(kiln::sigmoid(from_vector<int64_t>({0})).item<float>(), 0.5f);
  EXPECT_EQ(kiln::exp(from_vector<bool>({true})).dtype(), kiln::kFloat32);
}

TEST(TypePromotion, IntegerOpsThatKeepIntegers) {
  EXPECT_EQ(kiln::neg(i32({3})).dtype(), kiln::kInt32);
  EXPECT_EQ(kiln::relu(i32({-3, 4})).to_vector<int32_t>(), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ((i32({3}) * i32({4})).dtype(), kiln::kInt32);
  EXPECT_EQ(kiln::mul(i32({3}), 2).dtype(), kiln::kInt32);
  EXPECT_EQ(kiln::mul(i32({3}), 2.0).dtype(), kiln::kFloat32);
}

TEST(TypePromotion, SubAndNegOnBoolThrow) {
  Tensor b = from_vector<bool>({true, false});
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::sub(b, b); }, {"sub", "bool"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { (void)(b - b); }, {"sub"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::neg(b); }, {"neg", "bool"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { (void)(-b); }, {"neg"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::sub(b, true); }, {"sub"}));
}

TEST(TypePromotion, SubOfBoolWithIntIsAllowed) {
  // Only an all-bool subtraction is rejected; bool - int promotes to int64.
  Tensor r = kiln::sub(from_vector<bool>({true, false}), from_vector<int64_t>({3, 3}));
  EXPECT_EQ(r.dtype(), kiln::kInt64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{-2, -3}));
}

// torch: "For integral input tensors, argument alpha must not be a floating point number."
// Silently truncating alpha = 2.5 to 2 would give 1 + 2 * 1 = 3 instead of 3.5.
TEST(TypePromotion, FloatAlphaWithIntegerTensorsIsRejected) {
  Tensor i = i32({1, 2});
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::add(i, i, 2.5); }, {"add", "alpha"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kiln::sub(i, i, 0.5); }, {"sub", "alpha"}));
  // A float alpha is fine once the result is floating.
  EXPECT_EQ(kiln::add(i, kiln::ones({2}), 2.5).to_vector<float>(),
            (std::vector<float>{3.5f, 4.5f}));
}

// result_type itself, on metadata only.
TEST(TypePromotion, ResultTypeOnMetaRefs) {
  kiln::Shape dim1{3}, zero{};
  kiln::Shape s1{1}, s0{};
  auto ref = [&](const kiln::Shape& sizes, kiln::DType t) {
    kiln::MetaRef m;
    m.sizes = sizes;
    m.strides = sizes.empty() ? s0 : s1;
    m.dtype = t;
    return m;
  };
  std::vector<kiln::MetaRef> a = {ref(dim1, kiln::kInt32), ref(zero, kiln::kFloat64)};
  EXPECT_EQ(kiln::result_type(a), kiln::kFloat64);
  std::vector<kiln::MetaRef> b = {ref(dim1, kiln::kFloat16), ref(zero, kiln::kFloat64)};
  EXPECT_EQ(kiln::result_type(b), kiln::kFloat16);
  kiln::Scalar two_and_half = 2.5, seven = 7, yes = true;
  std::vector<kiln::MetaRef> c = {ref(dim1, kiln::kInt64)};
  EXPECT_EQ(kiln::result_type(c, &two_and_half), kiln::kFloat32);
  EXPECT_EQ(kiln::result_type(c, &seven), kiln::kInt64);
  std::vector<kiln::MetaRef> d = {ref(dim1, kiln::kBool)};
  EXPECT_EQ(kiln::result_type(d, &yes), kiln::kBool);
  EXPECT_EQ(kiln::result_type(d, &seven), kiln::kInt64);
  std::vector<kiln::MetaRef> e = {ref(zero, kiln::kBool), ref(dim1, kiln::kBool)};
  EXPECT_EQ(kiln::result_type(e, &two_and_half), kiln::kFloat32);
}

}  // namespace
