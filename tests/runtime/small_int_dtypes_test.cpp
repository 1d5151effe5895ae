// uint8, int8 and int16 through eager ops: two's complement wrapping (uint8 mod 256), scalar
// operands converted to the tensor's dtype first, division, reductions that return int64,
// comparisons, casts, host access, printing and tensor files. Expected values are closed forms
// written here (mod 2^bits) or PyTorch 2.x's output for the same expression.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "kiln/kiln.h"
#include "kiln/runtime/tensor_file.h"
#include "test_util.h"

namespace {

using kiln::from_vector;
using kiln::Tensor;

// v reduced mod 2^bits into the signed or unsigned range, the reference for a wrapping store.
int64_t wrap_ref(int64_t v, int bits, bool is_signed) {
  int64_t m = int64_t{1} << bits;
  int64_t r = ((v % m) + m) % m;
  return is_signed && r >= m / 2 ? r - m : r;
}

template <class T>
std::vector<int64_t> as_i64(const Tensor& t) {
  std::vector<int64_t> out;
  for (T v : t.to_vector<T>())
    out.push_back(v);
  return out;
}

TEST(SmallIntDTypes, Uint8ArithmeticWrapsMod256) {
  std::vector<uint8_t> a = {0, 1, 100, 200, 255}, b = {255, 255, 200, 100, 2};
  Tensor ta = from_vector(a), tb = from_vector(b);
  Tensor sum = ta + tb, diff = ta - tb, prod = ta * tb;
  ASSERT_EQ(sum.dtype(), kiln::kUInt8);
  ASSERT_EQ(diff.dtype(), kiln::kUInt8);
  ASSERT_EQ(prod.dtype(), kiln::kUInt8);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(as_i64<uint8_t>(sum)[i], wrap_ref(a[i] + b[i], 8, false)) << i;
    EXPECT_EQ(as_i64<uint8_t>(diff)[i], wrap_ref(a[i] - b[i], 8, false)) << i;
    EXPECT_EQ(as_i64<uint8_t>(prod)[i], wrap_ref(a[i] * b[i], 8, false)) << i;
  }
}

TEST(SmallIntDTypes, Int8AndInt16WrapAsTwosComplement) {
  std::vector<int8_t> a = {127, -128, 100, -100};
  Tensor ta = from_vector(a);
  Tensor s8 = ta + ta, n8 = -ta, m8 = ta * 3;
  ASSERT_EQ(s8.dtype(), kiln::kInt8);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(as_i64<int8_t>(s8)[i], wrap_ref(2 * a[i], 8, true)) << i;
    EXPECT_EQ(as_i64<int8_t>(n8)[i], wrap_ref(-a[i], 8, true)) << i;
    EXPECT_EQ(as_i64<int8_t>(m8)[i], wrap_ref(3 * a[i], 8, true)) << i;
  }
  std::vector<int16_t> c = {32767, -32768, 300};
  Tensor tc = from_vector(c);
  Tensor s16 = tc + tc, m16 = tc * tc;
  ASSERT_EQ(m16.dtype(), kiln::kInt16);
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(as_i64<int16_t>(s16)[i], wrap_ref(2 * c[i], 16, true)) << i;
    EXPECT_EQ(as_i64<int16_t>(m16)[i], wrap_ref(int64_t{c[i]} * c[i], 16, true)) << i;
  }
}

