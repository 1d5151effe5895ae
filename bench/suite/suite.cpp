// The suite's runner: registers BM_<workload>/eager and BM_<workload>/compiled for every
// workload and measures them as Note [Benchmark suite] (workload.h) says.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "../bench_util.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/runtime/blas.h"
#include "suite.h"
#include "workload.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln::bench {
namespace {

using Fn = CompiledFunction::Fn;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One step: forward, backward from the seeds, then the update (or the gradients reset).
void run_step(const Fn& f, const Instance& in) {
  std::vector<Tensor> out = f(in.inputs);
  if (!in.grad_seeds.empty()) {
    if (!in.grad_seeds[0].defined()) {
      out.at(0).backward();
    } else {
      autograd::backward(out, in.grad_seeds);
    }
  }
  if (in.update) {
    in.update();
  } else {
    for (const Tensor& p : in.params)
      p.mutable_grad() = Tensor();
  }
}

// The time one step spends compiling: its top-level "compile" profiler scopes (trace, passes,
// partition, code generation), not the run or the first touch of new memory.
double compile_seconds(const Fn& f, const Instance& in) {
  profiler::start();
  run_step(f, in);
  double s = 0;
  for (const profiler::Event& e : profiler::stop())
    if (e.kind == profiler::ScopeKind::Compile && e.name == "compile") s += e.duration_ns * 1e-9;
  return s;
}

double time_step(const Fn& f, const Instance& in) {
  auto start = Clock::now();
  run_step(f, in);
  return seconds_since(start);
}

// A matrix product of the traced graph: `batch` products of [m, k] x [k, n].
struct Gemm {
  int64_t batch, m, n, k;
};

std::vector<Gemm> gemms_of(const Instance& in) {
  std::vector<Tensor> inputs = in.inputs;
  auto plan = compile_detail::capture_plan(in.fn, inputs, compile_detail::Signature::of(inputs));
  std::vector<Gemm> out;
  const ir::Graph& g = plan->joint ? *plan->joint : *plan->forward;
  for (const ir::Node* node : g.nodes()) {
    if (node->kind() != ir::NodeKind::Op) continue;
    const std::string& op = node->op()->name;
    if (op != "mm" && op != "bmm" && op != "matmul") continue;
    const Shape& a = node->inputs()[0]->type().sizes;
    const Shape& b = node->inputs()[1]->type().sizes;
    if (a.size() < 2 || b.size() < 2) continue;
    int64_t batch = 1;
    for (int64_t s : node->outputs()[0]->type().sizes)
      batch *= s;
    int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
    out.push_back({m * n == 0 ? 0 : batch / (m * n), m, n, k});
  }
  return out;
}

double flops_of(const std::vector<Gemm>& gemms) {
  double f = 0;
  for (const Gemm& g : gemms)
    f += 2.0 * static_cast<double>(g.batch * g.m * g.n * g.k);
  return f;
}

// OpenBLAS sgemm (the library Kiln loaded, Note [BLAS loading]) on the same products, median of
// `reps` runs of the whole list.
double sgemm_seconds(const std::vector<Gemm>& gemms, int reps) {
  std::vector<std::vector<float>> a, b, c;
  for (const Gemm& g : gemms) {
    a.emplace_back(static_cast<size_t>(g.m * g.k), 0.5f);
    b.emplace_back(static_cast<size_t>(g.k * g.n), 0.25f);
    c.emplace_back(static_cast<size_t>(g.m * g.n), 0.0f);
  }
  auto once = [&] {
    for (size_t i = 0; i < gemms.size(); ++i) {
      const Gemm& g = gemms[i];
      for (int64_t r = 0; r < g.batch; ++r)
        kiln::blas::sgemm(false, false, g.m, g.n, g.k, 1.0f, a[i].data(), g.k, b[i].data(), g.n,
                          0.0f, c[i].data(), g.n);
    }
  };
  once();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    once();
    t.push_back(seconds_since(start));
  }
  return median(t);
}

// Forgets every compiled kernel (`disk` too: the suite's own cache folder, suite.h), so that the
// next compile generates code again.
void drop_kernel_caches(bool disk) {
#if KILN_WITH_LLVM
  codegen::llvm_clear_memory_cache();
  if (disk && !own_cache_dir().empty())
    std::filesystem::remove_all(std::filesystem::path(own_cache_dir()) / "llvm");
#else
  (void)disk;
#endif
}

