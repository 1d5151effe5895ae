// Compiled (LLVM backend) workloads of the LLVM issue against a parallel copy timed between
// their iterations (bench_util.h's InterleavedCopy; medians of both) and against Kiln eager: the
// GELU-tanh composite on 2^24 floats (forward, and forward+backward), a composite LayerNorm over
// [8192, 1024] (forward+backward) and a composite softmax over [8192, 1024] (forward). Ideal bytes:
// inputs read once plus outputs written once. BM_LlvmCompileGelu times code generation of the GELU
// forward and backward kernels: cold (no caches) and warm from the disk cache, as a new process
// loads them. BM_RowProgramLlvm compiles the row programs of softmax and layer_norm (Note [Row
// programs]) for [8192, 1024] and times them beside the hand-written CPU kernels eager runs.
#include <chrono>

#include "bench_util.h"
#include "kiln/codegen/llvm/llvm_backend.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kiln.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"

namespace {

using kiln::Tensor;
constexpr int64_t kLarge = int64_t{1} << 24;
constexpr int64_t kRows = 8192, kCols = 1024;

Tensor gelu_tanh(const Tensor& x) {
  Tensor inner = (x + x * x * x * 0.044715) * 0.7978845608028654;
  return x * 0.5 * (inner.tanh() + 1.0);
}
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor mu = kiln::mean(x, {1}, true);
  Tensor d = x - mu;
  Tensor var = kiln::mean(d * d, {1}, true);
  return d * (var + 1e-5).rsqrt() * w + b;
}
Tensor softmax(const Tensor& x) {
  Tensor e = (x - kiln::amax(x, {1}, true)).exp();
  return e / kiln::sum(e, {1}, true);
}

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// One call: forward, plus backward of sum(out * g) when `grads` is set.
double run_once(const Fn& f, const std::vector<Tensor>& inputs, const Tensor* grad) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> ins;
  for (const Tensor& t : inputs)
    ins.push_back(grad ? t.detach().requires_grad_() : t);
  Tensor y = f(ins)[0];
  if (grad) y.backward(*grad);
  benchmark::DoNotOptimize(y.raw_data());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median of a few eager calls: the denominator of the speedup counter.
double eager_seconds(const Fn& f, const std::vector<Tensor>& inputs, const Tensor* grad) {
  std::vector<double> t;
  for (int i = 0; i < 5; ++i)
    t.push_back(run_once(f, inputs, grad));
  std::sort(t.begin(), t.end());
  return t[2];
}

void run(benchmark::State& state, const Fn& eager, const std::vector<Tensor>& inputs,
         const Tensor* grad, int64_t ideal_bytes) {
  bool compiled = state.range(0) != 0;
  kiln::CompiledFunction cf = kiln::compile(eager, {.backend = kiln::Backend::LLVM});
  Fn f = compiled ? Fn([&](const std::vector<Tensor>& in) { return cf(in); }) : eager;
  run_once(f, inputs, grad);  // compile (and warm up)
  kiln::bench::InterleavedCopy copy;
  std::vector<double> seconds;
  for (auto _ : state) {
    seconds.push_back(run_once(f, inputs, grad));
    state.PauseTiming();
    copy.run_timed();
    state.ResumeTiming();
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  double per_iter = sorted[sorted.size() / 2];
  copy.report(state, std::move(seconds), ideal_bytes);
  if (compiled) {
    state.counters["speedup_vs_eager"] = eager_seconds(eager, inputs, grad) / per_iter;
    state.counters["kernels"] =
        static_cast<double>(cf.stats().forward_kernels + (grad ? cf.stats().backward_kernels : 0));
  }
  state.SetLabel(compiled ? "llvm" : "eager");
}

void BM_GeluForward(benchmark::State& state) {
  Tensor x = kiln::randn({kLarge});
  run(
      state, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu_tanh(in[0])}; },
      {x}, nullptr, 2 * kLarge * 4);
}
BENCHMARK(BM_GeluForward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// sin and cos fused into one loop (a rotary embedding's shape): reads x and a, writes y. Compiled,
// the loop runs the polynomial vectorized (Note [Reduced-range LLVM loops]).
void BM_SinCosForward(benchmark::State& state) {
  Tensor x = kiln::randn({kLarge}) * 3.0, a = kiln::randn({kLarge});
  run(
      state,
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{kiln::sin(in[0]) * in[1] + kiln::cos(in[0])};
      },
      {x, a}, nullptr, 3 * kLarge * 4);
}
BENCHMARK(BM_SinCosForward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// Forward+backward: reads x, writes y; backward reads x and dy, writes dx (x is read twice, since
// the two passes are separate calls; the ideal counts it once).
void BM_GeluForwardBackward(benchmark::State& state) {
  Tensor x = kiln::randn({kLarge}), g = kiln::randn({kLarge});
  run(
      state, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu_tanh(in[0])}; },
      {x}, &g, 4 * kLarge * 4);
}
BENCHMARK(BM_GeluForwardBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_LayerNormForwardBackward(benchmark::State& state) {
  Tensor x = kiln::randn({kRows, kCols}), g = kiln::randn({kRows, kCols});
  Tensor w = kiln::rand({kCols}), b = kiln::rand({kCols});
  // Inputs x, dy (w, b) read once; outputs y, dx (dw, db) written once.
  run(
      state,
      [w, b](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{layer_norm(in[0], w, b)};
      },
      {x}, &g, 4 * kRows * kCols * 4 + 4 * kCols * 4);
}
BENCHMARK(BM_LayerNormForwardBackward)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_SoftmaxForward(benchmark::State& state) {
  Tensor x = kiln::randn({kRows, kCols});
  run(
      state, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0])}; }, {x},
      nullptr, 2 * kRows * kCols * 4);
}
BENCHMARK(BM_SoftmaxForward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The GELU forward and backward kernels, lowered (not compiled) from the traced function.
std::vector<std::shared_ptr<const kiln::kir::Kernel>> gelu_kernels() {
  Tensor x = kiln::randn({kLarge}).requires_grad_();
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu_tanh(in[0])}; };
  auto plan = kiln::compile_detail::capture_plan(fn, {x}, kiln::compile_detail::Signature::of({x}),
                                                 true, false, kiln::Backend::Interpreter);
  std::vector<std::shared_ptr<const kiln::kir::Kernel>> ks;
  for (const auto& g : {plan->forward, plan->backward})
    for (const kiln::ir::Node* n : g->nodes())
      if (n->kind() == kiln::ir::NodeKind::FusionGroup && n->fusion_group().kernel)
        ks.push_back(n->fusion_group().kernel);
  return ks;
}

