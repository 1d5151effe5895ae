// CUDA workloads against the device-to-device copy bandwidth measured in the same process:
// eager pointwise, a fused pointwise chain, softmax and layer_norm forward and backward, and
// GELU forward + backward, each compiled one compared with Kiln eager CUDA on the same inputs.
// Times are CUDA events around each call on the current stream (Google Benchmark's manual time);
// a workload's figure is its median call. Sizes exceed the H100's 50 MB L2, so the figures are
// HBM bandwidth: 2^26 float32 elements for pointwise work, [65536, 1024] rows for the
// normalizations. Ideal bytes: inputs read once plus outputs written once.
//
//   build/bench/kiln_bench_cuda --benchmark_format=json > cuda.json
// Without a CUDA device every workload reports an error and the binary exits 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"
#include "kiln/runtime/cuda/cudnn_conv.h"

namespace {

using kiln::Tensor;

constexpr int64_t kPointwise = int64_t{1} << 26;
constexpr int64_t kRows = 65536, kCols = 1024;
const kiln::Device kGpu = kiln::Device::cuda(0);

// Milliseconds of one call of `work`, between two events on the current stream.
double time_ms(const std::function<void()>& work) {
  kiln::cuda::Event start(0, true), end(0, true);
  kiln::cuda::Stream s = kiln::cuda::current_stream(0);
  start.record(s);
  work();
  end.record(s);
  end.synchronize();
  return start.elapsed_ms(end);
}

double median_ms(const std::function<void()>& work, int reps = 15) {
  for (int i = 0; i < 3; ++i)
    work();  // first-use compiles and allocator warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i)
    t.push_back(time_ms(work));
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[static_cast<size_t>(reps / 2)];
}

// Read + written bytes per second of a float32 device-to-device copy of 2^26 elements.
double copy_bytes_per_s() {
  Tensor src = kiln::randn({kPointwise}, kiln::TensorOptions().device(kGpu));
  Tensor dst = kiln::empty({kPointwise}, kGpu);
  double ms = median_ms([&] { dst.copy_(src); });
  return 2.0 * static_cast<double>(kPointwise) * 4 / (ms * 1e-3);
}

bool require_device(benchmark::State& state) {
  if (kiln::cuda::device_count() > 0) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

// The median milliseconds of `work` under the benchmark's manual timer, after three warm-up calls.
double timed_median_ms(benchmark::State& state, const std::function<void()>& work) {
  for (int i = 0; i < 3; ++i)
    work();
  std::vector<double> ms;
  for (auto _ : state) {
    double t = time_ms(work);
    ms.push_back(t);
    state.SetIterationTime(t * 1e-3);
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

// Runs `work` under the benchmark's manual timer and adds GB/s, the copy's GB/s measured right
// after, and their ratio; with `eager`, also the median eager time and the speedup over it.
void run(benchmark::State& state, const std::function<void()>& work, double ideal_bytes,
         const std::function<void()>& eager = {}) {
  double median = timed_median_ms(state, work);
  double gbps = ideal_bytes / (median * 1e-3) * 1e-9;
  double copy = copy_bytes_per_s() * 1e-9;
  state.counters["GB/s"] = gbps;
  state.counters["copy_GB/s"] = copy;
  state.counters["copy_frac"] = gbps / copy;
  state.counters["median_us"] = median * 1e3;
  if (eager) {
    double eager_ms = median_ms(eager);
    state.counters["eager_us"] = eager_ms * 1e3;
    state.counters["speedup_vs_eager"] = eager_ms / median;
  }
}

Tensor gpu_randn(kiln::Shape sizes) {
  return kiln::randn(std::move(sizes), kiln::TensorOptions().device(kGpu));
}

void BM_CudaCopy(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor src = gpu_randn({kPointwise}), dst = kiln::empty({kPointwise}, kGpu);
  run(
      state, [&] { dst.copy_(src); }, 2.0 * kPointwise * 4);
}
BENCHMARK(BM_CudaCopy)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaEagerAdd(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kPointwise}), y = gpu_randn({kPointwise});
  run(
      state, [&] { benchmark::DoNotOptimize(x + y); }, 3.0 * kPointwise * 4);
}
BENCHMARK(BM_CudaEagerAdd)->UseManualTime()->Unit(benchmark::kMicrosecond);

// A bias-GELU-scale chain: five eager kernels, one fused kernel reading x and y once.
std::vector<Tensor> pointwise_chain(const std::vector<Tensor>& in) {
  return {kiln::gelu(in[0] * in[1] + 0.5, "tanh") * 2.0};
}

void BM_CudaFusedPointwise(benchmark::State& state) {
  if (!require_device(state)) return;
  std::vector<Tensor> in = {gpu_randn({kPointwise}), gpu_randn({kPointwise})};
  kiln::CompiledFunction f = kiln::compile(pointwise_chain);
  run(
      state, [&] { benchmark::DoNotOptimize(f(in)); }, 3.0 * kPointwise * 4,
      [&] { benchmark::DoNotOptimize(pointwise_chain(in)); });
  state.counters["kernels"] = static_cast<double>(f.stats().forward_kernels);
}
BENCHMARK(BM_CudaFusedPointwise)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaSoftmaxForward(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kRows, kCols});
  run(
      state, [&] { benchmark::DoNotOptimize(kiln::softmax(x, 1)); }, 2.0 * kRows * kCols * 4);
}
BENCHMARK(BM_CudaSoftmaxForward)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaLayerNormForward(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kRows, kCols}), w = gpu_randn({kCols}), b = gpu_randn({kCols});
  run(
      state, [&] { benchmark::DoNotOptimize(kiln::layer_norm(x, {kCols}, w, b)); },
      2.0 * kRows * kCols * 4);
}
BENCHMARK(BM_CudaLayerNormForward)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Rows longer than the row-cached entries hold (Note [Row-cached normalization entries]): the
// kernels generated from the row programs (Note [Row programs]).
constexpr int64_t kLongRows = 8192, kLongCols = 8192;

