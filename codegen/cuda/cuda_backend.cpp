#include "kiln/codegen/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#include "kiln/codegen/cuda/nvrtc_info.h"
#include "kiln/codegen/disk_cache.h"
#include "kiln/config.h"

#if KILN_WITH_CUDA
#include <nvrtc.h>

#include "kiln/base/cuda/driver_api.h"
#endif

namespace kiln::codegen::cuda {
namespace {

// Bump when the emitter or the NVRTC options change what a source compiles to: it is part of
// every key, so stale cache files are never loaded.
constexpr const char* kCodegenVersion = "kiln-cuda-4";

// A cache file holds a header line, the entry code it was built from (compared on load, so a
// hash collision can never load another kernel's image) and the image.
std::string pack(const CudaBinary& b) {
  return fmt::format("{} {} {}\n", kCodegenVersion, b.is_ptx ? "ptx" : "cubin",
                     b.source.code.size()) +
         b.source.code + b.image;
}
// The image, or "" when the file was written for other code.
std::string unpack(const std::string& payload, const CudaBinary& b) {
  std::string head =
      fmt::format("{} {} {}\n", kCodegenVersion, b.is_ptx ? "ptx" : "cubin", b.source.code.size());
  if (payload.compare(0, head.size(), head) != 0) return "";
  if (payload.compare(head.size(), b.source.code.size(), b.source.code) != 0) return "";
  return payload.substr(head.size() + b.source.code.size());
}

struct Cache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const CudaBinary>> memory;
  CudaCacheStats stats;
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: kernels may be built during exit
  return *c;
}

}  // namespace

std::vector<int> nvrtc_supported_archs() {
#if KILN_WITH_CUDA
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  std::sort(archs.begin(), archs.end());
  return archs;
#else
  return {};
#endif
}

ImageChoice choose_image(int device_arch) {
  std::vector<int> archs = nvrtc_supported_archs();
  KILN_CHECK(!archs.empty(),
             "cuda backend: this build has no NVRTC (KILN_WITH_CUDA=OFF), so it cannot compile "
             "kernels for sm_{}",
             device_arch);
  if (std::find(archs.begin(), archs.end(), device_arch) != archs.end())
    return {device_arch, false};
  auto below = std::upper_bound(archs.begin(), archs.end(), device_arch);
  KILN_CHECK(below != archs.begin(),
             "cuda backend: NVRTC {} compiles for sm_{} to sm_{}, nothing at or below the "
             "device's sm_{}",
             kiln::cuda::nvrtc_version(), archs.front(), archs.back(), device_arch);
  return {*(below - 1), true};
}

std::shared_ptr<const CudaBinary> cuda_build(const kir::Kernel& kernel, int device_arch,
                                             const CudaCompileOptions& o) {
  return cuda_build_source(emit_cuda(kernel), kernel.buffers.size(), device_arch, o);
}

std::shared_ptr<const CudaBinary> cuda_build_source(CudaSource source, size_t num_buffers,
                                                    int device_arch, const CudaCompileOptions& o) {
  auto b = std::make_shared<CudaBinary>();
  b->source = std::move(source);
  b->num_buffers = num_buffers;
  const std::string& name = b->source.name;
  ImageChoice choice = choose_image(device_arch);
  b->arch = choice.arch;
  b->is_ptx = choice.is_ptx;
  std::string tu = b->source.translation_unit();
  std::string id = fmt::format("{}\n{}\n{}\n{}\n{}", kCodegenVersion, kiln::cuda::nvrtc_version(),
                               b->is_ptx ? "compute" : "sm", b->arch, tu);
  b->key = fmt::format("{:016x}{:016x}", fnv1a64(id), fnv1a64("kiln:" + id));

  Cache& c = cache();
  if (o.memory_cache && !o.keep_debug_text) {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.memory.find(b->key);
    if (it != c.memory.end()) {
      ++c.stats.memory_hits;
      return it->second;
    }
  }
  std::string root = o.cache_dir.empty() ? options().cache_dir : o.cache_dir;
  DiskCache disk((std::filesystem::path(root) / "cuda").string());
  if (o.disk_cache) {
    DiskCache::Lookup found = disk.load(b->key);
    if (found.status == DiskCache::Status::Hit) {
      b->image = unpack(found.payload, *b);
      if (!b->image.empty()) {
        std::lock_guard<std::mutex> lock(c.mu);
        ++c.stats.disk_hits;
        log_line("kernels",
                 fmt::format("cuda: {} loaded from the disk cache ({})", name, disk.path(b->key)));
      }
    } else if (found.status == DiskCache::Status::Corrupt) {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.stats.disk_corrupt;
      log_line("kernels",
               fmt::format("cuda: damaged cache file, recompiling {}: {}", name, found.problem));
    }
  }
  if (b->image.empty()) {
    auto start = std::chrono::steady_clock::now();
    NvrtcResult r =
        nvrtc_compile(tu, name, b->arch, b->is_ptx ? NvrtcOutput::Ptx : NvrtcOutput::Cubin);
    b->image = std::move(r.binary);
    if (b->is_ptx) b->image.push_back('\0');  // cuModuleLoadData reads PTX as a C string
    {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.stats.compiles;
    }
    if (o.disk_cache) {
      std::string problem = disk.store(b->key, pack(*b));
      if (!problem.empty()) log_line("kernels", "cuda: not cached on disk: " + problem);
    }
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    log_line("kernels",
             fmt::format("cuda: compiled {} for {}_{} in {:.1f} ms ({} bytes)", name,
                         b->is_ptx ? "compute" : "sm", b->arch, ms.count(), b->image.size()));
  }
  if (o.keep_debug_text) {
    b->debug_files.emplace_back(name + ".cu", tu);
    std::string ptx = b->is_ptx ? b->image.substr(0, b->image.size() - 1)
                                : nvrtc_compile(tu, name, b->arch, NvrtcOutput::Ptx).binary;
    b->debug_files.emplace_back(name + ".ptx", std::move(ptx));
  }
  if (o.memory_cache) {
    std::lock_guard<std::mutex> lock(c.mu);
    c.memory.emplace(b->key, b);
  }
  return b;
}

