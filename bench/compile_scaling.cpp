// How compile time grows with graph size (issue 34, item 13): cold LLVM compiles of a chain of
// N pointwise ops on a parameter (so the capture includes its backward), for N from 1k to 16k,
// with the time of each compile phase from the profiler. The chain mixes a multiply, an add and
// a tanh so that fusion, CSE and simplification have real work.
//
//   kiln_bench_compile_scaling [N ...]     (default: 1000 2000 4000 8000 10000 16000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "kiln/base/profiler.h"
#include "kiln/kiln.h"

namespace {

using kiln::Tensor;

kiln::CompiledFunction::Fn chain(int64_t n, const Tensor& w, bool with_tanh) {
  return [n, w, with_tanh](const std::vector<Tensor>& in) {
    Tensor y = in[0] * w;
    for (int64_t i = 1; i < n; ++i) {
      switch (i % (with_tanh ? 3 : 2)) {
        case 0:
          y = y * 1.0001;
          break;
        case 1:
          y = y + 0.5;
          break;
        default:
          y = kiln::tanh(y);
      }
    }
    return std::vector<Tensor>{y.sum()};
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  bool with_tanh = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: %s [--tanh] [N ...]\n"
          "Cold LLVM compile time of a chain of N pointwise ops on a parameter (forward and\n"
          "backward), per phase. The chain alternates a multiply and an add; --tanh adds a tanh\n"
          "every third op. Default sizes: 1000 2000 4000 8000 10000 16000.\n",
          argv[0]);
      return 0;
    }
    if (a == "--tanh") {
      with_tanh = true;
      continue;
    }
    sizes.push_back(std::atoll(a.c_str()));
    if (sizes.back() < 1) {
      std::fprintf(stderr, "%s: a size must be a positive integer, got '%s'\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1000, 2000, 4000, 8000, 10000, 16000};
  // Options are read when the library loads, so a fresh cache folder (every kernel compiled,
  // none loaded from disk or memory) needs a fresh process: each size runs in a child.
  if (std::getenv("KILN_COMPILE_SCALING_CHILD") == nullptr) {
    std::printf("chain: %s; each size in a fresh process with an empty kernel cache\n",
                with_tanh ? "mul, add, tanh" : "mul, add");
    std::printf("%8s %10s %12s  phases (ms)\n", "ops", "total s", "us per op");
    std::fflush(stdout);
    for (int64_t n : sizes) {
      auto cache = std::filesystem::temp_directory_path() /
                   ("kiln_compile_scaling_" + std::to_string(::getpid()) + "_" + std::to_string(n));
      pid_t child = fork();
      if (child == 0) {
        setenv("KILN_COMPILE_SCALING_CHILD", "1", 1);
        setenv("KILN_CACHE_DIR", cache.c_str(), 1);
        std::string size = std::to_string(n);
        std::vector<char*> args{argv[0]};
        if (with_tanh) args.push_back(const_cast<char*>("--tanh"));
        args.push_back(size.data());
        args.push_back(nullptr);
        execv("/proc/self/exe", args.data());
        std::perror("execv");
        _exit(1);
      }
      int status = 0;
      waitpid(child, &status, 0);
      std::filesystem::remove_all(cache);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "the run for %lld ops failed\n", static_cast<long long>(n));
        return 1;
      }
    }
    return 0;
  }
  for (int64_t n : sizes) {
    kiln::manual_seed(0);
    Tensor w = kiln::randn({64}).requires_grad_();
    Tensor x = kiln::randn({64});
    kiln::CompiledFunction cf =
        kiln::compile(chain(n, w, with_tanh), {.backend = kiln::Backend::LLVM});
    std::fprintf(stderr, "compiling a chain of %lld ops...\n", static_cast<long long>(n));
    kiln::profiler::start();
    auto t0 = std::chrono::steady_clock::now();
    cf({x});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<kiln::profiler::Event> events = kiln::profiler::stop();
    // Phases, with every kernel's code generation summed into one figure.
    std::map<std::string, double> phase_ms;
    for (const auto& e : events) {
      if (e.kind != kiln::profiler::ScopeKind::Compile) continue;
      std::string name = e.name.rfind("codegen ", 0) == 0 ? "codegen (all kernels)" : e.name;
      phase_ms[name] += static_cast<double>(e.duration_ns) / 1e6;
    }
    std::string phases;
    for (const auto& [name, ms] : phase_ms)
      phases += "  " + name + "=" + std::to_string(static_cast<int64_t>(ms));
    std::printf("%8lld %10.2f %12.1f %s\n", static_cast<long long>(n), s, s * 1e6 / n,
                phases.c_str());
    std::fflush(stdout);
  }
  return 0;
}
