// The intra-op thread pool. parallel_for splits a range into at most num_threads() chunks of at
// least `grain` elements; the calling thread runs the first chunk itself. Calls from inside a
// parallel region run serially, so kernels can nest without oversubscribing the machine.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln {

int get_num_threads();
// Sets the intra-op thread count (at least 1). Defaults to $KILN_NUM_THREADS or the core count.
void set_num_threads(int n);
bool in_parallel_region();
// Ends the workers' spin-wait (Note [Spin before sleeping]) so that they sleep until the next
// job; called before handing the cores to another thread pool, such as OpenBLAS's.
void park_workers();

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln
