// Eager matmul against OpenBLAS called directly, on the same shapes and the same data: the cost
// of going through kiln (dispatch, output allocation, operand layout handling) on top of the
// sgemm itself. Each kiln row reports GFLOP/s and "vs_sgemm", its time over the direct call's
// (as many direct calls as kiln made, measured right after in the same process); the target
// is <= 1.15.
#include <algorithm>
#include <vector>

#include "bench_util.h"
#include "kiln/kiln.h"

#include "kiln/runtime/blas.h"

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
  kiln::blas::sgemm(false, s.b_transposed, s.m, s.n, s.k, 1.0f, a.data_ptr<float>(), s.k,
                    b.data_ptr<float>(), s.b_transposed ? s.k : s.n, 0.0f, c, s.n);
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