CudaCacheStats cuda_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}

void cuda_clear_memory_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().memory.clear();
}

// Note [CUDA kernel launch]
// Every mapping of Note [CUDA kernel mapping] walks its work (elements or rows) with a
// grid-stride loop, so any grid is correct and the launcher picks one that fills the device
// without idle blocks: enough resident blocks per SM for latency hiding (2048 threads per SM on
// sm_80 and sm_90), never more than the work needs. The entries of one kernel share a stream and
// run in launch order, which is what lets a later entry read what an earlier one stored. Modules
// stay loaded for the process, as the LLVM backend's machine code does.
int64_t launch_grid(const CudaEntry& entry, int multiprocessors) {
  if (entry.mapping == Mapping::SingleThread) return 1;
  int64_t per_sm = std::max(1, 2048 / std::max(1, entry.block));
  int64_t full = static_cast<int64_t>(std::max(1, multiprocessors)) * per_sm;
  return std::clamp<int64_t>(entry.grid, 1, full);
}

#if KILN_WITH_CUDA
namespace {
// cuLaunchKernel takes the address of each argument: the buffer pointers in `ptrs`, then the
// sizes (a size is a long long in the kernel). Both must outlive the launch.
std::vector<void*> sized_arguments(std::vector<void*>& ptrs, std::span<const int64_t> sizes) {
  static_assert(sizeof(long long) == sizeof(int64_t));
  std::vector<void*> args;
  args.reserve(ptrs.size() + sizes.size());
  for (void*& p : ptrs)
    args.push_back(&p);
  for (const int64_t& v : sizes)
    args.push_back(const_cast<int64_t*>(&v));
  return args;
}
}  // namespace

CudaKernel::CudaKernel(std::shared_ptr<const CudaBinary> binary, int device)
    : binary_(std::move(binary)), device_(device) {
  kiln::cuda::require_device(device, "loading a CUDA kernel");
  multiprocessors_ = kiln::cuda::device_properties(device).multiprocessors;
  const auto& api = kiln::cuda::api("loading a CUDA kernel");
  kiln::cuda::DeviceGuard guard(device);
  CUmodule module = nullptr;
  kiln::cuda::check(api.cuModuleLoadData(&module, binary_->image.data()),
                    fmt::format("cuModuleLoadData({})", binary_->source.name));
  for (const CudaEntry& e : binary_->source.entries) {
    CUfunction f = nullptr;
    kiln::cuda::check(api.cuModuleGetFunction(&f, module, e.symbol.c_str()),
                      fmt::format("cuModuleGetFunction({})", e.symbol));
    functions_.push_back(f);
  }
}

void CudaKernel::launch(std::span<void* const> buffers) const {
  KILN_CHECK(buffers.size() == binary_->num_buffers,
             "cuda backend: kernel {}: launched with {} buffers, takes {}", binary_->source.name,
             buffers.size(), binary_->num_buffers);
  KILN_CHECK(binary_->source.num_sizes == 0,
             "cuda backend: kernel {} takes {} size parameters; launch it with launch_entry",
             binary_->source.name, binary_->source.num_sizes);
  const auto& api = kiln::cuda::api("launching a CUDA kernel");
  kiln::cuda::DeviceGuard guard(device_);
  auto stream = static_cast<CUstream>(kiln::cuda::current_stream(device_).handle());
  // cuLaunchKernel takes the address of each argument: here, of each buffer pointer.
  std::vector<void*> ptrs(buffers.begin(), buffers.end());
  std::vector<void*> args(ptrs.size());
  for (size_t i = 0; i < ptrs.size(); ++i)
    args[i] = &ptrs[i];
  const std::vector<CudaEntry>& entries = binary_->source.entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    const CudaEntry& e = entries[i];
    auto grid = static_cast<unsigned>(launch_grid(e, multiprocessors_));
    auto block = static_cast<unsigned>(e.mapping == Mapping::SingleThread ? 1 : e.block);
    kiln::cuda::check(api.cuLaunchKernel(static_cast<CUfunction>(functions_[i]), grid, 1, 1, block,
                                         1, 1, 0, stream, args.data(), nullptr),
                      fmt::format("cuLaunchKernel({}, grid {}, block {})", e.symbol, grid, block));
  }
}

