// The benchmark suite's workloads (Note [Benchmark suite]): each is a function of some inputs
// that one training-like step runs forward and backward, eagerly or compiled, plus what its
// ideal cost is measured against.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::bench {

// Note [Benchmark suite]
// Every workload reports the median time of one step (forward, backward, and an optimizer
// update where the workload is a training step), kernels per step (the profiler's Kernel
// scopes), and a figure against a reference measured in the same run:
//  - Memory: ideal bytes (each input read once, each output written once) per second, as a
//    fraction of a parallel memcpy timed between the workload's own iterations;
//  - Flops: the matrix products' flops per second, as a fraction of OpenBLAS sgemm running the
//    same products (shapes read from the traced joint graph) in the same process;
//  - Overhead: nanoseconds per op of the traced graph, for tiny tensors where bandwidth means
//    nothing.
// The compiled variant also reports its compile time, the profiler's "compile" scopes of a first
// call (trace, passes, partition, code generation; not the run): cold, with no kernel cache in
// memory or on disk, and warm, a new compiled function whose kernels are on disk, as a second
// process finds them.
enum class Bound { Memory, Flops, Overhead };

struct Instance {
  CompiledFunction::Fn fn;         // what compile() gets: inputs -> outputs
  std::vector<Tensor> inputs;      // the arguments of every step
  std::vector<Tensor> grad_seeds;  // per output: backward's seed (undefined: output 0 only,
                                   // a scalar); empty: no backward (an optimizer update)
  std::vector<Tensor> params;      // leaves that get .grad; reset after each step
  std::function<void()> update;    // after backward (an optimizer step), or empty
  int64_t ideal_bytes = 0;         // Bound::Memory: bytes per step
  // Set for an optimizer workload, which has no graph: the step, given whether it is the
  // compiled variant (fn, grad_seeds and update are then unused).
  std::function<std::function<void()>(bool compiled)> optimizer_step;
};

struct Workload {
  std::string name;  // the benchmark's name: BM_<name>/eager, BM_<name>/compiled
  std::string what;  // one line for the report
  Bound bound = Bound::Memory;
  std::function<Instance()> make;  // seeded: the same inputs on every call
};

// All workloads, in report order.
const std::vector<Workload>& workloads();

}  // namespace kiln::bench