// torch: torch.tensor([1, 200], dtype=torch.uint8) + 300 -> [45, 244]; the scalar 300 is
// uint8 44 for remainder and comparisons: remainder([100, 50, 255], 300) -> [12, 6, 35].
TEST(SmallIntDTypes, IntScalarOperandsConvertToTheTensorDType) {
  Tensor u = from_vector<uint8_t>({1, 200});
  Tensor r = u + 300;
  EXPECT_EQ(r.dtype(), kiln::kUInt8);
  EXPECT_EQ(as_i64<uint8_t>(r), (std::vector<int64_t>{45, 244}));
  Tensor v = from_vector<uint8_t>({100, 50, 255});
  EXPECT_EQ(as_i64<uint8_t>(kiln::remainder(v, 300)), (std::vector<int64_t>{12, 6, 35}));
  EXPECT_EQ((v < 300).to_vector<bool>(), (std::vector<bool>{false, false, false}));
  // int8: 200 is -56 (torch: remainder -> [-12, -44], fmod -> [44, -44]).
  Tensor i = from_vector<int8_t>({100, -100});
  EXPECT_EQ(as_i64<int8_t>(kiln::remainder(i, 200)), (std::vector<int64_t>{-12, -44}));
  EXPECT_EQ(as_i64<int8_t>(kiln::fmod(i, 200)), (std::vector<int64_t>{44, -44}));
  EXPECT_EQ((i < 200).to_vector<bool>(), (std::vector<bool>{false, true}));
  // A float scalar makes the result float, as for int32.
  EXPECT_EQ((u + 2.5).dtype(), kiln::kFloat32);
}

TEST(SmallIntDTypes, PromotionOfMixedOperands) {
  Tensor u = from_vector<uint8_t>({200, 1});
  Tensor i = from_vector<int8_t>({-100, 1});
  Tensor r = u + i;  // uint8 + int8 -> int16: no wrap at 200 - 100
  EXPECT_EQ(r.dtype(), kiln::kInt16);
  EXPECT_EQ(as_i64<int16_t>(r), (std::vector<int64_t>{100, 2}));
  EXPECT_EQ((u + from_vector<int32_t>({1, 1})).dtype(), kiln::kInt32);
  EXPECT_EQ((u + from_vector<bool>({true, false})).dtype(), kiln::kUInt8);
  EXPECT_EQ((i + from_vector<float>({1, 1})).dtype(), kiln::kFloat32);
  // A 0-dim tensor of a wider integer dtype does not widen a dimensioned one.
  EXPECT_EQ((u + kiln::full({}, 1000, kiln::kInt64)).dtype(), kiln::kUInt8);
  EXPECT_EQ((kiln::full({}, 3, kiln::kUInt8) + kiln::full({}, 3, kiln::kInt8)).dtype(),
            kiln::kInt16);
}

TEST(SmallIntDTypes, IntegerDivisionByZeroThrowsAndTrueDivisionIsFloat) {
  Tensor u = from_vector<uint8_t>({7, 9});
  Tensor zero = from_vector<uint8_t>({1, 0});
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { (void)kiln::remainder(u, zero); },
                                                 {"remainder", "ZeroDivisionError"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { (void)kiln::fmod(u, 0); },
                                                 {"fmod", "ZeroDivisionError"}));
  Tensor q = u / from_vector<uint8_t>({2, 4});
  EXPECT_EQ(q.dtype(), kiln::kFloat32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{3.5f, 2.25f}));
  // remainder takes the divisor's sign, fmod the dividend's (torch: [2, 1, 1], [-1, 1, -2]).
  Tensor i = from_vector<int8_t>({-7, 7, -128});
  EXPECT_EQ(as_i64<int8_t>(kiln::remainder(i, 3)), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(as_i64<int8_t>(kiln::fmod(i, 3)), (std::vector<int64_t>{-1, 1, -2}));
  EXPECT_EQ(as_i64<int8_t>(kiln::remainder(from_vector<int8_t>({-128}), -1)),
            (std::vector<int64_t>{0}));
}

// torch: uint8.sum() and .prod() are int64; cumsum too.
TEST(SmallIntDTypes, SumAndProdAccumulateInInt64) {
  std::vector<uint8_t> v(300, 255);
  Tensor u = from_vector(v);
  Tensor s = u.sum();
  EXPECT_EQ(s.dtype(), kiln::kInt64);
  EXPECT_EQ(s.item<int64_t>(), 300 * 255);
  Tensor p = from_vector<int8_t>({-100, 100, 3}).prod();
  EXPECT_EQ(p.dtype(), kiln::kInt64);
  EXPECT_EQ(p.item<int64_t>(), -30000);
  Tensor c = kiln::cumsum(from_vector<int16_t>({30000, 30000}), 0);
  EXPECT_EQ(c.dtype(), kiln::kInt64);
  EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{30000, 60000}));
  // amax keeps the dtype.
  Tensor m = from_vector<uint8_t>({3, 250, 7}).amax();
  EXPECT_EQ(m.dtype(), kiln::kUInt8);
  EXPECT_EQ(m.item<uint8_t>(), 250);
}

