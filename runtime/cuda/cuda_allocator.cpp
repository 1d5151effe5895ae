#include "kiln/runtime/cuda/cuda_allocator.h"

#include <array>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/base/error.h"
#include "kiln/config.h"

#if KILN_WITH_CUDA
#include "kiln/base/cuda/driver_api.h"
#endif

namespace kiln {

#if KILN_WITH_CUDA
namespace {

constexpr int kMaxDevices = 64;

class DeviceMemory final : public MemorySource {
 public:
  explicit DeviceMemory(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    cuda::DeviceGuard g(device_);
    CUdeviceptr ptr = 0;
    CUresult r = cuda::api("cuda allocator").cuMemAlloc_v2(&ptr, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    cuda::check(r, fmt::format("cuMemAlloc of {} on cuda:{}",
                               format_bytes(static_cast<int64_t>(bytes)), device_));
    return reinterpret_cast<void*>(ptr);
  }
  void release(void* ptr, size_t) override {
    cuda::DeviceGuard g(device_);
    cuda::check(cuda::api("cuda allocator").cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr)),
                "cuMemFree");
  }
  std::string name() const override { return fmt::format("cuda:{}", device_); }
  void* record_event(uintptr_t stream) override {
    cuda::DeviceGuard g(device_);
    const auto& api = cuda::api("cuda allocator");
    CUevent e = nullptr;
    cuda::check(api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    cuda::check(api.cuEventRecord(e, reinterpret_cast<CUstream>(stream)), "cuEventRecord");
    return e;
  }
  bool event_done(void* event) override {
    CUresult r = cuda::api("cuda allocator").cuEventQuery(static_cast<CUevent>(event));
    if (r == CUDA_ERROR_NOT_READY) return false;
    cuda::check(r, "cuEventQuery");
    return true;
  }
  void wait_event(void* event) override {
    cuda::check(cuda::api("cuda allocator").cuEventSynchronize(static_cast<CUevent>(event)),
                "cuEventSynchronize");
  }
  void destroy_event(void* event) override {
    cuda::check(cuda::api("cuda allocator").cuEventDestroy_v2(static_cast<CUevent>(event)),
                "cuEventDestroy");
  }

 private:
  int device_;
};

class PinnedMemory final : public MemorySource {
 public:
  void* allocate(size_t bytes) override {
    // Portable: usable from every context, so one pool serves all devices.
    cuda::DeviceGuard g(0);
    void* ptr = nullptr;
    CUresult r =
        cuda::api("pinned allocator").cuMemHostAlloc(&ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    cuda::check(r, "cuMemHostAlloc");
    return ptr;
  }
  void release(void* ptr, size_t) override {
    cuda::check(cuda::api("pinned allocator").cuMemFreeHost(ptr), "cuMemFreeHost");
  }
  std::string name() const override { return "pinned host memory"; }
};

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device)
      : device_(device), blocks_(std::make_unique<DeviceMemory>(device)) {}
  void* allocate(size_t nbytes) override {
    return blocks_.allocate(nbytes, cuda::current_stream(device_).id());
  }
  void deallocate(void* ptr, size_t) override { blocks_.free(ptr); }
  Device device() const override { return Device::cuda(device_); }
  BlockCachingAllocator& blocks() { return blocks_; }

 private:
  int device_;
  BlockCachingAllocator blocks_;
};

struct Allocators {
  std::mutex mutex;
  std::array<std::unique_ptr<CudaAllocator>, kMaxDevices> device;
  BlockCachingAllocator pinned{std::make_unique<PinnedMemory>()};
};

Allocators& allocators() {
  // Leaked: tensors held by static objects may be freed after static destructors ran.
  static auto* a = new Allocators();
  return *a;
}

CudaAllocator& device_allocator(int device) {
  cuda::require_device(device, "cuda allocator");
  KILN_CHECK(device < kMaxDevices, "cuda allocator: device index {} is above Kiln's limit of {}",
             device, kMaxDevices);
  Allocators& a = allocators();
  std::lock_guard<std::mutex> lock(a.mutex);
  auto& slot = a.device[static_cast<size_t>(device)];
  if (!slot) slot = std::make_unique<CudaAllocator>(device);
  return *slot;
}

}  // namespace

Allocator* cuda_allocator(int device) {
  return &device_allocator(device);
}
BlockAllocatorStats cuda_memory_stats(int device) {
  return device_allocator(device).blocks().stats();
}
void cuda_reset_peak_memory_stats(int device) {
  device_allocator(device).blocks().reset_peak_stats();
}
void cuda_empty_cache() {
  if (!cuda::driver_loaded()) return;
  for (int d = 0; d < cuda::device_count() && d < kMaxDevices; ++d)
    device_allocator(d).blocks().empty_cache();
  allocators().pinned.empty_cache();
}

namespace cuda {
void record_stream(const Tensor& t, const Stream& stream) {
  KILN_CHECK(t.device().is_cuda() && t.device().index == stream.device(),
             "record_stream: the tensor is on {} and the stream on cuda:{}", t.device(),
             stream.device());
  const TensorImpl* impl = t.impl();
  if (impl->storage()->nbytes() == 0) return;
  device_allocator(stream.device()).blocks().record_stream(impl->storage()->data(), stream.id());
}

void* pinned_allocate(size_t bytes) {
  require_device(0, "pinned allocator");
  return allocators().pinned.allocate(bytes, 0);
}
void pinned_free(void* ptr) {
  allocators().pinned.free(ptr);
}
}  // namespace cuda

#else  // no CUDA in this build

namespace {
[[noreturn]] void no_cuda(int device, const char* what) {
  cuda::require_device(device, what);
  KILN_ERROR("{}: this build has no CUDA backend (KILN_WITH_CUDA=OFF)", what);
}
}  // namespace

Allocator* cuda_allocator(int device) {
  no_cuda(device, "cuda allocator");
}
BlockAllocatorStats cuda_memory_stats(int device) {
  no_cuda(device, "cuda_memory_stats");
}
void cuda_reset_peak_memory_stats(int device) {
  no_cuda(device, "cuda_reset_peak_memory_stats");
}
void cuda_empty_cache() {}
namespace cuda {
void record_stream(const Tensor& t, const Stream&) {
  no_cuda(t.device().index, "record_stream");
}
void* pinned_allocate(size_t) {
  no_cuda(0, "pinned allocator");
}
void pinned_free(void*) {}
}  // namespace cuda

#endif

}  // namespace kiln
