// The benchmark suite binary (kiln_bench_suite), which `kiln bench` runs.
//
//   build/bench/kiln_bench_suite [--smoke] [Google Benchmark flags]
//
// --smoke runs every workload for one iteration (CI's check that each still runs). The suite
// compiles into a cache folder of its own, made fresh per run (KILN_CACHE_DIR, set before the
// library reads its options by running the binary again), so cold compiles are cold and the
// user's cache is left alone.
#pragma once

#include <string>

namespace kiln::bench {

bool smoke_mode();
// The suite's own cache folder, which it may empty; empty when the environment named another
// (then cold compiles read whatever that cache holds).
const std::string& own_cache_dir();
void register_suite();

}  // namespace kiln::bench
