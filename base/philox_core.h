// Philox4x32-10 and the draws of Note [Random streams] (philox.h), in C that both the host
// compiler and NVRTC compile: the CPU kernels use it through philox.h, and the CUDA kernels get
// its text (codegen/cuda/eager_random.cpp, through the philox_core_text.h CMake writes), so the
// two devices run one definition of every stream. Keep it plain C: no std::, no templates, and no
// at-sign (CMake's configure_file pastes the text).
#ifndef KILN_PHILOX_CORE_H
#define KILN_PHILOX_CORE_H

#ifndef KILN_PHILOX_FN
#define KILN_PHILOX_FN static inline
#endif
#ifndef __CUDACC_RTC__
#include <math.h>
#endif

struct KilnPhiloxBlock {
  unsigned int w[4];
};

// The block of counter (counter_lo, counter_hi) under `key`: ten rounds of the Philox4x32
// multiply-xor with the Weyl key schedule.
KILN_PHILOX_FN struct KilnPhiloxBlock kiln_philox_block(unsigned long long key,
                                                        unsigned long long counter_lo,
                                                        unsigned long long counter_hi) {
  unsigned int c0 = (unsigned int)counter_lo, c1 = (unsigned int)(counter_lo >> 32);
  unsigned int c2 = (unsigned int)counter_hi, c3 = (unsigned int)(counter_hi >> 32);
  unsigned int k0 = (unsigned int)key, k1 = (unsigned int)(key >> 32);
  for (int round = 0; round < 10; ++round) {
    unsigned long long p0 = 0xD2511F53ull * c0;
    unsigned long long p1 = 0xCD9E8D57ull * c2;
    unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
    unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  struct KilnPhiloxBlock b = {{c0, c1, c2, c3}};
  return b;
}

// Uniform on [0, 1) from the top `digits` (at most 24) bits: an exact scaling by 2^-digits.
KILN_PHILOX_FN float kiln_uniform_float(unsigned int bits, int digits) {
  return (float)(bits >> (32 - digits)) * (1.0f / (float)(1u << digits));
}

// Uniform on [0, 1) with 53 random bits.
KILN_PHILOX_FN double kiln_uniform_double(unsigned int hi, unsigned int lo) {
  unsigned long long bits = ((unsigned long long)hi << 21) ^ (lo >> 11);
  return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// A standard normal from two words. u1 is in (0, 1], so log(u1) is finite. log, cos and sqrt
// are each device's double libm: the CUDA ones are within an ulp or two of glibc's, so normal
// draws agree to double rounding, not bitwise, while the uniform draws are bitwise equal.
KILN_PHILOX_FN double kiln_box_muller(unsigned int a, unsigned int b) {
  double u1 = ((double)a + 1.0) * (1.0 / 4294967296.0);
  double u2 = (double)b * (1.0 / 4294967296.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
