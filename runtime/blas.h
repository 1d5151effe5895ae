// The BLAS that matrix products run on: OpenBLAS, loaded at first use with its kernels chosen
// for this CPU (Note [BLAS loading]).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::blas {

// Note [BLAS loading]
// OpenBLAS picks its kernels (its "core") in its library constructor, from OPENBLAS_CORETYPE or
// from its own CPU detection. A build that does not know the CPU's model falls back to a
// generic core: Debian's 0.3.21 takes an Emerald Rapids Xeon (family 6, model 207) for a
// Prescott, and its SSE3 sgemm runs at a fifth of the speed of its AVX-512 (Cooperlake) one.
// Setting the variable from inside a process whose OpenBLAS has already loaded changes
// nothing, so libkiln does not link OpenBLAS: it loads it with dlopen at the first matrix
// product, after choosing the core from the CPU's features (core_for_this_cpu) when the
// environment names none. A core set in the environment, by the user or by the machine, always
// wins. Programs linked with libkiln must not link OpenBLAS themselves (it would load, and
// pick its core, before main); they call sgemm below.
struct Library {
  std::string path;    // the file dlopen loaded
  std::string core;    // openblas_get_corename(): the kernels in use ("Cooperlake")
  std::string config;  // openblas_get_config()
  // Where the core came from: "chosen by Kiln from the CPU's features", "OPENBLAS_CORETYPE in
  // the environment", or "OpenBLAS's own detection".
  std::string source;
  std::string describe() const;  // "OpenBLAS 0.3.21, core Cooperlake (chosen by ...)"
};

// Loads the library on first use; throws kiln::Error naming what it tried when it cannot.
const Library& library();

// The OpenBLAS core for this CPU's features, or "" to leave OpenBLAS's own detection: AVX-512
// with BF16 -> Cooperlake, AVX-512 -> SkylakeX, AVX2 with FMA -> Haswell, on Intel CPUs. AMD
// CPUs are left to OpenBLAS, which knows its Zen cores by family.
std::string core_for_this_cpu();

// True for the cores that use no more than SSE3 (what a misdetected modern CPU falls back to).
bool is_generic_core(const std::string& core);

// Row-major C = alpha op(A) op(B) + beta C, as cblas_sgemm / cblas_dgemm.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc);

// OpenBLAS's thread count for one product, or 0 where the library has no thread control.
int threads();

// Makes OpenBLAS run each call on the calling thread for the scope's lifetime, so that several
// small products can run side by side on Kiln's own threads (a batched product whose matrices
// are too small for OpenBLAS to split well). Scopes may overlap across threads.
class SingleThreadedScope {
 public:
  SingleThreadedScope();
  ~SingleThreadedScope();
  SingleThreadedScope(const SingleThreadedScope&) = delete;
  SingleThreadedScope& operator=(const SingleThreadedScope&) = delete;
};

}  // namespace kiln::blas
