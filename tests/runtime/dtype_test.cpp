// DTypes: sizes and names, PyTorch's promotion lattice, and the float16 / bfloat16 storage types
// (round to nearest even, NaN stays NaN, overflow to infinity).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <iterator>
#include <limits>
#include <sstream>

#include "kiln/base/half.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::BFloat16;
using kiln::DType;
using kiln::Half;

constexpr DType kAll[] = {kiln::kBool,    kiln::kUInt8,  kiln::kInt8,    kiln::kInt16,
                          kiln::kInt32,   kiln::kInt64,  kiln::kFloat16, kiln::kBFloat16,
                          kiln::kFloat32, kiln::kFloat64};
static_assert(std::size(kAll) == kiln::kNumDTypes);

TEST(DType, ElementSizeAndNameOfEveryDType) {
  struct Case {
    DType t;
    size_t size;
    const char* name;
    const char* short_name;
  };
  const Case cases[] = {
      {kiln::kBool, 1, "bool", "b8"},        {kiln::kUInt8, 1, "uint8", "u8"},
      {kiln::kInt8, 1, "int8", "i8"},        {kiln::kInt16, 2, "int16", "i16"},
      {kiln::kInt32, 4, "int32", "i32"},     {kiln::kInt64, 8, "int64", "i64"},
      {kiln::kFloat16, 2, "float16", "f16"}, {kiln::kBFloat16, 2, "bfloat16", "bf16"},
      {kiln::kFloat32, 4, "float32", "f32"}, {kiln::kFloat64, 8, "float64", "f64"}};
  for (const Case& c : cases) {
    EXPECT_EQ(kiln::element_size(c.t), c.size) << c.name;
    EXPECT_EQ(kiln::dtype_name(c.t), c.name);
    std::ostringstream os;
    os << c.t;
    EXPECT_EQ(os.str(), c.name);
    EXPECT_EQ(fmt::format("{}", c.t), c.name);
    EXPECT_EQ(kiln::dtype_short_name(c.t), c.short_name);
    DType parsed = kiln::kFloat32;
    ASSERT_TRUE(kiln::dtype_from_short_name(c.short_name, &parsed)) << c.short_name;
    EXPECT_EQ(parsed, c.t);
  }
}

TEST(DType, CategoriesOfEveryDType) {
  EXPECT_FALSE(kiln::is_floating(kiln::kBool));
  EXPECT_FALSE(kiln::is_floating(kiln::kInt32));
  EXPECT_FALSE(kiln::is_floating(kiln::kInt64));
  EXPECT_TRUE(kiln::is_floating(kiln::kFloat16));
  EXPECT_TRUE(kiln::is_floating(kiln::kBFloat16));
  EXPECT_TRUE(kiln::is_floating(kiln::kFloat32));
  EXPECT_TRUE(kiln::is_floating(kiln::kFloat64));
  EXPECT_TRUE(kiln::is_integral(kiln::kBool, true));
  EXPECT_FALSE(kiln::is_integral(kiln::kBool, false));
  EXPECT_TRUE(kiln::is_integral(kiln::kInt32, false));
  EXPECT_TRUE(kiln::is_integral(kiln::kInt64, false));
  EXPECT_FALSE(kiln::is_integral(kiln::kFloat32, true));
  for (DType t : {kiln::kUInt8, kiln::kInt8, kiln::kInt16}) {
    EXPECT_FALSE(kiln::is_floating(t)) << t;
    EXPECT_TRUE(kiln::is_integral(t, false)) << t;
    EXPECT_TRUE(kiln::is_small_integral(t)) << t;
  }
  EXPECT_FALSE(kiln::is_small_integral(kiln::kInt32));
  EXPECT_FALSE(kiln::is_small_integral(kiln::kBool));
}