// torch: tensor([3], uint8) ** 5 -> 243; tensor([-3], int8) ** 5 -> 13; tensor([2], uint8) ** 9
// -> 0.
TEST(SmallIntDTypes, PowWraps) {
  EXPECT_EQ(as_i64<uint8_t>(kiln::pow(from_vector<uint8_t>({3, 2}), from_vector<uint8_t>({5, 9}))),
            (std::vector<int64_t>{243, 0}));
  EXPECT_EQ(as_i64<int8_t>(kiln::pow(from_vector<int8_t>({-3}), 5)), (std::vector<int64_t>{13}));
}

TEST(SmallIntDTypes, MeanOfAnIntegerTensorThrowsAsInTorch) {
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [] {
        (void)from_vector<uint8_t>({1, 2}).mean();
      },
      {"mean"}));
}

TEST(SmallIntDTypes, ComparisonsGiveBool) {
  Tensor u = from_vector<uint8_t>({0, 128, 255});
  Tensor i = from_vector<int8_t>({0, -128, -1});
  // Compared in int16 (their promoted dtype): 255 > -1, 128 > -128.
  Tensor gt = u > i;
  EXPECT_EQ(gt.dtype(), kiln::kBool);
  EXPECT_EQ(gt.to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((u == 255).to_vector<bool>(), (std::vector<bool>{false, false, true}));
}

TEST(SmallIntDTypes, AbsAndNegOfUint8) {
  // torch: -tensor([1, 200, 0], uint8) -> [255, 56, 0]; abs is the identity.
  Tensor u = from_vector<uint8_t>({1, 200, 0});
  EXPECT_EQ(as_i64<uint8_t>(-u), (std::vector<int64_t>{255, 56, 0}));
  EXPECT_EQ(as_i64<uint8_t>(kiln::abs(u)), (std::vector<int64_t>{1, 200, 0}));
  // abs(int8 -128) overflows to -128, as torch.
  EXPECT_EQ(as_i64<int8_t>(kiln::abs(from_vector<int8_t>({-128, -5}))),
            (std::vector<int64_t>{-128, 5}));
}

// In-range values only: out-of-range float -> integer conversion is undefined in torch.
TEST(SmallIntDTypes, CastsFromFloatTruncateTowardZero) {
  Tensor f = from_vector<float>({0.0f, 1.9f, 254.99f, 127.5f});
  EXPECT_EQ(as_i64<uint8_t>(f.to(kiln::kUInt8)), (std::vector<int64_t>{0, 1, 254, 127}));
  Tensor g = from_vector<double>({-128.9, 127.9, -0.5, 3.5});
  EXPECT_EQ(as_i64<int8_t>(g.to(kiln::kInt8)), (std::vector<int64_t>{-128, 127, 0, 3}));
  Tensor h = from_vector<float>({-32768.0f, 32767.5f, -1.5f});
  EXPECT_EQ(as_i64<int16_t>(h.to(kiln::kInt16)), (std::vector<int64_t>{-32768, 32767, -1}));
  // Integer -> narrower integer wraps; -> float is exact.
  Tensor w = from_vector<int32_t>({256, 257, -1, 128});
  EXPECT_EQ(as_i64<uint8_t>(w.to(kiln::kUInt8)), (std::vector<int64_t>{0, 1, 255, 128}));
  EXPECT_EQ(as_i64<int8_t>(w.to(kiln::kInt8)), (std::vector<int64_t>{0, 1, -1, -128}));
  EXPECT_EQ(from_vector<uint8_t>({255}).to(kiln::kFloat16).to_vector<float>()[0], 255.0f);
  EXPECT_EQ(from_vector<int8_t>({-3, 0}).to(kiln::kBool).to_vector<bool>(),
            (std::vector<bool>{true, false}));
}

TEST(SmallIntDTypes, FillChecksTheRangeAsTorch) {
  // torch.full((2,), 300, dtype=uint8) overflows; -1 is allowed for uint8 and wraps to 255.
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [] { (void)kiln::full({2}, 300, kiln::kUInt8); },
      {"value cannot be converted to type uint8 without overflow"}));
  EXPECT_EQ(as_i64<uint8_t>(kiln::full({2}, -1, kiln::kUInt8)), (std::vector<int64_t>{255, 255}));
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [] { (void)kiln::full({2}, -129, kiln::kInt8); },
      {"value cannot be converted to type int8 without overflow"}));
  EXPECT_TRUE(kiln_test::throws_error_containing([] { (void)kiln::full({2}, 40000, kiln::kInt16); },
                                                 {"int16"}));
  EXPECT_EQ(as_i64<int16_t>(kiln::full({1}, -32768, kiln::kInt16)), (std::vector<int64_t>{-32768}));
}

