#include "kiln/runtime/cuda/cuda_copy.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/base/error.h"
#include "kiln/config.h"
#include "kiln/runtime/cuda/cuda_allocator.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/tensor_impl.h"

#if KILN_WITH_CUDA
#include "kiln/base/cuda/driver_api.h"
#endif

namespace kiln::cuda {

#if KILN_WITH_CUDA
namespace {

// Transfers go through a pinned buffer of at most this size at a time.
constexpr size_t kStagingBytes = size_t{32} << 20;

struct PinnedBuffer {
  void* ptr;
  explicit PinnedBuffer(size_t bytes) : ptr(pinned_allocate(bytes)) {}
  ~PinnedBuffer() { pinned_free(ptr); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};

CUdeviceptr device_ptr(const void* p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

// Copies `bytes` between host memory and device memory through a pinned buffer, in pieces, on
// the device's current stream; returns when the data has arrived.
void staged_copy(void* dst, const void* src, size_t bytes, int device, bool to_device) {
  if (bytes == 0) return;
  DeviceGuard g(device);
  Stream stream = current_stream(device);
  auto* s = static_cast<CUstream>(stream.handle());
  const DriverApi& d = api(to_device ? "to(cuda)" : "to(cpu)");
  PinnedBuffer staging(std::min(bytes, kStagingBytes));
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    size_t n = std::min(kStagingBytes, bytes - done);
    char* out = static_cast<char*>(dst) + done;
    const char* in = static_cast<const char*>(src) + done;
    if (to_device) {
      std::memcpy(staging.ptr, in, n);
      check(d.cuMemcpyHtoDAsync_v2(device_ptr(out), staging.ptr, n, s), "cuMemcpyHtoDAsync");
      stream.synchronize();  // the staging buffer is reused by the next piece
    } else {
      check(d.cuMemcpyDtoHAsync_v2(staging.ptr, device_ptr(in), n, s), "cuMemcpyDtoHAsync");
      stream.synchronize();
      std::memcpy(out, staging.ptr, n);
    }
  }
}

// Elements from the view's first element to its last, inclusive (Kiln's strides are >= 0).
int64_t extent(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    last += (t.size(d) - 1) * t.stride(d);
  return last + 1;
}

// A CPU tensor equal to the CUDA view `src`: the storage range the view reaches is copied to
// the host, and the view's sizes and strides are applied there.
Tensor to_host(const Tensor& src) {
  int64_t span = extent(src);
  Tensor flat = empty_tensor({span}, src.dtype(), kCPU);
  staged_copy(flat.impl()->data(), src.impl()->data(),
              static_cast<size_t>(span) * element_size(src.dtype()), src.device().index, false);
  return Tensor(std::make_shared<TensorImpl>(flat.impl()->storage(), src.dtype(), src.sizes(),
                                             src.strides(), 0));
}

}  // namespace

void copy_between_devices(const Tensor& dst, const Tensor& src) {
  KILN_CHECK(dst.sizes() == src.sizes(), "copy: shapes {} and {} differ", shape_str(dst.sizes()),
             shape_str(src.sizes()));
  if (dst.device().is_cuda()) {
    KILN_CHECK(dst.is_contiguous(),
               "copy: the CUDA destination (shape {}, strides {}) must be contiguous: strided "
               "writes on the device need a CUDA copy kernel, which this build lacks",
               shape_str(dst.sizes()), shape_str(dst.strides()));
  }
  size_t bytes = static_cast<size_t>(dst.numel()) * element_size(dst.dtype());
  if (src.device().is_cpu()) {  // host -> device
    Tensor s = src.dtype() == dst.dtype() ? src.contiguous() : src.to(dst.dtype()).contiguous();
    staged_copy(dst.impl()->data(), s.impl()->data(), bytes, dst.device().index, true);
    return;
  }
  if (dst.device().is_cpu()) {  // device -> host
    if (src.is_contiguous() && src.dtype() == dst.dtype() && dst.is_contiguous()) {
      staged_copy(dst.impl()->data(), src.impl()->data(), bytes, src.device().index, false);
    } else {
      copy_into(dst, to_host(src));
    }
    return;
  }
  // device -> device
  if (src.device() == dst.device() && src.is_contiguous() && src.dtype() == dst.dtype()) {
    if (bytes == 0) return;
    int device = dst.device().index;
    DeviceGuard g(device);
    check(api("copy").cuMemcpyDtoDAsync_v2(device_ptr(dst.impl()->data()),
                                           device_ptr(src.impl()->data()), bytes,
                                           static_cast<CUstream>(current_stream(device).handle())),
          "cuMemcpyDtoDAsync");
    return;
  }
  // Across devices, or a strided or converting copy: through the host.
  Tensor host = to_host(src);
  copy_between_devices(dst, host.dtype() == dst.dtype() ? host : host.to(dst.dtype()));
}

#else

void copy_between_devices(const Tensor& dst, const Tensor& src) {
  Device d = dst.device().is_cuda() ? dst.device() : src.device();
  require_device(d.index, "copy");
  KILN_ERROR("copy: this build has no CUDA backend (KILN_WITH_CUDA=OFF)");
}

#endif

}  // namespace kiln::cuda
