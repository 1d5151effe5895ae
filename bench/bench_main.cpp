// Entry point of kiln_bench_eager (bench/eager_*.cpp) and kiln_bench_compiled
// (bench/compiled_*.cpp): every workload of the binary in one process, so
// that each is compared with the copy bandwidth measured in that same process.
//
//   build/bench/kiln_bench_eager --benchmark_format=json > eager.json
#include "bench_util.h"
#include "kiln/kiln.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("kiln_threads", std::to_string(kiln::get_num_threads()));
  benchmark::AddCustomContext("copy_GB/s",
                              std::to_string(kiln::bench::copy_bandwidth_bytes_per_s() * 1e-9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