// Arg 0: cold, no caches (IR emission, O3, object code, linking). Arg 1: warm from the disk cache
// with the memory cache off, as a new process finds the objects (read, check, link).
void BM_LlvmCompileGelu(benchmark::State& state) {
  auto kernels = gelu_kernels();
  kiln::codegen::LlvmCompileOptions o;
  o.memory_cache = false;
  o.disk_cache = state.range(0) != 0;
  for (const auto& k : kernels)
    kiln::codegen::llvm_compile(*k, o);  // the warm case's files exist from here on
  for (auto _ : state)
    for (const auto& k : kernels)
      benchmark::DoNotOptimize(kiln::codegen::llvm_compile(*k, o).get());
  state.counters["kernels"] = static_cast<double>(kernels.size());
  state.SetLabel(state.range(0) ? "warm (disk cache)" : "cold");
}
BENCHMARK(BM_LlvmCompileGelu)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(10);

// Args (op, sized): op 0 softmax, 1 layer_norm (no affine), 2 softmax_backward, 3
// layer_norm_backward (with a weight); sized 0: the op's row program specialized to [8192,
// 1024], 1: compiled once with its sizes as parameters (Note [Size parameters]). Compiled by
// LLVM and timed against the hand-written CPU kernel of the eager op on the same inputs: the
// measurement that decides which one eager runs (Note [Row programs]). Reports both rates
// (bytes of every input and output row) and llvm_over_eager (above 1: the hand-written kernel
// is faster).
void BM_RowProgramLlvm(benchmark::State& state) {
  static const char* kNames[] = {"softmax", "layer_norm", "softmax_backward",
                                 "layer_norm_backward"};
  int which = static_cast<int>(state.range(0));
  const kiln::OpDef& op = kiln::get_op(kNames[which]);
  bool ln = which % 2 == 1;
  kiln::SoftmaxAttrs sa{1};
  kiln::LayerNormAttrs la{{kCols}, 1e-5, which == 3, false};
  const void* attrs = ln ? static_cast<const void*>(&la) : &sa;
  std::vector<Tensor> inputs{kiln::randn({kRows, kCols})};
  if (which == 2) inputs.push_back(kiln::softmax(kiln::randn({kRows, kCols}), 1));
  if (which == 3) inputs.insert(inputs.end(), {kiln::randn({kRows, kCols}), kiln::randn({kCols})});
  std::vector<Tensor> outputs{kiln::empty({kRows, kCols})};
  if (which == 3) outputs.push_back(kiln::empty({kRows, kCols}));
  kiln::RowCall call = kiln::row_call(op, inputs, outputs, attrs);
  std::vector<int64_t> extents;
  for (const Tensor& t : call.buffers)
    extents.push_back(t.numel());
  bool sized = state.range(1) != 0;
  kiln::kir::Kernel k = kiln::row_program(op, kiln::kFloat32, attrs);
  if (!sized) k = kiln::kir::specialize_sizes(k, call.sizes, extents);
  std::vector<int64_t> sizes = sized ? call.sizes : std::vector<int64_t>{};
  auto compiled = kiln::codegen::llvm_compile(k);
  std::vector<kiln::kir::BoundBuffer> bound = kiln::kir::bind_arguments(k, call.buffers, "bench");
  auto eager = [&] { return kiln::call_op(op, inputs, attrs); };
  auto time = [](const std::function<void()>& f) {
    auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> llvm_s, eager_s;
  for (auto _ : state) {
    llvm_s.push_back(time([&] { kiln::codegen::llvm_run(*compiled, k, bound, sizes); }));
    state.PauseTiming();
    eager_s.push_back(time([&] { benchmark::DoNotOptimize(eager()[0].raw_data()); }));
    state.ResumeTiming();
  }
  std::sort(llvm_s.begin(), llvm_s.end());
  std::sort(eager_s.begin(), eager_s.end());
  double l = llvm_s[llvm_s.size() / 2], e = eager_s[eager_s.size() / 2];
  double rows = static_cast<double>(call.buffers.size() - (which == 3 ? 1 : 0));
  double bytes = rows * kRows * kCols * 4;
  state.counters["llvm_GB/s"] = bytes / l * 1e-9;
  state.counters["eager_GB/s"] = bytes / e * 1e-9;
  state.counters["llvm_over_eager"] = l / e;
  state.SetLabel(std::string(kNames[which]) + (sized ? ", sizes at launch" : ""));
}
BENCHMARK(BM_RowProgramLlvm)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({3, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