void CudaKernel::launch_entry(size_t entry, std::span<void* const> args, int64_t work) const {
  KILN_CHECK(entry < functions_.size(), "cuda backend: kernel {} has {} entries, not {}",
             binary_->source.name, functions_.size(), entry + 1);
  if (work <= 0) return;
  const auto& api = kiln::cuda::api("launching a CUDA kernel");
  kiln::cuda::DeviceGuard guard(device_);
  auto stream = static_cast<CUstream>(kiln::cuda::current_stream(device_).handle());
  CudaEntry e = binary_->source.entries[entry];
  e.work = work;
  e.grid = e.mapping == Mapping::BlockPerRow ? work : (work + e.block - 1) / e.block;
  auto grid = static_cast<unsigned>(launch_grid(e, multiprocessors_));
  kiln::cuda::check(api.cuLaunchKernel(static_cast<CUfunction>(functions_[entry]), grid, 1, 1,
                                       static_cast<unsigned>(e.block), 1, 1, 0, stream,
                                       const_cast<void**>(args.data()), nullptr),
                    fmt::format("cuLaunchKernel({}, grid {}, block {})", e.symbol, grid, e.block));
}

void CudaKernel::launch_sized(std::span<void* const> buffers, std::span<const int64_t> sizes,
                              int64_t work) const {
  const CudaSource& src = binary_->source;
  KILN_CHECK(buffers.size() == binary_->num_buffers &&
                 sizes.size() == static_cast<size_t>(src.num_sizes) && src.entries.size() == 1,
             "cuda backend: kernel {}: launched with {} buffers and {} sizes, takes {} and {} "
             "({} entries)",
             src.name, buffers.size(), sizes.size(), binary_->num_buffers, src.num_sizes,
             src.entries.size());
  std::vector<void*> ptrs(buffers.begin(), buffers.end());
  launch_entry(0, sized_arguments(ptrs, sizes), work);
}

void CudaKernel::launch_sized(std::span<void* const> buffers,
                              std::span<const int64_t> sizes) const {
  if (sizes.empty()) return launch(buffers);
  const CudaSource& src = binary_->source;
  KILN_CHECK(
      buffers.size() == binary_->num_buffers && sizes.size() == static_cast<size_t>(src.num_sizes),
      "cuda backend: kernel {}: launched with {} buffers and {} sizes, takes {} and {}", src.name,
      buffers.size(), sizes.size(), binary_->num_buffers, src.num_sizes);
  std::vector<void*> ptrs(buffers.begin(), buffers.end());
  std::vector<void*> args = sized_arguments(ptrs, sizes);
  for (size_t i = 0; i < src.entries.size(); ++i) {
    const CudaEntry& e = src.entries[i];
    KILN_CHECK(e.work > 0 || !e.work_sizes.empty(),
               "cuda backend: kernel {}: entry {} takes its work from the caller; launch it "
               "with launch_entry",
               src.name, e.symbol);
    launch_entry(i, args, e.work_at(sizes));
  }
}
#else
CudaKernel::CudaKernel(std::shared_ptr<const CudaBinary> binary, int device)
    : binary_(std::move(binary)), device_(device) {
  kiln::cuda::require_device(device, "loading a CUDA kernel");
}
void CudaKernel::launch(std::span<void* const>) const {
  KILN_ERROR("cuda backend: kernel {}: this build has no CUDA support", binary_->source.name);
}
void CudaKernel::launch_entry(size_t, std::span<void* const>, int64_t) const {
  KILN_ERROR("cuda backend: kernel {}: this build has no CUDA support", binary_->source.name);
}
void CudaKernel::launch_sized(std::span<void* const>, std::span<const int64_t>, int64_t) const {
  KILN_ERROR("cuda backend: kernel {}: this build has no CUDA support", binary_->source.name);
}
void CudaKernel::launch_sized(std::span<void* const>, std::span<const int64_t>) const {
  KILN_ERROR("cuda backend: kernel {}: this build has no CUDA support", binary_->source.name);
}
#endif

std::shared_ptr<const CudaKernel> cuda_compile(const kir::Kernel& kernel, int device,
                                               const CudaCompileOptions& o) {
  kiln::cuda::require_device(device, fmt::format("compiling {} for CUDA", kernel.name));
  const kiln::cuda::DeviceProperties& p = kiln::cuda::device_properties(device);
  return std::make_shared<CudaKernel>(cuda_build(kernel, p.major * 10 + p.minor, o), device);
}

}  // namespace kiln::codegen::cuda