TEST(DType, ElementSizeMatchesTheCppType) {
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<bool>), sizeof(bool));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<uint8_t>), sizeof(uint8_t));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<int8_t>), sizeof(int8_t));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<int16_t>), sizeof(int16_t));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<int32_t>), sizeof(int32_t));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<int64_t>), sizeof(int64_t));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<Half>), sizeof(Half));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<BFloat16>), sizeof(BFloat16));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<float>), sizeof(float));
  EXPECT_EQ(kiln::element_size(kiln::dtype_of<double>), sizeof(double));
}

// torch.promote_types for every pair, as torch 2.x prints it (checked against torch itself in
// tests/python/test_dtypes.py): bool < uint8, int8 < int16 < int32 < int64 < (float16 |
// bfloat16) < float32 < float64; uint8 with int8 is int16; float16 with bfloat16 is float32;
// any integer or bool with a 16-bit float is that float type.
TEST(DType, PromoteTypesFullTable) {
  const DType b = kiln::kBool, u1 = kiln::kUInt8, s1 = kiln::kInt8, s2 = kiln::kInt16,
              i = kiln::kInt32, l = kiln::kInt64, h = kiln::kFloat16, bf = kiln::kBFloat16,
              f = kiln::kFloat32, d = kiln::kFloat64;
  // Rows/columns: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64.
  const DType expected[10][10] = {
      {b, u1, s1, s2, i, l, h, bf, f, d},     // bool
      {u1, u1, s2, s2, i, l, h, bf, f, d},    // uint8
      {s1, s2, s1, s2, i, l, h, bf, f, d},    // int8
      {s2, s2, s2, s2, i, l, h, bf, f, d},    // int16
      {i, i, i, i, i, l, h, bf, f, d},        // int32
      {l, l, l, l, l, l, h, bf, f, d},        // int64
      {h, h, h, h, h, h, h, f, f, d},         // float16
      {bf, bf, bf, bf, bf, bf, f, bf, f, d},  // bfloat16
      {f, f, f, f, f, f, f, f, f, d},         // float32
      {d, d, d, d, d, d, d, d, d, d},         // float64
  };
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 10; ++c) {
      EXPECT_EQ(kiln::promote_types(kAll[r], kAll[c]), expected[r][c])
          << kAll[r] << " with " << kAll[c];
    }
  }
}

// The integer part of the lattice from its rule instead of a table: the narrowest integer dtype
// whose range holds both operands' ranges.
TEST(DType, IntegerPromotionHoldsBothRanges) {
  struct Range {
    DType t;
    double lo, hi;
  };
  const Range ints[] = {{kiln::kUInt8, 0, 255},
                        {kiln::kInt8, -128, 127},
                        {kiln::kInt16, -32768, 32767},
                        {kiln::kInt32, -2147483648.0, 2147483647.0},
                        {kiln::kInt64, -0x1p63, 0x1p63}};
  for (const Range& a : ints) {
    for (const Range& b : ints) {
      DType want = kiln::kInt64;
      for (const Range& c : ints) {  // narrowest first
        if (c.lo <= std::min(a.lo, b.lo) && c.hi >= std::max(a.hi, b.hi)) {
          want = c.t;
          break;
        }
      }
      EXPECT_EQ(kiln::promote_types(a.t, b.t), want) << a.t << " with " << b.t;
    }
  }
}

TEST(DType, PromoteTypesIsSymmetricAndIdempotent) {
  for (DType a : kAll) {
    EXPECT_EQ(kiln::promote_types(a, a), a);
    for (DType b : kAll)
      EXPECT_EQ(kiln::promote_types(a, b), kiln::promote_types(b, a));
  }
}

// ---- float16 ----

uint16_t half_bits(float f) {
  return Half(f).bits;
}

