// The BLAS Kiln loads (Note [BLAS loading]): which kernels it runs on this CPU, and that its
// products match a straightforward float64 loop for every transpose combination.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "kiln/base/cpu_info.h"
#include "kiln/runtime/blas.h"

namespace kiln_test {
namespace {

namespace blas = kiln::blas;

// A generic (SSE3) core on a CPU with AVX2 is the 5x slowdown of Note [BLAS loading].
TEST(Blas, NoGenericKernelOnACpuWithAvx2) {
  const blas::Library& lib = blas::library();
  std::cout << "CPU: " << kiln::cpu_model() << "\nBLAS: " << lib.describe() << "\n";
  EXPECT_FALSE(lib.core.empty());
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  bool set_by_kiln = lib.source.find("Kiln") != std::string::npos;
  if (env != nullptr && !set_by_kiln) {
    // The environment chose (the machine sets it where old kernels misbehave): Kiln obeys.
    EXPECT_NE(lib.source.find("environment"), std::string::npos) << lib.source;
    if (blas::is_generic_core(env)) return;
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_FALSE(blas::is_generic_core(lib.core))
        << "OpenBLAS runs its generic " << lib.core << " kernels on a CPU with AVX2 ("
        << kiln::cpu_model() << "): " << lib.describe();
  }
#endif
}

TEST(Blas, CoreChoiceFollowsTheCpuFeatures) {
  std::string core = blas::core_for_this_cpu();
  EXPECT_FALSE(blas::is_generic_core(core));
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_TRUE(core == "SkylakeX" || core == "Cooperlake") << core;
  }
  if (__builtin_cpu_is("amd")) {
    EXPECT_EQ(core, "") << "AMD cores are OpenBLAS's to detect";
  }
#endif
  EXPECT_TRUE(blas::is_generic_core("Prescott"));
  EXPECT_FALSE(blas::is_generic_core("Haswell"));
}

template <class T>
void expect_gemm_matches_a_loop(bool ta, bool tb) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {3, 5, 7},
                         {17, 33, 65},
                         {64, 48, 130},
                         {129, 1, 257}}) {
    // Stored row-major as op(A) is [m, k]: A itself is [k, m] when transposed.
    int64_t lda = ta ? m + 3 : k + 2, ldb = tb ? k + 1 : n + 4, ldc = n + 5;
    std::vector<T> a(static_cast<size_t>((ta ? k : m) * lda)),
        b(static_cast<size_t>((tb ? n : k) * ldb)), c(static_cast<size_t>(m * ldc), T(9));
    for (T& v : a)
      v = static_cast<T>(dist(rng));
    for (T& v : b)
      v = static_cast<T>(dist(rng));
    auto at = [&](int64_t i, int64_t p) {
      return a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)];
    };
    auto bt = [&](int64_t p, int64_t j) {
      return b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)];
    };
    std::vector<T> c0 = c;
    const T alpha = T(1.5), beta = T(0.5);
    if constexpr (std::is_same_v<T, float>) {
      blas::sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    } else {
      blas::dgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    }
    double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          ref += static_cast<double>(at(i, p)) * static_cast<double>(bt(p, j));
          mag += std::abs(static_cast<double>(at(i, p)) * static_cast<double>(bt(p, j)));
        }
        ref = alpha * ref + beta * static_cast<double>(c0[static_cast<size_t>(i * ldc + j)]);
        ASSERT_NEAR(c[static_cast<size_t>(i * ldc + j)], ref, tol * (4 + alpha * mag))
            << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb << " at " << i << "," << j;
      }
  }
}

TEST(Blas, SgemmMatchesAFloat64Loop) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      expect_gemm_matches_a_loop<float>(ta, tb);
}

TEST(Blas, DgemmMatchesALoop) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      expect_gemm_matches_a_loop<double>(ta, tb);
}

// Note [Batched small products]: scopes that overlap on several threads set OpenBLAS to one
// thread while any is open and give the count back when the last closes; products inside a
// scope still match the loop.
TEST(Blas, SingleThreadedScopesRestoreTheThreadCountWhenTheLastCloses) {
  int before = kiln::blas::threads();
  {
    kiln::blas::SingleThreadedScope outer;
    if (before > 0) {
      EXPECT_EQ(kiln::blas::threads(), 1);
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([] {
        kiln::blas::SingleThreadedScope inner;
        expect_gemm_matches_a_loop<float>(false, true);
      });
    for (std::thread& t : threads)
      t.join();
    if (before > 0) {
      EXPECT_EQ(kiln::blas::threads(), 1);
    }
  }
  EXPECT_EQ(kiln::blas::threads(), before);
}

}  // namespace
}  // namespace kiln_test