void BM_CudaSoftmaxLongRows(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kLongRows, kLongCols});
  run(
      state, [&] { benchmark::DoNotOptimize(kiln::softmax(x, 1)); },
      2.0 * kLongRows * kLongCols * 4);
}
BENCHMARK(BM_CudaSoftmaxLongRows)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaLayerNormLongRows(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kLongRows, kLongCols});
  run(
      state, [&] { benchmark::DoNotOptimize(kiln::layer_norm(x, {kLongCols})); },
      2.0 * kLongRows * kLongCols * 4);
}
BENCHMARK(BM_CudaLayerNormLongRows)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The backward alone: the forward runs once with its graph retained, and each timed call is
// autograd::grad from it. Compiled: compile() traced the backward with the forward, and grad()
// runs that compiled backward. Ideal bytes: x (or the saved output), the incoming gradient and
// the input's gradient, once each.
void run_backward(benchmark::State& state, const kiln::CompiledFunction::Fn& fn, bool compiled) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kRows, kCols}).requires_grad_();
  Tensor g = gpu_randn({kRows, kCols});
  kiln::CompiledFunction f = kiln::compile(fn);
  Tensor y = compiled ? f({x})[0] : fn({x})[0];
  Tensor y_eager = fn({x})[0];
  auto backward = [&](const Tensor& out) {
    return [&, out] { benchmark::DoNotOptimize(kiln::autograd::grad({out}, {x}, {g}, true)); };
  };
  run(state, backward(y), 3.0 * kRows * kCols * 4,
      compiled ? std::function<void()>(backward(y_eager)) : std::function<void()>());
  if (compiled) state.counters["kernels"] = static_cast<double>(f.stats().backward_kernels);
}

std::vector<Tensor> softmax_fn(const std::vector<Tensor>& in) {
  return {kiln::softmax(in[0], 1)};
}
std::vector<Tensor> layer_norm_fn(const std::vector<Tensor>& in) {
  return {kiln::layer_norm(in[0], {kCols})};
}

