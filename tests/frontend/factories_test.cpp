// Factories and host access: empty/zeros/ones/full/arange/from_vector with their dtype and device
// defaults, to_vector/item/data_ptr, dtype conversions, printing, and requires_grad.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln_test::throws_error_containing;

TEST(Factories, DefaultsAreFloat32OnTheCpu) {
  for (Tensor t :
       {kiln::empty({2, 3}), kiln::zeros({2, 3}), kiln::ones({2, 3}), kiln::full({2, 3}, 1.5)}) {
    EXPECT_EQ(t.dtype(), kiln::kFloat32);
    EXPECT_TRUE(t.device().is_cpu());
    EXPECT_EQ(t.device(), kiln::kCPU);
    EXPECT_EQ(t.sizes(), (Shape{2, 3}));
    EXPECT_EQ(t.strides(), (Shape{3, 1}));
    EXPECT_EQ(t.storage_offset(), 0);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.element_size(), 4u);
    EXPECT_FALSE(t.requires_grad());
  }
  EXPECT_EQ(kiln::zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(kiln::ones({2, 3}).to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(kiln::full({2, 3}, 1.5).to_vector<float>(), std::vector<float>(6, 1.5f));
}

TEST(Factories, DtypeOptions) {
  Tensor z = kiln::zeros({4}, kiln::kInt64);
  EXPECT_EQ(z.dtype(), kiln::kInt64);
  EXPECT_EQ(z.to_vector<int64_t>(), std::vector<int64_t>(4, 0));
  EXPECT_EQ(kiln::ones({3}, kiln::kInt32).to_vector<int32_t>(), std::vector<int32_t>(3, 1));
  EXPECT_EQ(kiln::full({2}, 2.75, kiln::kInt32).to_vector<int32_t>(), std::vector<int32_t>(2, 2));
  EXPECT_EQ(kiln::full({2}, -7, kiln::kFloat64).to_vector<double>(), std::vector<double>(2, -7.0));
  EXPECT_EQ(kiln_test::bool_values(kiln::ones({3}, kiln::kBool)), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(kiln_test::to_floats(kiln::full({2}, 0.1, kiln::kFloat16).to_vector<kiln::Half>()),
            (std::vector<float>(2, 0.0999755859375f)));
  Tensor chained = kiln::zeros({2}, kiln::TensorOptions().dtype(kiln::kFloat64).device(kiln::kCPU));
  EXPECT_EQ(chained.dtype(), kiln::kFloat64);
  EXPECT_EQ(kiln::empty({5}, kiln::dtype(kiln::kBFloat16)).element_size(), 2u);
}

TEST(Factories, ZeroDimAndEmptyShapes) {
  Tensor s = kiln::full({}, 4.0);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<float>(), 4.0f);
  Tensor e = kiln::zeros({3, 0, 2});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
  EXPECT_TRUE(throws_error_containing([] { kiln::zeros({2, -1}); }, {"[2, -1]"}));
}

TEST(Arange, IntegerBoundsGiveInt64) {
  Tensor a = kiln::arange(5);
  EXPECT_EQ(a.dtype(), kiln::kInt64);
  EXPECT_EQ(a.sizes(), (Shape{5}));
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kiln::arange(1, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(kiln::arange(5, 0, -2).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(kiln::arange(3, 3).numel(), 0);
  EXPECT_EQ(kiln::arange(-2, 2).to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 1}));
}

TEST(Arange, FloatBoundsGiveFloat32) {
  Tensor a = kiln::arange(0, 1, 0.25);
  EXPECT_EQ(a.dtype(), kiln::kFloat32);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(kiln::arange(2.5).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  // ceil((0.3 - 0) / 0.1) = 3 elements, as torch.
  EXPECT_EQ(kiln::arange(0, 0.3, 0.1).numel(), 3);
  EXPECT_EQ(kiln::arange(1.0, 0.0, -0.5).to_vector<float>(), (std::vector<float>{1.0f, 0.5f}));
}

TEST(Arange, DtypeOptionOverridesInference) {
  Tensor d = kiln::arange(4, kiln::kFloat64);
  EXPECT_EQ(d.dtype(), kiln::kFloat64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(kiln::arange(0, 2, 0.5, kiln::kInt32).dtype(), kiln::kInt32);
}

TEST(Arange, BadStepThrows) {
  EXPECT_TRUE(throws_error_containing([] { kiln::arange(0, 5, 0); }, {"arange", "step"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::arange(0, 5, -1); }, {"arange"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::arange(5, 0, 1); }, {"arange"}));
  EXPECT_TRUE(throws_error_containing(
      [] { kiln::arange(0.0, std::numeric_limits<double>::infinity(), 1.0); }, {"arange"}));
}

TEST(FromVector, ShapeAndDefaultDtype) {
  Tensor t = kiln::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.dtype(), kiln::kFloat32);
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(kiln::from_vector<int32_t>({1, 2, 3}).sizes(), (Shape{3}));  // flat by default
  EXPECT_EQ(kiln::from_vector<double>({2.5}).dim(), 0);                  // one element: 0-dim
  EXPECT_EQ(kiln::from_vector<double>({2.5}, {1}).sizes(), (Shape{1}));
  EXPECT_EQ(kiln::from_vector<int64_t>({}).sizes(), (Shape{0}));
  EXPECT_EQ(kiln::from_vector<int64_t>({}, {2, 0}).sizes(), (Shape{2, 0}));
}

TEST(FromVector, CopiesTheData) {
  std::vector<float> v = {1, 2, 3};
  Tensor t = kiln::from_vector(v);
  v[0] = 100;
  EXPECT_EQ(t.to_vector<float>()[0], 1.0f);
}

TEST(FromVector, DtypeOptionConverts) {
  Tensor f = kiln::from_vector<int32_t>({1, -2, 3}, {3}, kiln::kFloat32);
  EXPECT_EQ(f.dtype(), kiln::kFloat32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, -2, 3}));
  Tensor i = kiln::from_vector<double>({1.7, -1.7, 2.5}, {3}, kiln::kInt32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 2}));  // truncation
  Tensor b = kiln::from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(b.dtype(), kiln::kBool);
  EXPECT_EQ(kiln_test::bool_values(b), (std::vector<int>{1, 0, 1}));
  Tensor bf = kiln::from_vector<bool>({true, false}, {2}, kiln::kFloat32);
  EXPECT_EQ(bf.to_vector<float>(), (std::vector<float>{1, 0}));
}

