// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
// generator. Element i of a random tensor depends only on (seed, offset, i), so a CPU loop split
// across threads, a CUDA kernel, or a replay from a recorded (seed, offset) all produce the
// same stream.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "kiln/base/philox_core.h"

namespace kiln {

struct Philox4x32 {
  static std::array<uint32_t, 4> block(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
    KilnPhiloxBlock b = kiln_philox_block(key, counter_lo, counter_hi);
    return {b.w[0], b.w[1], b.w[2], b.w[3]};
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
// runtime/kernels/factory_ops.cpp and random_ops.cpp, the CUDA ones in
// runtime/cuda/cuda_random_ops.cpp) follows this rule, through philox_core.h's functions.
inline uint64_t random_elements_per_block(bool normal, bool is_double) {
  return normal || is_double ? 2 : 4;
}
// Uniform on [0, 1) with `digits` random bits.
inline float uniform_float(uint32_t bits, int digits = 24) {
  return kiln_uniform_float(bits, digits);
}
inline double uniform_double(uint32_t hi, uint32_t lo) {
  return kiln_uniform_double(hi, lo);
}
inline double box_muller(uint32_t a, uint32_t b) {
  return kiln_box_muller(a, b);
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