void BM_CudaSoftmaxBackwardEager(benchmark::State& state) {
  run_backward(state, softmax_fn, false);
}
BENCHMARK(BM_CudaSoftmaxBackwardEager)->UseManualTime()->Unit(benchmark::kMicrosecond);
void BM_CudaSoftmaxBackwardCompiled(benchmark::State& state) {
  run_backward(state, softmax_fn, true);
}
BENCHMARK(BM_CudaSoftmaxBackwardCompiled)->UseManualTime()->Unit(benchmark::kMicrosecond);
void BM_CudaLayerNormBackwardEager(benchmark::State& state) {
  run_backward(state, layer_norm_fn, false);
}
BENCHMARK(BM_CudaLayerNormBackwardEager)->UseManualTime()->Unit(benchmark::kMicrosecond);
void BM_CudaLayerNormBackwardCompiled(benchmark::State& state) {
  run_backward(state, layer_norm_fn, true);
}
BENCHMARK(BM_CudaLayerNormBackwardCompiled)->UseManualTime()->Unit(benchmark::kMicrosecond);

// GELU (tanh) forward and backward in one call: eager runs the forward kernel and the
// backward formula's kernels; compiled runs one fused forward and one fused backward kernel.
// Ideal bytes: x, y, the incoming gradient and dx.
std::vector<Tensor> gelu_fn(const std::vector<Tensor>& in) {
  return {kiln::gelu(in[0], "tanh")};
}