TEST(FromVector, WrongCountNamesBothCounts) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::from_vector<float>({1, 2, 3, 4, 5}, {2, 3});
      },
      {"from_vector", "5", "6", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::from_vector<int32_t>({1}, {0}); },
                                      {"from_vector", "1", "0"}));
}

// On another device the host values are copied there, as torch.tensor(..., device=): a meta
// tensor keeps only the shape and dtype, as torch's does.
TEST(FromVector, OtherDevicesGetACopy) {
  Tensor m = kiln::from_vector<float>({1, 2}, {2}, kiln::kMeta);
  EXPECT_EQ(m.device(), kiln::kMeta);
  EXPECT_EQ(m.sizes(), (kiln::Shape{2}));
  EXPECT_EQ(m.dtype(), kiln::kFloat32);
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Tensor c = kiln::from_vector<int32_t>(
      {4, 5, 6}, {3}, kiln::TensorOptions(kiln::kFloat64).device(kiln::Device::cuda(0)));
  EXPECT_TRUE(c.device().is_cuda());
  EXPECT_EQ(c.dtype(), kiln::kFloat64);
  EXPECT_EQ(c.to(kiln::kCPU).to_vector<double>(), (std::vector<double>{4, 5, 6}));
}

TEST(HostAccess, ToVectorReadsLogicalOrderOfViews) {
  Tensor t = kiln::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(t.t().to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.select(1, 2).to_vector<int32_t>(), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));  // converts
}

