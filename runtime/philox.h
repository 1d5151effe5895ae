// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
// generator. Element i of a random tensor depends only on (seed, offset, i), so a CPU loop split
// across threads, a CUDA kernel, or a replay from a recorded (seed, offset) all produce the
// same stream.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace kiln {

struct Philox4x32 {
  static constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  static constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

  static std::array<uint32_t, 4> block(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
    uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
    uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
      uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
      uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    return {c0, c1, c2, c3};
  }
};

// Note [Random streams]
// A random op with attributes (seed, offset) fills element i from Philox blocks keyed by seed:
//  - uniform float32 and half types: block (offset + i / 4), word i % 4, keeping as many top
//    bits as the type has mantissa digits (24, 11 for float16, 8 for bfloat16) so that
//    rounding to the type can never reach 1.0;
//  - uniform float64: block (offset + i / 2), words 2*(i%2) and 2*(i%2)+1 for 53 bits;
//  - normal: block (offset + i / 2), Box-Muller of words 2*(i%2) and 2*(i%2)+1;
//  - dropout (any float dtype): element i of the row-major input is kept when its uniform
//    float32 draw u_i (the first rule, 24 bits) satisfies u_i >= p, and then becomes
//    x_i * (1 / (1 - p)); otherwise it is 0 (dropout_keeps below). A call uses
//    ceil(numel / 4) blocks.
// random_elements_per_block() gives the divisor; the generator advances `offset` by the
// number of blocks a call used. Every backend (the CPU kernel in
// runtime/kernels/factory_ops.cpp and random_ops.cpp, later the CUDA ones) follows this rule.
inline uint64_t random_elements_per_block(bool normal, bool is_double) {
  return normal || is_double ? 2 : 4;
}
// Uniform on [0, 1) with `digits` random bits.
inline float uniform_float(uint32_t bits, int digits = 24) {
  return std::ldexp(static_cast<float>(bits >> (32 - digits)), -digits);
}
inline double uniform_double(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);  // 53 bits
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}
inline double box_muller(uint32_t a, uint32_t b) {
  // u1 in (0, 1] so that log(u1) is finite.
  double u1 = (static_cast<double>(a) + 1.0) * (1.0 / 4294967296.0);
  double u2 = static_cast<double>(b) * (1.0 / 4294967296.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Whether dropout keeps element i of a call with attributes (seed, offset) and probability p.
inline bool dropout_keeps(uint64_t seed, uint64_t offset, uint64_t i, double p) {
  return static_cast<double>(uniform_float(Philox4x32::block(seed, offset + i / 4, 0)[i % 4])) >= p;
}

// The global generator behind manual_seed/rand/randn.
struct GeneratorState {
  uint64_t seed;
  uint64_t offset;
};
void manual_seed(uint64_t seed);
// Reserves `blocks` Philox blocks and returns the (seed, offset) to use for them.
GeneratorState reserve_random_blocks(uint64_t blocks);
// The generator's whole state, to replay a random computation (checkpoint's recompute).
GeneratorState get_rng_state();
void set_rng_state(GeneratorState state);

// Sets the global generator to `replay` for a scope and restores the previous state when the
// scope ends, also by an exception (checkpoint recompute, the debug repro's recorded run).
class RngStateGuard {
 public:
  explicit RngStateGuard(GeneratorState replay) : saved_(get_rng_state()) { set_rng_state(replay); }
  ~RngStateGuard() { set_rng_state(saved_); }
  RngStateGuard(const RngStateGuard&) = delete;
  RngStateGuard& operator=(const RngStateGuard&) = delete;

 private:
  GeneratorState saved_;
};

}  // namespace kiln