void BM_CudaGeluForwardBackward(benchmark::State& state) {
  if (!require_device(state)) return;
  Tensor x = gpu_randn({kPointwise}).requires_grad_();
  Tensor g = gpu_randn({kPointwise});
  kiln::CompiledFunction f = kiln::compile(gelu_fn);
  auto step = [&](const kiln::CompiledFunction::Fn& fn) {
    return [&, fn] {
      Tensor y = fn({x})[0];
      benchmark::DoNotOptimize(kiln::autograd::grad({y}, {x}, {g}));
    };
  };
  run(state, step([&](const std::vector<Tensor>& in) { return f(in); }), 4.0 * kPointwise * 4,
      step(gelu_fn));
  state.counters["kernels"] =
      static_cast<double>(f.stats().forward_kernels + f.stats().backward_kernels);
}
BENCHMARK(BM_CudaGeluForwardBackward)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Static against symbolic plans (docs/dynamic_shapes.md) on the same workload and inputs: arg 1
// compiles with dynamic=True and first calls the function at half the rows, so the timed calls
// run the one symbolic plan (its kernels take the sizes as arguments and size their grids per
// call); arg 0 compiles the static plan. Workloads (arg 0): 0 the bias-GELU-scale chain over
// [8192, 8192]; 1 softmax forward and 2 layer_norm forward + backward over [65536, 1024].
// Ideal bytes as in the workloads above.
void BM_CudaCompiledStaticVsSymbolic(benchmark::State& state) {
  if (!require_device(state)) return;
  const int64_t workload = state.range(0);
  const bool dynamic = state.range(1) != 0;
  const int64_t rows = workload == 0 ? 8192 : kRows, cols = workload == 0 ? 8192 : kCols;
  kiln::CompiledFunction::Fn fn = workload == 0   ? pointwise_chain
                                  : workload == 1 ? softmax_fn
                                                  : layer_norm_fn;
  kiln::CompiledFunction f = kiln::compile(fn, {.dynamic = dynamic});
  const bool backward = workload == 2;
  auto inputs = [&](int64_t n) {
    std::vector<Tensor> in{gpu_randn({n, cols})};
    if (workload == 0) in.push_back(gpu_randn({n, cols}));
    if (backward) in[0].requires_grad_();
    return in;
  };
  auto call = [&](const std::vector<Tensor>& in) {
    Tensor y = f(in)[0];
    if (backward) {
      benchmark::DoNotOptimize(kiln::autograd::grad({y}, {in[0]}, {kiln::ones_like(y)}));
    } else {
      benchmark::DoNotOptimize(y);
    }
  };
  if (dynamic) call(inputs(rows / 2));
  std::vector<Tensor> in = inputs(rows);
  double bytes = (workload == 0 ? 3.0 : backward ? 3.0 + 2.0 : 2.0) * rows * cols * 4;
  run(
      state, [&] { call(in); }, bytes);
  kiln::CompileStats st = f.stats();
  state.counters["compiles"] = static_cast<double>(st.compiles);
  state.counters["kernels"] = static_cast<double>(st.forward_kernels + st.backward_kernels);
}
BENCHMARK(BM_CudaCompiledStaticVsSymbolic)
    ->ArgNames({"workload", "dynamic"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Forward + backward of the ops issue 37 brought to CUDA, in milliseconds and TFLOP/s of the
// products they do (multiply-adds count 2): fused attention (the NVRTC flash kernels, Note [Flash
// attention]) at B4 h8 S1024 d64, and cuDNN convolutions at batch 32 on the shapes of the CPU
// benchmark (bench/nn_layers_vs_torch.py). float32; no TF32.
void run_forward_backward(benchmark::State& state, const std::function<Tensor()>& forward,
                          const std::vector<Tensor>& wrt, double flops) {
  if (!require_device(state)) return;
  Tensor probe = forward();
  Tensor g = gpu_randn(probe.sizes());
  auto step = [&] {
    Tensor y = forward();
    benchmark::DoNotOptimize(kiln::autograd::grad({y}, wrt, {g}));
  };
  double median = timed_median_ms(state, step);
  state.counters["median_ms"] = median;
  state.counters["TFLOP/s"] = flops / (median * 1e-3) * 1e-12;
}

void BM_CudaSdpaForwardBackward(benchmark::State& state) {
  if (!require_device(state)) return;
  const int64_t b = 4, h = 8, s = 1024, d = 64;
  bool causal = state.range(0) != 0;
  Tensor q = gpu_randn({b, h, s, d}).requires_grad_();
  Tensor k = gpu_randn({b, h, s, d}).requires_grad_();
  Tensor v = gpu_randn({b, h, s, d}).requires_grad_();
  // QK^T and PV forward, dQ, dK, dV, dP and the recomputed QK^T backward: 7 products of
  // 2 B H S S d each; causal does about half.
  double flops = 7.0 * 2 * b * h * s * s * d * (causal ? 0.5 : 1.0);
  run_forward_backward(
      state, [&] { return kiln::scaled_dot_product_attention(q, k, v, {}, 0.0, causal); },
      {q, k, v}, flops);
}
BENCHMARK(BM_CudaSdpaForwardBackward)
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Args: in channels, out channels, input size, kernel size, stride, and whether cuDNN times its
// algorithms (cuda::set_cudnn_benchmark, as torch.backends.cudnn.benchmark).
void BM_CudaConv2dForwardBackward(benchmark::State& state) {
  if (!require_device(state)) return;
  kiln::cuda::set_cudnn_benchmark(state.range(5) != 0);
  const int64_t n = 32, c = state.range(0), oc = state.range(1), hw = state.range(2);
  const int64_t kk = state.range(3), stride = state.range(4);
  Tensor x = gpu_randn({n, c, hw, hw}).requires_grad_();
  Tensor w = gpu_randn({oc, c, kk, kk}).requires_grad_();
  const int64_t out = (hw + 2 * (kk / 2) - kk) / stride + 1;
  // Forward, input gradient and weight gradient: one product each.
  double flops = 3.0 * 2 * n * oc * out * out * c * kk * kk;
  run_forward_backward(
      state, [&] { return kiln::conv2d(x, w, {}, {stride}, {kk / 2}); }, {x, w}, flops);
  kiln::cuda::set_cudnn_benchmark(false);
}
BENCHMARK(BM_CudaConv2dForwardBackward)
    ->ArgNames({"C", "OC", "HW", "k", "stride", "find"})
    ->Args({64, 64, 56, 3, 1, 0})
    ->Args({64, 128, 56, 3, 2, 0})
    ->Args({256, 256, 14, 1, 1, 0})
    ->Args({64, 64, 56, 3, 1, 1})
    ->Args({64, 128, 56, 3, 2, 1})
    ->Args({256, 256, 14, 1, 1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (kiln::cuda::device_count() > 0) {
    const auto& p = kiln::cuda::device_properties(0);
    benchmark::AddCustomContext("cuda_device", p.name);
    benchmark::AddCustomContext("cuda_sm", std::to_string(p.major * 10 + p.minor));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