TEST(HostAccess, ItemOfSingleElementTensors) {
  EXPECT_EQ(kiln::full({1, 1}, 3.5).item<float>(), 3.5f);
  EXPECT_EQ(kiln::full({}, 3.5).item<double>(), 3.5);  // converted
  EXPECT_EQ(kiln::arange(5).select(0, 3).item<int64_t>(), 3);
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::zeros({2, 3}).item<float>();
      },
      {"item", "6", "[2, 3]"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::zeros({0}).item<float>(); }, {"item", "0"}));
}

TEST(HostAccess, DataPtrChecksDtype) {
  Tensor t = kiln::from_vector<float>({1, 2, 3});
  float* p = t.data_ptr<float>();
  EXPECT_EQ(p[1], 2.0f);
  p[1] = 20.0f;  // writes are visible
  EXPECT_EQ(t.to_vector<float>()[1], 20.0f);
  EXPECT_EQ(t.slice(0, 1, 3).data_ptr<float>(), p + 1);  // views point at their first element
  EXPECT_TRUE(
      throws_error_containing([&] { t.data_ptr<double>(); }, {"data_ptr", "float64", "float32"}));
  EXPECT_TRUE(throws_error_containing([&] { t.data_ptr<int32_t>(); }, {"data_ptr", "int32"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::zeros({2}, kiln::kMeta).data_ptr<float>(); },
                                      {"data_ptr", "meta"}));
}

TEST(Conversions, FloatToIntTruncatesTowardZero) {
  Tensor f = kiln::from_vector<float>({1.9f, -1.9f, 2.5f, -0.5f, 0.0f, 100.99f});
  Tensor i = f.to(kiln::kInt32);
  EXPECT_EQ(i.dtype(), kiln::kInt32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 2, 0, 0, 100}));
  EXPECT_EQ(f.to(kiln::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 2, 0, 0, 100}));
}

