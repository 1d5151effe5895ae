// KILN_FLOAT_LOOP_CLONES: marks a float32 loop that is compiled once more for AVX-512.
#pragma once

// Note [Multiversioned float loops]
// The library is compiled for x86-64-v3 (AVX2, 8 float lanes) where the build host has it.
// Memory-bound loops don't care, but the float32 transcendental math (Note [Vectorized exp and
// tanh]) is compute bound there: with 2 threads, gelu(erf) and logsumexp ran at 0.5-0.6 of the
// copy bandwidth. The few loops that evaluate that math over contiguous float32 data are
// therefore also compiled for x86-64-v4 (AVX-512, 16 lanes, about 1.8x the throughput), and the
// clone is picked at load time by the CPU (GCC's target_clones, an ifunc), so one binary still
// runs on CPUs without AVX-512. The clones compute the same operations in the same order (the
// same FMA contractions, element by element), so results do not depend on which one runs.
// Other loops stay single-version to keep the code size down.
// Not under ThreadSanitizer: it instruments the ifunc resolver, which the dynamic loader runs
// before the sanitizer's runtime is up, and the program crashes before main.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define KILN_FLOAT_LOOP_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define KILN_FLOAT_LOOP_CLONES
#endif
