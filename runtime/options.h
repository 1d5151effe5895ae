// Note [Options]
// Every environment variable Kiln reads is parsed here, once, into one struct (DESIGN.md
// principle 8). Code reads options(), never getenv.
#pragma once

#include <string>

namespace kiln {

struct Options {
  int num_threads = 1;    // KILN_NUM_THREADS, default: the machine's core count
  std::string logs;       // KILN_LOGS: comma-separated topics
  std::string debug_dir;  // KILN_DEBUG_DIR
  std::string cache_dir;  // KILN_CACHE_DIR, default ~/.cache/kiln
  std::string backend;    // KILN_BACKEND
};

const Options& options();

}  // namespace kiln
