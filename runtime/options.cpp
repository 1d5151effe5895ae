#include "kiln/runtime/options.h"

#include <cstdlib>
#include <thread>

#include "kiln/runtime/error.h"

namespace kiln {
namespace {

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

Options read_options() {
  Options o;
  o.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string threads = env_or("KILN_NUM_THREADS", "");
  if (!threads.empty()) {
    char* end = nullptr;
    long n = std::strtol(threads.c_str(), &end, 10);
    KILN_CHECK(end != threads.c_str() && *end == '\0' && n >= 1,
               "KILN_NUM_THREADS must be a positive integer, got '{}'", threads);
    o.num_threads = static_cast<int>(n);
  }
  o.logs = env_or("KILN_LOGS", "");
  o.debug_dir = env_or("KILN_DEBUG_DIR", "");
  std::string home = env_or("HOME", "/tmp");
  o.cache_dir = env_or("KILN_CACHE_DIR", home + "/.cache/kiln");
  o.backend = env_or("KILN_BACKEND", "auto");
  return o;
}

}  // namespace

const Options& options() {
  static const Options o = read_options();
  return o;
}

}  // namespace kiln
