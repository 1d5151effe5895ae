// Entry point of kiln_bench_suite (suite.h).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../bench_util.h"
#include "kiln/base/cpu_info.h"
#include "kiln/runtime/blas.h"
#include "suite.h"
#include "workload.h"

namespace kiln::bench {
namespace {
bool g_smoke = false;
std::string g_own_cache;
constexpr const char* kOwnCache = "KILN_BENCH_OWN_CACHE";
constexpr const char* kPrefix = "kiln_bench_cache_";
}  // namespace

bool smoke_mode() {
  return g_smoke;
}
const std::string& own_cache_dir() {
  return g_own_cache;
}

}  // namespace kiln::bench

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  // Options are read when the library loads, so the suite's own cache folder is set in the
  // environment of a second run of this binary.
  if (std::getenv(kiln::bench::kOwnCache) == nullptr) {
    fs::path cache = fs::temp_directory_path() / (kiln::bench::kPrefix + std::to_string(getpid()));
    setenv("KILN_CACHE_DIR", cache.c_str(), 1);
    setenv(kiln::bench::kOwnCache, cache.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("kiln_bench_suite: re-running itself with its own cache folder");
    return 1;
  }
  // Only a folder this binary named is ever deleted: never one a caller's environment names.
  {
    const char* own = std::getenv(kiln::bench::kOwnCache);
    const char* cache = std::getenv("KILN_CACHE_DIR");
    if (cache != nullptr && std::strcmp(own, cache) == 0 &&
        fs::path(own).filename().string().rfind(kiln::bench::kPrefix, 0) == 0)
      kiln::bench::g_own_cache = own;
  }
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      kiln::bench::g_smoke = true;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: kiln_bench_suite [--smoke] [Google Benchmark flags]\n\n"
          "The ten workloads of the benchmark suite (bench/suite/workloads.cpp), each eagerly and\n"
          "compiled. --smoke: one iteration each. `kiln bench` runs this and prints a table.\n\n");
      benchmark::PrintDefaultHelp();
      return 0;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::AddCustomContext("kiln_threads", std::to_string(kiln::get_num_threads()));
  benchmark::AddCustomContext("kiln_smoke", kiln::bench::smoke_mode() ? "1" : "0");
  // Figures name their CPU and BLAS kernels: the machines change between runs.
  benchmark::AddCustomContext("cpu_model", kiln::cpu_model());
  benchmark::AddCustomContext("blas", kiln::blas::library().describe());
  for (const kiln::bench::Workload& w : kiln::bench::workloads())
    benchmark::AddCustomContext("what:" + w.name, w.what);
  kiln::bench::register_suite();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!kiln::bench::own_cache_dir().empty()) fs::remove_all(kiln::bench::own_cache_dir());
  return 0;
}