TEST(SmallIntDTypes, HostAccessFactoriesAndArange) {
  Tensor u = from_vector<uint8_t>({9, 8});
  EXPECT_EQ(u.element_size(), 1u);
  EXPECT_EQ(u.data_ptr<uint8_t>()[1], 8);
  EXPECT_EQ(from_vector<int16_t>({-7}).item<int16_t>(), -7);
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { (void)u.data_ptr<int8_t>(); }, {"uint8"}));
  Tensor a = kiln::arange(0, 5, 1, kiln::kInt8);
  EXPECT_EQ(a.dtype(), kiln::kInt8);
  EXPECT_EQ(as_i64<int8_t>(a), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(as_i64<int16_t>(kiln::zeros({3}, kiln::kInt16)), (std::vector<int64_t>{0, 0, 0}));
}

TEST(SmallIntDTypes, UnsupportedOpsNameTheOpAndDType) {
  EXPECT_TRUE(
      kiln_test::throws_error_containing([] { (void)kiln::rand({2}, kiln::kUInt8); }, {"uint8"}));
}

TEST(SmallIntDTypes, PrintingUsesTorchTypeNames) {
  std::ostringstream os;
  os << from_vector<uint8_t>({1, 255});
  EXPECT_NE(os.str().find("CPUByteType{2}"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("255"), std::string::npos) << os.str();
  std::ostringstream o8, o16;
  o8 << from_vector<int8_t>({-1, 2});
  o16 << from_vector<int16_t>({-300, 2});
  EXPECT_NE(o8.str().find("CPUCharType{2}"), std::string::npos) << o8.str();
  EXPECT_NE(o16.str().find("-300"), std::string::npos) << o16.str();
  EXPECT_NE(o16.str().find("CPUShortType{2}"), std::string::npos) << o16.str();
}

TEST(SmallIntDTypes, TensorFilesRoundTrip) {
  std::string path =
      (std::filesystem::temp_directory_path() / "kiln_small_int_dtypes_test.tensors").string();
  kiln::TensorFile file;
  file.tensors.push_back(from_vector<uint8_t>({0, 255, 7}));
  file.tensors.push_back(from_vector<int8_t>({-128, 127}));
  file.tensors.push_back(from_vector<int16_t>({-32768, 5}));
  kiln::save_tensors(path, file);
  kiln::TensorFile back = kiln::load_tensors(path);
  std::remove(path.c_str());
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors[0].dtype(), kiln::kUInt8);
  EXPECT_EQ(as_i64<uint8_t>(back.tensors[0]), (std::vector<int64_t>{0, 255, 7}));
  EXPECT_EQ(as_i64<int8_t>(back.tensors[1]), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(as_i64<int16_t>(back.tensors[2]), (std::vector<int64_t>{-32768, 5}));
}

}  // namespace
