#include "kiln/runtime/blas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "kiln/base/error.h"

namespace kiln::blas {
namespace {

using SgemmFn = decltype(&cblas_sgemm);
using DgemmFn = decltype(&cblas_dgemm);
using NameFn = char* (*)();
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

struct Loaded {
  Library info;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SetThreadsFn set_threads = nullptr;  // null where the library has no thread control
  GetThreadsFn get_threads = nullptr;
};

// Where the core comes from, decided while the library loads: OpenBLAS's constructor reads
// OPENBLAS_CORETYPE at dlopen (Note [BLAS loading]), and setenv is only safe before the program
// starts threads that may call getenv.
const char* choose_core_at_load() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "OPENBLAS_CORETYPE in the environment";
  std::string core = core_for_this_cpu();
  if (core.empty()) return "OpenBLAS's own detection";
  setenv("OPENBLAS_CORETYPE", core.c_str(), 0);
  return "chosen by Kiln from the CPU's features";
}
const char* const kCoreSource = choose_core_at_load();

Loaded load() {
  Loaded l;
  l.info.source = kCoreSource;
  // The pthread build first: Debian's alternatives point libopenblas.so.0 at it.
  const std::vector<std::string> names = {"libopenblas.so.0", "libopenblas.so"};
  void* handle = nullptr;
  std::string errors;
  for (const std::string& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      l.info.path = name;
      break;
    }
    const char* e = dlerror();
    errors += "\n  " + name + ": " + (e != nullptr ? e : "not found");
  }
  KILN_CHECK(handle != nullptr,
             "matmul: cannot load OpenBLAS (install libopenblas0-pthread); tried:{}", errors);
  l.sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "cblas_sgemm"));
  l.dgemm = reinterpret_cast<DgemmFn>(dlsym(handle, "cblas_dgemm"));
  KILN_CHECK(l.sgemm != nullptr && l.dgemm != nullptr, "matmul: {} has no cblas_sgemm/cblas_dgemm",
             l.info.path);
  l.set_threads = reinterpret_cast<SetThreadsFn>(dlsym(handle, "openblas_set_num_threads"));
  l.get_threads = reinterpret_cast<GetThreadsFn>(dlsym(handle, "openblas_get_num_threads"));
  auto text = [&](const char* symbol) {
    auto fn = reinterpret_cast<NameFn>(dlsym(handle, symbol));
    const char* s = fn != nullptr ? fn() : nullptr;
    return std::string(s != nullptr ? s : "unknown");
  };
  l.info.core = text("openblas_get_corename");
  l.info.config = text("openblas_get_config");
  // dladdr names the soname's link; the file behind it (Debian's alternatives) says which build.
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(l.sgemm), &where) != 0 && where.dli_fname != nullptr) {
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(where.dli_fname, ec);
    l.info.path = ec ? std::string(where.dli_fname) : real.string();
  }
  return l;
}

const Loaded& loaded() {
  // A load that throws leaves the flag unset: the next call tries again and throws again.
  static std::once_flag once;
  static Loaded l;
  std::call_once(once, [] { l = load(); });
  return l;
}

CBLAS_TRANSPOSE trans(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

}  // namespace

std::string Library::describe() const {
  std::string version = config.substr(0, config.find(' ', config.find(' ') + 1));
  return fmt::format("{} core {} ({}), {}", version, core, source, path);
}

const Library& library() {
  return loaded().info;
}

std::string core_for_this_cpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_is("intel")) return "";
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                __builtin_cpu_supports("avx512cd");
  if (avx512) return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

bool is_generic_core(const std::string& core) {
  for (const char* g :
       {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Coppermine",
        "Northwood", "Banias", "Opteron", "Athlon", "Generic", "unknown"})
    if (core == g) return true;
  return false;
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  loaded().sgemm(CblasRowMajor, trans(trans_a), trans(trans_b), static_cast<blasint>(m),
                 static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                 static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                 static_cast<blasint>(ldc));
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc) {
  loaded().dgemm(CblasRowMajor, trans(trans_a), trans(trans_b), static_cast<blasint>(m),
                 static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                 static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                 static_cast<blasint>(ldc));
}

// The first scope to open sets OpenBLAS to one thread and the last to close restores it, so
// that overlapping scopes on several threads never leave it at one.
namespace {
std::mutex single_threaded_mutex;
int single_threaded_depth = 0;
int saved_threads = 0;
}  // namespace

int threads() {
  const Loaded& l = loaded();
  return l.get_threads != nullptr ? l.get_threads() : 0;
}

SingleThreadedScope::SingleThreadedScope() {
  const Loaded& l = loaded();
  if (l.set_threads == nullptr || l.get_threads == nullptr) return;
  std::lock_guard<std::mutex> lock(single_threaded_mutex);
  if (single_threaded_depth++ == 0) {
    saved_threads = l.get_threads();
    if (saved_threads > 1) l.set_threads(1);
  }
}

SingleThreadedScope::~SingleThreadedScope() {
  const Loaded& l = loaded();
  if (l.set_threads == nullptr || l.get_threads == nullptr) return;
  std::lock_guard<std::mutex> lock(single_threaded_mutex);
  if (--single_threaded_depth == 0 && saved_threads > 1) l.set_threads(saved_threads);
}

}  // namespace kiln::blas