void run_workload(benchmark::State& state, const Workload& w, bool compiled) {
  Instance in = w.make();
  Fn f = in.fn;
  std::optional<CompiledFunction> cf;
  double cold = 0, warm = 0;
  if (in.optimizer_step) {
    // The step is the optimizer's own; its compile is the first step's "compile" scope.
    if (compiled) drop_kernel_caches(/*disk=*/true);
    std::function<void()> step = in.optimizer_step(compiled);
    in.fn = [step](const std::vector<Tensor>&) {
      step();
      return std::vector<Tensor>{};
    };
    f = in.fn;
    if (compiled) {
      cold = compile_seconds(f, in);
      drop_kernel_caches(/*disk=*/false);
      warm = compile_seconds(
          [again = in.optimizer_step(true)](const std::vector<Tensor>&) {
            again();
            return std::vector<Tensor>{};
          },
          in);
    }
  } else if (compiled) {
    drop_kernel_caches(/*disk=*/true);
    cf.emplace(compile(in.fn, {.name = w.name}));
    cold = compile_seconds([&](const std::vector<Tensor>& x) { return (*cf)(x); }, in);
    drop_kernel_caches(/*disk=*/false);
    CompiledFunction again = compile(in.fn, {.name = w.name + "_warm"});
    warm = compile_seconds([&](const std::vector<Tensor>& x) { return again(x); }, in);
    f = [&](const std::vector<Tensor>& x) { return (*cf)(x); };
  }
  run_step(f, in);  // warm-up: allocator, thread pool, caches
  profiler::start();
  run_step(f, in);
  int64_t kernels = profiler::count(profiler::stop(), profiler::ScopeKind::Kernel);

  std::optional<InterleavedCopy> copy;
  if (w.bound == Bound::Memory) copy.emplace();
  std::vector<double> seconds;
  for (auto _ : state) {
    seconds.push_back(time_step(f, in));
    if (copy) {
      state.PauseTiming();
      copy->run_timed();
      state.ResumeTiming();
    }
  }
  double step = median(seconds);
  state.counters["median_ms"] = step * 1e3;
  state.counters["kernels"] = static_cast<double>(kernels);
  switch (w.bound) {
    case Bound::Memory:
      copy->report(state, seconds, in.ideal_bytes);
      break;
    case Bound::Flops: {
      std::vector<Gemm> gemms = gemms_of(in);
      double flops = flops_of(gemms);
      double sgemm = sgemm_seconds(gemms, smoke_mode() ? 1 : 5);
      state.counters["GFLOP/s"] = flops / step * 1e-9;
      state.counters["sgemm_GFLOP/s"] = flops / sgemm * 1e-9;
      state.counters["sgemm_frac"] = sgemm / step;
      break;
    }
    case Bound::Overhead: {
      std::vector<Tensor> inputs = in.inputs;
      auto plan =
          compile_detail::capture_plan(in.fn, inputs, compile_detail::Signature::of(inputs));
      int64_t ops = static_cast<int64_t>(plan->joint->num_nodes() - plan->joint->inputs().size());
      state.counters["ns/op"] = step * 1e9 / static_cast<double>(ops);
      state.counters["graph_ops"] = static_cast<double>(ops);
      break;
    }
  }
  if (compiled) {
    state.counters["compile_cold_ms"] = cold * 1e3;
    state.counters["compile_warm_ms"] = warm * 1e3;
    state.SetLabel(std::string(backend_name(compile_detail::resolve_backend(Backend::Auto))));
  } else {
    state.SetLabel("eager");
  }
}

}  // namespace

void register_suite() {
  for (const Workload& w : workloads()) {
    for (bool compiled : {false, true}) {
      auto* b = benchmark::RegisterBenchmark(
          ("BM_" + w.name + (compiled ? "/compiled" : "/eager")).c_str(),
          [&w, compiled](benchmark::State& s) { run_workload(s, w, compiled); });
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      if (smoke_mode()) b->Iterations(1);
    }
  }
}

}  // namespace kiln::bench
