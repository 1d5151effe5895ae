// Shape-generic CUDA kernels for eager pointwise ops (Note [Eager CUDA pointwise kernels] in
// eager_pointwise.cpp). Building the source needs neither NVRTC nor a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::cuda {

inline constexpr int kEagerMaxDims = 8;
inline constexpr int kEagerMaxOperands = 4;  // the output and up to three inputs (where)

// The argument after the buffers: the iteration space (the output's shape, with dims merged
// where every operand allows) and each operand's strides in elements, the output's first. The
// kernel declares the same struct as KilnEagerIndexer; the layout is checked by static_asserts in
// eager_pointwise.cpp.
struct EagerIndexer {
  int64_t numel = 0;
  int64_t sizes[kEagerMaxDims] = {};
  int64_t strides[kEagerMaxOperands][kEagerMaxDims] = {};
  int32_t ndim = 0;
  int32_t contiguous = 0;  // nonzero: every operand's offset is the flat index
};

// The function an eager kernel applies to each element: the operands as loaded (in their
// buffers' dtypes) to the value to store (converted to the output's dtype by the store). It is
// called once, inside a kir::MathScope of the output's compute dtype.
using EagerValueFn = std::function<kir::Val(std::span<const kir::Val> operands)>;

struct EagerPointwiseSpec {
  std::string name;  // names the kernel; the entry is kiln_eager_<name>
  DType output = kFloat32;
  std::vector<DType> inputs;
};

// The KilnEagerIndexer struct and kiln_eager_offset(ix, operand, flat), guarded so that several
// eager kernels can share a translation unit. Every eager kernel's code starts with it.
std::string eager_indexer_prelude();
// `name` with every character a C identifier cannot hold replaced by '_'.
std::string eager_symbol_part(std::string_view name);

// One entry, kiln_eager_<name>(output, inputs..., KilnEagerIndexer), Elementwise over
// EagerIndexer::numel with a grid-stride loop (CudaEntry::work is 0: the launch gives it).
// Throws kiln::Error for more than kEagerMaxOperands - 1 inputs.
CudaSource eager_pointwise_source(const EagerPointwiseSpec& spec, const EagerValueFn& value);

// The indexer for an output and inputs already broadcast to its shape (`strides[0]` the
// output's): size-1 dims dropped, adjacent dims merged where every operand's strides allow.
// Throws kiln::Error naming `op` when more than kEagerMaxDims dims remain.
EagerIndexer make_eager_indexer(std::string_view op, std::span<const int64_t> sizes,
                                std::span<const std::vector<int64_t>> strides);

}  // namespace kiln::codegen::cuda