TEST(Half, ExactValuesConvertExactly) {
  EXPECT_EQ(half_bits(1.0f), 0x3C00);
  EXPECT_EQ(half_bits(-2.5f), 0xC100);
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(65504.0f), 0x7BFF);                        // largest finite half
  EXPECT_EQ(half_bits(6.103515625e-05f), 0x0400);                // smallest normal, 2^-14
  EXPECT_EQ(half_bits(5.9604644775390625e-08f), 0x0001);         // smallest subnormal, 2^-24
  EXPECT_EQ(half_bits(1023 * 5.9604644775390625e-08f), 0x03FF);  // largest subnormal
  EXPECT_EQ(static_cast<float>(Half(-2.5f)), -2.5f);
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
}

TEST(Half, BitsConvertBackToTheirValues) {
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3C00)), 1.0f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0xC000)), -2.0f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x7BFF)), 65504.0f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x0001)), 5.9604644775390625e-08f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x8001)), -5.9604644775390625e-08f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3555)), 0.333251953125f);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x7C00)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(Half::from_bits(0xFC00)), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(Half::from_bits(0x7E00))));
}

TEST(Half, RoundsToNearestHalf) {
  EXPECT_EQ(half_bits(0.1f), 0x2E66);
  EXPECT_EQ(static_cast<float>(Half(0.1f)), 0.0999755859375f);
  EXPECT_EQ(half_bits(65519.0f), 0x7BFF);  // below the overflow midpoint: rounds down
  EXPECT_EQ(half_bits(1.0f / 3.0f), 0x3555);
}

TEST(Half, TiesRoundToEven) {
  const float ulp_at_one = 1.0f / 1024.0f;                      // 2^-10
  EXPECT_EQ(half_bits(1.0f + ulp_at_one / 2), 0x3C00);          // tie between 0x3C00 and 0x3C01
  EXPECT_EQ(half_bits(1.0f + 3 * ulp_at_one / 2), 0x3C02);      // tie between 0x3C01 and 0x3C02
  EXPECT_EQ(half_bits(1.0f + ulp_at_one / 2 + 1e-6f), 0x3C01);  // just above the tie
  const float tiny = 5.9604644775390625e-08f;                   // 2^-24
  EXPECT_EQ(half_bits(tiny / 2), 0x0000);                       // subnormal tie to even (0)
  EXPECT_EQ(half_bits(3 * tiny / 2), 0x0002);                   // subnormal tie to even (2)
  EXPECT_EQ(half_bits(-3 * tiny / 2), 0x8002);
}

TEST(Half, OverflowGoesToInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(half_bits(65520.0f), 0x7C00);
  EXPECT_EQ(half_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(half_bits(1e10f), 0x7C00);
  EXPECT_EQ(half_bits(inf), 0x7C00);
  EXPECT_EQ(half_bits(-inf), 0xFC00);
  EXPECT_EQ(static_cast<float>(Half(65520.0f)), inf);
}

TEST(Half, NaNStaysNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Half h(nan);
  EXPECT_EQ(h.bits & 0x7C00, 0x7C00);
  EXPECT_NE(h.bits & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(static_cast<float>(h)));
  // A signalling NaN whose payload sits only in the low float bits must not become infinity.
  float snan = std::bit_cast<float>(0x7F800001u);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(snan))));
}

TEST(Half, EveryHalfValueRoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    float f = static_cast<float>(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(Half(f)))) << std::hex << b;
    } else {
      ASSERT_EQ(Half(f).bits, b) << std::hex << b;
    }
  }
}

// Reference rounding of a float to float16 computed with exact double arithmetic: the value is
// scaled by the half ulp of its binade and rounded with nearbyint (ties to even).
double ref_round_to_half(float f) {
  double x = f;
  double ax = std::abs(x);
  if (ax >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  int e = ax == 0 ? -24 : std::ilogb(ax);
  double ulp = std::ldexp(1.0, std::max(e, -14) - 10);
  return std::nearbyint(x / ulp) * ulp;
}

TEST(Half, RandomFloatsRoundLikeExactReference) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  for (int i = 0; i < 200000; ++i) {
    // Exponents from 2^-30 to 2^17 cover zero, subnormal, normal and overflow halves.
    uint32_t mant = bits(gen) & 0x7FFFFF, sign = bits(gen) & 0x80000000u;
    uint32_t exp = 97 + bits(gen) % 48;
    float f = std::bit_cast<float>(sign | (exp << 23) | mant);
    double got = static_cast<float>(Half(f));
    ASSERT_EQ(got, ref_round_to_half(f))
        << "f = " << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
  }
}

