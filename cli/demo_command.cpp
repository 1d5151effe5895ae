// `kiln demo`: the README's main job. Trains the built-in models (frontend/models.h) on their
// synthetic data twice from the same initial parameters, once eagerly and once through
// kiln::compile, and shows the two side by side: losses (which must agree), time per step,
// kernels per step, compile time and where the IR dumps went.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "kiln/base/cpu_info.h"
#include "kiln/base/options.h"
#include "kiln/base/profiler.h"
#include "kiln/frontend/models.h"
#include "kiln/kiln.h"
#include "kiln/runtime/blas.h"

namespace kiln::cli {
namespace {

// Relative agreement the eager and compiled losses must keep at every step.
constexpr double kLossTolerance = 1e-5;

void demo_usage(std::ostream& os) {
  os << "usage: kiln demo [--model NAME|all] [--steps N] [--every N] [--lr X] [--short]\n"
        "                 [--debug-dir DIR] [--profile [FILE]]\n\n"
        "Trains each built-in model on synthetic data with SGD twice, from the same initial\n"
        "parameters: eagerly, and with the loss function compiled by kiln::compile (forward\n"
        "and backward). Prints a progress line every N steps with both losses, then per model\n"
        "the time per step, the speedup, the kernels one step launches, and the compile time.\n"
        "Exits with status 1 when the two losses ever differ by more than 1e-5 relative.\n\n"
        "options:\n"
        "  --model NAME      mlp, transformer or all (default all)\n"
        "  --steps N         training steps per model (default 40)\n"
        "  --every N         steps between progress lines (default 10)\n"
        "  --lr X            SGD learning rate (default 0.05)\n"
        "  --short           3 steps, a progress line each: a quick check (CI runs it)\n"
        "  --debug-dir DIR   where the compiled graphs' IR stages, kernels and repros go\n"
        "                    (default: $KILN_DEBUG_DIR, else ./kiln_debug)\n"
        "  --profile [FILE]  profile the whole demo and write a Chrome trace (Perfetto,\n"
        "                    chrome://tracing) to FILE (default kiln_demo_trace.json)\n"
        "  -h, --help        show this message\n";
}

struct DemoOptions {
  std::vector<std::string> models = models::model_names();
  int64_t steps = 40;
  int64_t every = 10;
  double lr = 0.05;
  std::string debug_dir;
  std::string profile_path;  // empty: no --profile
};

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One training step; returns the loss.
double train_step(const models::Model& m, const CompiledFunction::Fn& loss_fn, int64_t step,
                  double lr) {
  Tensor loss = loss_fn(m.batch(step))[0];
  loss.backward();
  models::sgd_step(m.params, lr);
  return loss.item<double>();
}

// Kernels one more step launches (its loss is not shown), counted by the profiler: its own
// session, or the events this step adds to a running one (--profile, KILN_PROFILE).
int64_t kernels_in_one_step(const models::Model& m, const CompiledFunction::Fn& loss_fn,
                            int64_t step, double lr, const std::string& label) {
  bool own = !profiler::is_enabled();
  if (own) profiler::start();
  size_t before = own ? 0 : profiler::snapshot().size();
  {
    profiler::RecordFunction scope(label);
    train_step(m, loss_fn, step, lr);
  }
  std::vector<profiler::Event> events = own ? profiler::stop() : profiler::snapshot();
  events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(before));
  return profiler::count(events, profiler::ScopeKind::Kernel);
}

struct ModelResult {
  bool agreed = true;
};

ModelResult run_model(const std::string& name, const DemoOptions& o) {
  models::Model eager = models::make_model(name, 0);
  models::Model compiled_model = models::make_model(name, 0);
  std::cout << fmt::format("== {}: {}\n", name, eager.summary);
  int64_t num_params = 0;
  for (const Tensor& p : eager.params)
    num_params += p.numel();
  std::cout << fmt::format("   {} parameter tensors, {} values; SGD lr {}, {} steps\n",
                           eager.params.size(), num_params, o.lr, o.steps);

  CompiledFunction compiled =
      compile(compiled_model.loss, {.debug_dir = o.debug_dir, .name = "demo_" + name});
  CompiledFunction::Fn compiled_fn = [&](const std::vector<Tensor>& in) { return compiled(in); };

  std::vector<double> eager_ms, compiled_ms;
  double compile_ms = 0.0, worst_rel = 0.0;
  ModelResult result;
  for (int64_t step = 0; step < o.steps; ++step) {
    Clock::time_point t0 = Clock::now();
    double le = train_step(eager, eager.loss, step, o.lr);
    eager_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    double lc = train_step(compiled_model, compiled_fn, step, o.lr);
    // The first compiled step includes tracing and compiling; it is reported on its own.
    (step == 0 ? compile_ms : compiled_ms.emplace_back()) = ms_since(t0);
    double rel = std::abs(lc - le) / std::max(std::abs(le), 1e-30);
    worst_rel = std::max(worst_rel, rel);
    if (!(rel <= kLossTolerance)) result.agreed = false;
    if ((step + 1) % o.every == 0 || step + 1 == o.steps || !result.agreed) {
      std::cout << fmt::format(
          "   step {:>4}/{}  loss eager {:.6f}  compiled {:.6f}  rel diff {:.1e}{}\n", step + 1,
          o.steps, le, lc, rel, result.agreed ? "" : "  <-- DISAGREE");
      std::cout.flush();
    }
    if (!result.agreed) break;
  }
  CompileStats st = compiled.stats();
  int64_t eager_kernels = kernels_in_one_step(eager, eager.loss, o.steps, o.lr, "eager step");
  int64_t compiled_kernels =
      kernels_in_one_step(compiled_model, compiled_fn, o.steps, o.lr, "compiled step");

  double e = median(eager_ms), c = median(compiled_ms);
  std::cout << fmt::format(
      "   losses agree: {} (largest relative difference {:.1e}, limit {:.0e})\n",
      result.agreed ? "yes" : "NO", worst_rel, kLossTolerance);
  if (!compiled_ms.empty()) {
    std::cout << fmt::format(
        "   time per step (median): eager {:.2f} ms, compiled {:.2f} ms: {:.2f}x speedup\n", e, c,
        c > 0 ? e / c : 0.0);
  }
  std::cout << fmt::format(
      "   kernels per step (forward+backward+SGD): eager {}, compiled {} (the compiled graphs "
      "launch {} forward, {} backward)\n",
      eager_kernels, compiled_kernels, st.forward_kernels, st.backward_kernels);
  std::cout << fmt::format(
      "   first compiled step (trace + passes + codegen + run): {:.0f} ms; {} bytes saved for "
      "backward; {} graph breaks\n",
      compile_ms, st.saved_bytes, st.fallback_ops);
  std::cout << "\n";
  return result;
}

}  // namespace

