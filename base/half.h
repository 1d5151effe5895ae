// 16-bit floating point storage types. They are stored as 16 bits and every computation on
// them happens in float: conversions round to nearest even, and NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>
#include <ostream>

namespace kiln {

namespace detail {

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflows to inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): let the FPU do the rounding by adding a magic number that
    // places the half's lowest mantissa bit at the float's lowest bit.
    float magic = std::bit_cast<float>(0x3f000000u);  // 0.5
    float r = std::bit_cast<float>(abs) + magic;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(r) - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
  uint32_t rounding_bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding_bias) >> 16);
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return detail::half_bits_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT: implicit on purpose
  operator float() const { return detail::bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

inline std::ostream& operator<<(std::ostream& os, Half h) {
  return os << static_cast<float>(h);
}
inline std::ostream& operator<<(std::ostream& os, BFloat16 h) {
  return os << static_cast<float>(h);
}

}  // namespace kiln
