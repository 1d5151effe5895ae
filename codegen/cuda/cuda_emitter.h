// Kernel IR -> CUDA C (Note [CUDA kernel mapping] in cuda_emitter.cpp). One kir::Kernel becomes
// one translation unit: the preamble (cuda_math.h) and one or more `extern "C" __global__`
// entry points, launched in order on one stream.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::cuda {

// How an entry point spreads its loop nest over the grid.
enum class Mapping : uint8_t {
  Elementwise,   // the whole nest flattened, one element per thread, grid-stride
  BlockPerRow,   // one block per iteration of the outer loops; the vector loops split over its
                 // threads, with warp-shuffle and block reductions of their accumulators
  ThreadPerRow,  // one thread per iteration of the outer loops, which runs the rest serially
  SingleThread,  // one thread runs the statements (what no other mapping can run correctly)
};
std::string_view mapping_name(Mapping m);

struct CudaEntry {
  std::string symbol;  // the __global__ function's name
  Mapping mapping = Mapping::Elementwise;
  // Elements (Elementwise), rows (BlockPerRow, ThreadPerRow), or 1; 0 (and grid 0) when size
  // parameters give it: then it is work_factor times the product of the size parameters at
  // positions work_sizes (the launcher's CudaEntry::work_at), or what the caller of the
  // three-argument launch_sized computed.
  int64_t work = 1;
  int block = 256;   // threads per block, a multiple of 32 (1 for SingleThread)
  int64_t grid = 1;  // blocks that cover `work` once; the launcher may use fewer (grid-stride)
  int64_t work_factor = 1;
  std::vector<int> work_sizes;  // positions in the kernel's size parameters

  // The work at these values of the kernel's size parameters.
  int64_t work_at(std::span<const int64_t> sizes) const;
};

struct CudaSource {
  std::string name;                // the kernel's name
  std::string code;                // the entry points (they call into cuda_preamble())
  std::vector<CudaEntry> entries;  // in launch order; each takes every buffer, in order
  int num_sizes = 0;               // size parameters after the buffers (Note [Size parameters])

  // The translation unit NVRTC compiles: the preamble, then the code.
  std::string translation_unit() const;
  // A comment block listing the entries and their launch shapes, then the code (no preamble).
  std::string str() const;
};

// Writes `kernel` (verified first; throws kiln::Error naming the kernel when it does not verify)
// as CUDA C.
CudaSource emit_cuda(const kir::Kernel& kernel);

// For kernels whose loops are written by hand around kernel-IR statements (the shape-generic
// eager kernels, eager_pointwise.h): `kernel.body` as CUDA C lines at `indent` (two spaces
// each), with the plain statements of the Elementwise mapping. Not verified: the caller declares
// the variables the statements read but do not define, named cuda_var_name(var), and passes the
// buffers as parameters named cuda_buffer_name(buffer), pointers to storage_type(dtype)
// (cuda_scalar.h).
std::string emit_cuda_statements(const kir::Kernel& kernel, int indent);
std::string cuda_buffer_name(const kir::Buffer& b);
std::string cuda_var_name(const kir::Var& v);

}  // namespace kiln::codegen::cuda