int demo_command(const std::vector<std::string>& args) {
  DemoOptions o;
  o.debug_dir = options().debug_dir.empty() ? "kiln_debug" : options().debug_dir;
  auto bad = [](const std::string& why) {
    std::cerr << "kiln demo: " << why << "\n\n";
    demo_usage(std::cerr);
    return 2;
  };
  auto number = [](const std::string& s, double* out) {
    try {
      size_t used = 0;
      *out = std::stod(s, &used);
      return used == s.size();
    } catch (const std::exception&) {
      return false;
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
    double v = 0;
    if (a == "-h" || a == "--help") {
      demo_usage(std::cout);
      return 0;
    } else if (a == "--short") {
      o.steps = 3;
      o.every = 1;
    } else if (a == "--model" && has_value) {
      std::string m = args[++i];
      std::vector<std::string> all = models::model_names();
      if (m == "all") {
        o.models = all;
      } else if (std::find(all.begin(), all.end(), m) != all.end()) {
        o.models = {m};
      } else {
        return bad("unknown model '" + m + "' (mlp, transformer or all)");
      }
    } else if ((a == "--steps" || a == "--every") && has_value) {
      if (!number(args[++i], &v) || v < 1 || v != std::floor(v))
        return bad(a + " needs a positive integer, got '" + args[i] + "'");
      (a == "--steps" ? o.steps : o.every) = static_cast<int64_t>(v);
    } else if (a == "--lr" && has_value) {
      if (!number(args[++i], &v) || !(v > 0)) return bad("--lr needs a positive number");
      o.lr = v;
    } else if (a == "--debug-dir" && has_value) {
      o.debug_dir = args[++i];
    } else if (a == "--profile") {
      o.profile_path = has_value ? args[++i] : "kiln_demo_trace.json";
    } else {
      return bad("unexpected argument '" + a + "'");
    }
  }

  std::cout << fmt::format("kiln demo: eager vs compiled training, {} threads, backend {}\n",
                           get_num_threads(), KILN_WITH_LLVM ? "LLVM (CPU)" : "interpreter");
  std::cout << fmt::format("CPU: {}\nBLAS: {}\n\n", cpu_model(), blas::library().describe());
  if (!o.profile_path.empty()) profiler::start();
  bool agreed = true;
  for (const std::string& name : o.models)
    agreed = run_model(name, o).agreed && agreed;
  if (!o.profile_path.empty()) {
    std::vector<profiler::Event> events = profiler::stop();
    profiler::write_chrome_trace(events, o.profile_path);
    std::cout << fmt::format("profile: {} scopes written to {} (open it in Perfetto)\n",
                             events.size(), o.profile_path);
  }
  std::cout << fmt::format(
      "IR dumps: {}/demo_<model>/signature_0/ (every stage, kernel IR, LLVM IR and assembly, "
      "and repros that `kiln run` replays)\n",
      std::filesystem::absolute(o.debug_dir).string());
  if (!agreed) {
    std::cerr << "kiln demo: the compiled losses disagree with eager\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
