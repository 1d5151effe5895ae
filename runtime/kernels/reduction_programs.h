// sum, mean, prod, amax and amin over dims as kernel IR whose sizes and strides are size
// parameters (Note [Reduction programs] in reduction_programs.cpp): the description the eager
// CUDA reduction kernels are generated from, tested against the CPU kernels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

struct OpDef;

// One reduction program: the op's combine and dtypes, how many kept and reduced dims its layout
// has (after merging), and its mapping: `serial` reduces each output on one thread (CUDA's
// thread per output), otherwise the reduced elements form a vector loop (a block per output).
struct ReductionProgramSpec {
  kir::ReduceOp op = kir::ReduceOp::Sum;
  DType input = kFloat32;
  DType accumulate = kFloat32;
  DType output = kFloat32;
  bool mean = false;  // the result is divided by the count of reduced elements
  int kept_dims = 0;
  int reduced_dims = 0;
  bool serial = false;
  bool operator==(const ReductionProgramSpec&) const = default;
};

kir::Kernel reduction_program(const ReductionProgramSpec& spec);

// The spec's op and dtypes for a call of `op` (sum, mean, prod, amax or amin): sum, mean and
// prod of floats accumulate in float64, as the CPU merges its blocks in double; integers and
// bool in int64; amax and amin in the element's compute dtype.
ReductionProgramSpec reduction_spec(const OpDef& op, DType input, DType output);

// The size parameters of a launch, in the program's order: the kept dims' sizes, the output's
// strides, the input's strides along them, then the reduced dims' sizes, the input's strides
// along them, and the number of reduced elements.
struct ReductionLayout {
  std::vector<int64_t> kept_sizes, out_strides, in_kept_strides;
  std::vector<int64_t> reduced_sizes, in_reduced_strides;
  std::vector<int64_t> sizes() const;
  int64_t kept_numel() const;
  int64_t reduced_numel() const;
};

}  // namespace kiln
