// Eager normalization and reduction figures against copy bandwidth: fused softmax,
// log_softmax and layer_norm over [8192, 1024] rows, the softmax and layer_norm backwards, full
// reductions of 2^24 floats (amax, var, logsumexp), and sum over each dim of [8192, 1024]. Ideal
// bytes: inputs read once plus outputs written once.
#include <functional>

#include "bench_util.h"
#include "kiln/kiln.h"

namespace {

constexpr int64_t kRows = 8192, kCols = 1024;
constexpr int64_t kLarge = int64_t{1} << 24;

template <class F>
void run_rows(benchmark::State& state, F&& op, int64_t extra_bytes) {
  kiln::Tensor x = kiln::randn({kRows, kCols});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor y = op(x);
        benchmark::DoNotOptimize(y.raw_data());
      },
      2 * kRows * kCols * 4 + extra_bytes);
}

void BM_Softmax(benchmark::State& state) {
  run_rows(
      state, [](const kiln::Tensor& x) { return kiln::softmax(x, 1); }, 0);
}
BENCHMARK(BM_Softmax)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LogSoftmax(benchmark::State& state) {
  run_rows(
      state, [](const kiln::Tensor& x) { return kiln::log_softmax(x, 1); }, 0);
}
BENCHMARK(BM_LogSoftmax)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LayerNorm(benchmark::State& state) {
  kiln::Tensor w = kiln::rand({kCols}), b = kiln::rand({kCols});
  run_rows(
      state, [&](const kiln::Tensor& x) { return kiln::layer_norm(x, {kCols}, w, b); },
      2 * kCols * 4);
}
BENCHMARK(BM_LayerNorm)->UseRealTime()->Unit(benchmark::kMillisecond);

// The backward alone, from a forward whose graph is kept: arg 0 runs autograd::grad, whose
// plain backward is the fused op (Note [Fused normalization backward]); arg 1 the same
// gradients from the Tensor-op formula of nn_derivatives.cpp, written out here (what the
// engine ran before the fused ops; create_graph records it). Ideal bytes: the incoming gradient
// and x (or y) read once, dx written once.
void run_backward(
    benchmark::State& state, const std::function<kiln::Tensor(const kiln::Tensor&)>& forward,
    const std::vector<kiln::Tensor>& wrt,
    const std::function<std::vector<kiln::Tensor>(const kiln::Tensor& x, const kiln::Tensor& y,
                                                  const kiln::Tensor& g)>& formula) {
  kiln::Tensor x = kiln::randn({kRows, kCols}).requires_grad_();
  kiln::Tensor g = kiln::randn({kRows, kCols});
  kiln::Tensor y = forward(x);
  std::vector<kiln::Tensor> inputs{x};
  inputs.insert(inputs.end(), wrt.begin(), wrt.end());
  bool by_formula = state.range(0) != 0;
  kiln::bench::run_against_copy(
      state,
      [&] {
        if (by_formula) {
          kiln::NoGradGuard no_grad;
          auto r = formula(x.detach(), y.detach(), g);
          benchmark::DoNotOptimize(r[0].raw_data());
        } else {
          auto r = kiln::autograd::grad({y}, inputs, {g}, /*retain_graph=*/true);
          benchmark::DoNotOptimize(r[0].raw_data());
        }
      },
      3 * kRows * kCols * 4);
  state.SetLabel(by_formula ? "formula" : "fused op");
}

void BM_SoftmaxBackward(benchmark::State& state) {
  run_backward(
      state, [](const kiln::Tensor& x) { return kiln::softmax(x, 1); }, {},
      [](const kiln::Tensor&, const kiln::Tensor& y, const kiln::Tensor& g) {
        return std::vector<kiln::Tensor>{y * (g - kiln::sum(g * y, {1}, true))};
      });
}
BENCHMARK(BM_SoftmaxBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LayerNormBackward(benchmark::State& state) {
  kiln::Tensor w = kiln::rand({kCols}).requires_grad_(), b = kiln::rand({kCols}).requires_grad_();
  run_backward(
      state, [&](const kiln::Tensor& x) { return kiln::layer_norm(x, {kCols}, w, b); }, {w, b},
      [&](const kiln::Tensor& x, const kiln::Tensor&, const kiln::Tensor& g) {
        kiln::Tensor centered = x - kiln::mean(x, {1}, true);
        kiln::Tensor rstd = kiln::rsqrt(kiln::mean(centered * centered, {1}, true) + 1e-5);
        kiln::Tensor xhat = centered * rstd;
        kiln::Tensor gx = g * w.detach();
        kiln::Tensor dx =
            rstd * (gx - kiln::mean(gx, {1}, true) - xhat * kiln::mean(gx * xhat, {1}, true));
        return std::vector<kiln::Tensor>{dx, kiln::sum(g * xhat, {0}), kiln::sum(g, {0})};
      });
}
BENCHMARK(BM_LayerNormBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

template <class F>
void run_full(benchmark::State& state, F&& op) {
  kiln::Tensor a = kiln::randn({kLarge});
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor s = op(a);
        benchmark::DoNotOptimize(s.raw_data());
      },
      kLarge * 4 + 4);
}

void BM_AmaxAll(benchmark::State& state) {
  run_full(state, [](const kiln::Tensor& a) { return kiln::amax(a); });
}
BENCHMARK(BM_AmaxAll)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_VarAll(benchmark::State& state) {
  run_full(state, [](const kiln::Tensor& a) { return kiln::var(a); });
}
BENCHMARK(BM_VarAll)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LogSumExpAll(benchmark::State& state) {
  run_full(state, [](const kiln::Tensor& a) { return kiln::logsumexp(a); });
}
BENCHMARK(BM_LogSumExpAll)->UseRealTime()->Unit(benchmark::kMillisecond);

// sum over dim 0 (column form, output [1024]) and dim 1 (row form, output [8192]).
void BM_SumDim(benchmark::State& state) {
  int64_t dim = state.range(0);
  kiln::Tensor x = kiln::randn({kRows, kCols});
  int64_t out = dim == 0 ? kCols : kRows;
  kiln::bench::run_against_copy(
      state,
      [&] {
        kiln::Tensor s = kiln::sum(x, {dim});
        benchmark::DoNotOptimize(s.raw_data());
      },
      (kRows * kCols + out) * 4);
}
BENCHMARK(BM_SumDim)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
