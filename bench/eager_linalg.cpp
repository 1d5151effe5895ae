// Eager matmul against OpenBLAS called directly, on the same shapes and the same data: the cost
// of going through kiln (dispatch, output allocation, operand layout handling) on top of the
// sgemm itself. Each kiln row reports GFLOP/s and "vs_sgemm", its time over the direct call's
// (as many direct calls as kiln made, measured right after in the same process); the target
// is <= 1.15.
#include <algorithm>
#include <vector>

#include "bench_util.h"
#include "kiln/kiln.h"

#if __has_include(<cblas.h>)
#include <cblas.h>
#else
// The bench target does not see OpenBLAS's include folder: declare the one routine it calls.
extern "C" {
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc);
}
#endif

namespace {

struct MatmulShape {
  int64_t m, k, n;
  bool b_transposed;  // b is given as w [n, k] and used as w.t(), as linear does
};

const MatmulShape kShapes[] = {
    {256, 1024, 4096, false},
    {1024, 1024, 1024, false},
    {8192, 1024, 1024, false},
    {1024, 1024, 4096, true},
};

struct Operands {
  kiln::Tensor a, b;  // b is [k, n] (possibly a transposed view)
};

Operands make_operands(const MatmulShape& s) {
  kiln::manual_seed(1);
  kiln::Tensor a = kiln::rand({s.m, s.k});
  kiln::Tensor b = s.b_transposed ? kiln::rand({s.n, s.k}).t() : kiln::rand({s.k, s.n});
  return {a, b};
}

void direct_sgemm(const MatmulShape& s, const kiln::Tensor& a, const kiln::Tensor& b, float* c) {
  auto m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, s.b_transposed ? CblasTrans : CblasNoTrans, m, n, k,
              1.0f, a.data_ptr<float>(), k, b.data_ptr<float>(), s.b_transposed ? k : n, 0.0f, c,
              n);
}

// Mean seconds of `iters` direct sgemm calls into a preallocated output (after a warm-up).
double sgemm_seconds(const MatmulShape& s, const Operands& ops, int64_t iters) {
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  direct_sgemm(s, ops.a, ops.b, c.data());
  kiln::bench::LoopTimer t;
  for (int64_t i = 0; i < iters; ++i)
    direct_sgemm(s, ops.a, ops.b, c.data());
  return t.seconds() / static_cast<double>(iters);
}

double flops(const MatmulShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

void BM_MatmulSgemm(benchmark::State& state) {
  const MatmulShape& s = kShapes[state.range(0)];
  Operands ops = make_operands(s);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    direct_sgemm(s, ops.a, ops.b, c.data());
    benchmark::DoNotOptimize(c.data());
  }
  double seconds = timer.seconds();
  state.counters["GFLOP/s"] = flops(s) * static_cast<double>(state.iterations()) / seconds * 1e-9;
}

void BM_MatmulKiln(benchmark::State& state) {
  const MatmulShape& s = kShapes[state.range(0)];
  Operands ops = make_operands(s);
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    kiln::Tensor c = kiln::matmul(ops.a, ops.b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  double seconds = timer.seconds() / static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = flops(s) / seconds * 1e-9;
  state.counters["vs_sgemm"] =
      seconds / sgemm_seconds(s, ops, std::max<int64_t>(3, state.iterations()));
}

void shape_args(benchmark::internal::Benchmark* b) {
  b->ArgName("shape");
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(kShapes)); ++i)
    b->Arg(i);
}

// shape 0: [256,1024]x[1024,4096]; 1: [1024,1024]x[1024,1024]; 2: [8192,1024]x[1024,1024];
// 3: [1024,1024] @ w[4096,1024].t().
BENCHMARK(BM_MatmulSgemm)->Apply(shape_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulKiln)->Apply(shape_args)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