TEST(Conversions, ToBoolIsNonZero) {
  Tensor f = kiln::from_vector<float>({0.0f, 0.5f, -2.0f, -0.0f, std::nanf("")});
  EXPECT_EQ(kiln_test::bool_values(f.to(kiln::kBool)), (std::vector<int>{0, 1, 1, 0, 1}));
  Tensor i = kiln::from_vector<int64_t>({0, 7, -1});
  EXPECT_EQ(kiln_test::bool_values(i.to(kiln::kBool)), (std::vector<int>{0, 1, 1}));
  Tensor b = kiln::from_vector<bool>({true, false});
  EXPECT_EQ(b.to(kiln::kFloat64).to_vector<double>(), (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(b.to(kiln::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
}

TEST(Conversions, WideningAndSameDtype) {
  const int64_t big = (int64_t{1} << 52) + 1;
  EXPECT_EQ(kiln::from_vector<int64_t>({big, -3}).to(kiln::kFloat64).to_vector<double>(),
            (std::vector<double>{static_cast<double>(big), -3.0}));
  EXPECT_EQ(
      kiln::from_vector<int32_t>({-7, 2049}).to(kiln::kFloat16).to_vector<kiln::Half>()[1].bits,
      kiln::Half(2048.0f).bits);  // 2049 rounds to even in float16
  Tensor t = kiln::ones({3});
  EXPECT_TRUE(t.to(kiln::kFloat32).is_same(t));
  Tensor c = t.to(kiln::kFloat64);
  EXPECT_EQ(c.sizes(), t.sizes());
  EXPECT_FALSE(c.is_same(t));
}

TEST(Conversions, NonContiguousSourceKeepsLogicalOrder) {
  Tensor t = kiln::from_vector<double>({0.5, 1.5, 2.5, 3.5, 4.5, 5.5}, {2, 3}).t();
  Tensor i = t.to(kiln::kInt32);
  EXPECT_EQ(i.sizes(), (Shape{3, 2}));
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
}

std::string printed(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(Printing, FooterNamesBackendTypeAndSizes) {
  std::string s = printed(kiln::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_NE(s.find("[ CPUFloatType{2,3} ]"), std::string::npos) << s;
  EXPECT_NE(s.find("1.0000"), std::string::npos) << s;
  EXPECT_NE(s.find("6.0000"), std::string::npos) << s;
  EXPECT_NE(printed(kiln::arange(4)).find("CPULongType{4}"), std::string::npos);
  EXPECT_NE(printed(kiln::ones({2}, kiln::kInt32)).find("CPUIntType{2}"), std::string::npos);
  EXPECT_NE(printed(kiln::ones({1}, kiln::kFloat64)).find("CPUDoubleType{1}"), std::string::npos);
  EXPECT_NE(printed(kiln::ones({1}, kiln::kFloat16)).find("CPUHalfType{1}"), std::string::npos);
  EXPECT_NE(printed(kiln::ones({1}, kiln::kBFloat16)).find("CPUBFloat16Type{1}"),
            std::string::npos);
  EXPECT_NE(printed(kiln::ones({1}, kiln::kBool)).find("CPUBoolType{1}"), std::string::npos);
  EXPECT_NE(printed(kiln::full({}, 2.5)).find("CPUFloatType{}"), std::string::npos);
  EXPECT_NE(printed(kiln::zeros({2, 3}, kiln::kMeta)).find("MetaFloatType{2,3}"),
            std::string::npos);
  EXPECT_EQ(printed(Tensor()), "[ Tensor (undefined) ]");
}

TEST(Printing, IntegersPrintPlainly) {
  std::string s = printed(kiln::from_vector<int64_t>({-12, 345}, {2}));
  EXPECT_NE(s.find("-12"), std::string::npos) << s;
  EXPECT_NE(s.find("345"), std::string::npos) << s;
  EXPECT_EQ(s.find("."), std::string::npos) << s;
}

TEST(Printing, LargeInt64ValuesPrintExactly) {
  // 2^53 + 1 is not representable as a double: printing must not go through one.
  std::string s = printed(kiln::from_vector<int64_t>({9007199254740993, -9007199254740995}));
  EXPECT_NE(s.find("9007199254740993"), std::string::npos) << s;
  EXPECT_NE(s.find("-9007199254740995"), std::string::npos) << s;
}

TEST(RequiresGrad, OptionSetsTheFlag) {
  Tensor a = kiln::zeros({2}, kiln::requires_grad());
  EXPECT_TRUE(a.requires_grad());
  Tensor b = kiln::ones({2}, kiln::TensorOptions().dtype(kiln::kFloat64).requires_grad(true));
  EXPECT_TRUE(b.requires_grad());
  EXPECT_EQ(b.dtype(), kiln::kFloat64);
  EXPECT_TRUE(kiln::from_vector<float>({1, 2}, {2}, kiln::requires_grad()).requires_grad());
  EXPECT_FALSE(kiln::zeros({2}, kiln::requires_grad(false)).requires_grad());
}

TEST(RequiresGrad, MethodSetsAndClears) {
  Tensor t = kiln::zeros({2});
  EXPECT_FALSE(t.requires_grad());
  t.requires_grad_();
  EXPECT_TRUE(t.requires_grad());
  t.requires_grad_(false);
  EXPECT_FALSE(t.requires_grad());
}

TEST(RequiresGrad, IntegerTensorsCannotRequireGrad) {
  Tensor i = kiln::zeros({2}, kiln::kInt64);
  EXPECT_TRUE(throws_error_containing([&] { i.requires_grad_(); }, {"requires_grad", "int64"}));
  EXPECT_FALSE(i.requires_grad());
  i.requires_grad_(false);  // clearing is always allowed
  EXPECT_TRUE(throws_error_containing(
      [] { kiln::arange(3, kiln::TensorOptions().requires_grad(true)); }, {"requires_grad"}));
  EXPECT_TRUE(throws_error_containing(
      [] { kiln::ones({2}, kiln::TensorOptions(kiln::kBool).requires_grad()); }, {"bool"}));
}

TEST(TensorHandle, DefaultTensorIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_TRUE(kiln::zeros({1}).defined());
  Tensor a = kiln::zeros({2});
  Tensor b = a;  // copies share the TensorImpl
  EXPECT_TRUE(a.is_same(b));
  b.fill_(3);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{3, 3}));
}

}  // namespace
