// Autograd overhead on tiny tensors, where the math is free and only bookkeeping remains: Node
// creation, saved tensors, edges, the engine's queue and gradient accumulation. Each figure is
// ns per op (forward plus its share of backward), next to the same ops without autograd.
#include "bench_util.h"
#include "kiln/kiln.h"

namespace {

constexpr int kChain = 8;  // ops per iteration: mul, add, tanh, ... on 16 elements

kiln::Tensor chain(const kiln::Tensor& x, const kiln::Tensor& w) {
  kiln::Tensor h = x;
  for (int i = 0; i < kChain / 2; ++i) {
    h = (h * w).tanh();
  }
  return h;
}

// The ops alone (no input requires grad): the baseline the autograd figures add to.
void BM_Chain16NoGrad(benchmark::State& state) {
  kiln::Tensor x = kiln::rand({16}), w = kiln::rand({16});
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    kiln::Tensor y = chain(x, w);
    benchmark::DoNotOptimize(y.raw_data());
  }
  kiln::bench::report_ns_per_op(state, timer, kChain);
}
BENCHMARK(BM_Chain16NoGrad);

// Forward that records the graph, without backward.
void BM_Chain16Forward(benchmark::State& state) {
  kiln::Tensor x = kiln::rand({16}), w = kiln::rand({16}, kiln::requires_grad());
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    kiln::Tensor y = chain(x, w);
    benchmark::DoNotOptimize(y.raw_data());
  }
  kiln::bench::report_ns_per_op(state, timer, kChain);
}
BENCHMARK(BM_Chain16Forward);

// Forward plus backward (sum, engine run, accumulation into w.grad).
void BM_Chain16ForwardBackward(benchmark::State& state) {
  kiln::Tensor x = kiln::rand({16}), w = kiln::rand({16}, kiln::requires_grad());
  kiln::bench::LoopTimer timer;
  for (auto _ : state) {
    chain(x, w).sum().backward();
  }
  benchmark::DoNotOptimize(w.grad().raw_data());
  kiln::bench::report_ns_per_op(state, timer, kChain);
}
BENCHMARK(BM_Chain16ForwardBackward);

}  // namespace
