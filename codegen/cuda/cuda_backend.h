// The CUDA backend: kernel IR -> CUDA C (cuda_emitter.h) -> NVRTC -> a module on the device,
// launched on the current stream (Note [CUDA kernel launch] in cuda_backend.cpp). Binaries are
// cached in memory and on disk under $KILN_CACHE_DIR/cuda, keyed by the source, the architecture
// and the NVRTC version, so a second process skips NVRTC. Building a binary needs no GPU; loading
// and launching one does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/codegen/compiled_kernel.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen::cuda {

struct CudaCompileOptions {
  // Keep the CUDA C and the PTX (CudaBinary::debug_files, for KILN_DEBUG_DIR); compiles the PTX
  // too, whatever the caches hold.
  bool keep_debug_text = false;
  bool memory_cache = true;
  bool disk_cache = true;
  // The cache root; empty: $KILN_CACHE_DIR (default ~/.cache/kiln). Binaries go in <root>/cuda.
  std::string cache_dir;
};

// One kernel compiled for one architecture: what the caches hold.
struct CudaBinary {
  CudaSource source;       // the entry points and their launch shapes
  size_t num_buffers = 0;  // the kernel's buffers: every entry takes all of them
  int arch = 0;            // 90 for sm_90
  bool is_ptx = false;     // PTX for compute_<arch> (the driver JITs it) instead of a cubin
  std::string image;       // the cubin's bytes or the PTX text, as cuModuleLoadData takes them
  std::string key;         // the content hash, hex
  // (file name, text): <name>.cu (the translation unit) and <name>.ptx, with keep_debug_text.
  std::vector<std::pair<std::string, std::string>> debug_files;
};

// The architectures this NVRTC compiles cubins for (e.g. 50 ... 90); empty without NVRTC.
std::vector<int> nvrtc_supported_archs();

// The image to build for a device of compute capability `device_arch`: a cubin for it when NVRTC
// knows it, else PTX for the newest architecture NVRTC knows below it (the driver compiles that
// for the device). Throws kiln::Error when NVRTC knows none at or below it.
struct ImageChoice {
  int arch = 0;
  bool is_ptx = false;
};
ImageChoice choose_image(int device_arch);

// Emits and compiles `kernel` for `device_arch` through the caches. Needs NVRTC, not a GPU.
// Throws kiln::Error (naming the kernel, with NVRTC's log) when it does not compile.
std::shared_ptr<const CudaBinary> cuda_build(const kir::Kernel& kernel, int device_arch,
                                             const CudaCompileOptions& options = {});

// cuda_build for a source written without kernel IR (eager_pointwise.h): `num_buffers` is how
// many buffers launch() takes; kernels with other parameters are launched with launch_entry.
std::shared_ptr<const CudaBinary> cuda_build_source(CudaSource source, size_t num_buffers,
                                                    int device_arch,
                                                    const CudaCompileOptions& options = {});

class CudaKernel final : public CompiledKernel {
 public:
  CudaKernel(std::shared_ptr<const CudaBinary> binary, int device);
  std::string_view backend() const override { return "cuda"; }
  // Launches every entry, in order, on `device`'s current stream. buffers[i] are device
  // pointers on that device. Returns once the launches are queued.
  void launch(std::span<void* const> buffers) const override;

  // Launches entry `entry` over `work` elements, or rows for BlockPerRow and ThreadPerRow (its
  // grid from launch_grid) with `args[i]` the
  // address of its i-th parameter, for entries that take more than the buffers. Nothing is
  // launched for work <= 0.
  void launch_entry(size_t entry, std::span<void* const> args, int64_t work) const;
  // A kernel with size parameters (Note [Size parameters]), one entry: its buffers (device
  // pointers, in order) and the sizes' values, over `work` elements or rows, which the caller
  // computes from the sizes (CudaEntry::work is 0).
  void launch_sized(std::span<void* const> buffers, std::span<const int64_t> sizes,
                    int64_t work) const;
  // A kernel with size parameters whose entries say how their work follows from them (a
  // symbolic fusion group's: CudaEntry::work_sizes): every entry, in order, each over the work
  // and grid these sizes give. Without sizes, launch().
  void launch_sized(std::span<void* const> buffers, std::span<const int64_t> sizes) const override;

  const CudaBinary& binary() const { return *binary_; }
  int device() const { return device_; }

 private:
  std::shared_ptr<const CudaBinary> binary_;
  int device_;
  std::vector<void*> functions_;  // CUfunction per entry, from the module loaded on `device_`
  int multiprocessors_ = 1;
};

// Builds `kernel` for CUDA device `device`'s architecture and loads it there. Throws kiln::Error
// when there is no such device or the kernel does not compile, for the caller to fall back.
std::shared_ptr<const CudaKernel> cuda_compile(const kir::Kernel& kernel, int device,
                                               const CudaCompileOptions& options = {});

// The grid a launch of `entry` uses on a device with `multiprocessors` SMs: every mapping walks
// its work with a grid-stride loop, so the grid is capped at what keeps the device full.
int64_t launch_grid(const CudaEntry& entry, int multiprocessors);

struct CudaCacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t disk_corrupt = 0;  // cache files found damaged, removed and rebuilt
  int64_t compiles = 0;      // NVRTC runs for an image
};
CudaCacheStats cuda_cache_stats();
// Forgets the in-memory cache (binaries already handed out stay valid): what a new process pays.
void cuda_clear_memory_cache();

}  // namespace kiln::codegen::cuda