// ---- bfloat16 ----

TEST(BFloat16, ExactValuesConvertExactly) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(BFloat16(-2.5f).bits, 0xC020);
  EXPECT_EQ(BFloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0x4049)), 3.140625f);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0x7F7F)), 3.3895313892515355e38f);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(3.14159f)), 3.140625f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);       // 1 + 2^-8: tie, to even
  EXPECT_EQ(static_cast<float>(BFloat16(1.01171875f)), 1.015625f);  // 1 + 3*2^-8: tie, to even
  EXPECT_EQ(static_cast<float>(BFloat16(1.0040f)), 1.0078125f);     // just above the tie
  EXPECT_EQ(static_cast<float>(BFloat16(-1.00390625f)), -1.0f);
}

TEST(BFloat16, NaNAndInfinityArePreserved) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::bit_cast<float>(0x7F800001u)))));
  EXPECT_EQ(static_cast<float>(BFloat16(inf)), inf);
  EXPECT_EQ(static_cast<float>(BFloat16(-inf)), -inf);
}

TEST(BFloat16, RandomFloatsRoundLikeExactReference) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  for (int i = 0; i < 200000; ++i) {
    uint32_t mant = bits(gen) & 0x7FFFFF, sign = bits(gen) & 0x80000000u;
    uint32_t exp = 1 + bits(gen) % 250;  // normal floats whose bfloat16 stays finite
    float f = std::bit_cast<float>(sign | (exp << 23) | mant);
    double ulp = std::ldexp(1.0, std::ilogb(static_cast<double>(f)) - 7);
    double want = std::nearbyint(static_cast<double>(f) / ulp) * ulp;
    ASSERT_EQ(static_cast<double>(static_cast<float>(BFloat16(f))), want) << f;
  }
}

// ---- conversions through tensors ----

TEST(DTypeConversion, FloatTensorToFloat16RoundsLikeHalf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto t = kiln::from_vector<float>({1.0f, 0.1f, 65520.0f, -2.5f, 5.9604644775390625e-08f, nan});
  auto h = t.to(kiln::kFloat16);
  EXPECT_EQ(h.dtype(), kiln::kFloat16);
  auto v = h.to_vector<Half>();
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0].bits, 0x3C00);
  EXPECT_EQ(v[1].bits, 0x2E66);
  EXPECT_EQ(v[2].bits, 0x7C00);
  EXPECT_EQ(v[3].bits, 0xC100);
  EXPECT_EQ(v[4].bits, 0x0001);
  EXPECT_TRUE(std::isnan(static_cast<float>(v[5])));
}

TEST(DTypeConversion, FloatTensorToBFloat16RoundsLikeBFloat16) {
  auto t = kiln::from_vector<float>({3.14159f, 1.00390625f, 1.01171875f});
  auto v = kiln_test::to_floats(t.to(kiln::kBFloat16).to_vector<BFloat16>());
  EXPECT_EQ(v, (std::vector<float>{3.140625f, 1.0f, 1.015625f}));
}

TEST(DTypeConversion, HalfTensorWidensExactly) {
  std::vector<Half> hv = {Half::from_bits(0x0001), Half::from_bits(0x7BFF), Half::from_bits(0xC100),
                          Half::from_bits(0x3555)};
  auto t = kiln::from_vector(hv);
  EXPECT_EQ(t.dtype(), kiln::kFloat16);
  auto f = t.to(kiln::kFloat64).to_vector<double>();
  EXPECT_EQ(f, (std::vector<double>{5.9604644775390625e-08, 65504.0, -2.5, 0.333251953125}));
}

}  // namespace
