// The per-process table of loaded eager CUDA kernels, keyed by what makes two calls share one
// (op, dtypes, device, ...). Binaries come through the CUDA backend's memory and disk caches;
// this keeps the module loaded on its device, so a call after the first costs a hash lookup.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/codegen/cuda/cuda_backend.h"
#include "kiln/runtime/op_def.h"

namespace kiln::cuda {

template <class Key, class Hash>
class EagerKernelCache {
 public:
  // The kernel for `key` on `device`, built from `source()` (which `launch` takes
  // `num_buffers` buffers of) on the first call.
  std::shared_ptr<const codegen::cuda::CudaKernel> get(
      Key key, int device, size_t num_buffers,
      const std::function<codegen::cuda::CudaSource()>& source) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = kernels_.find(key);
      if (it != kernels_.end()) return it->second;
    }
    // Built outside the lock: NVRTC takes a while, and a second thread building the same
    // kernel gets the same binary from the backend's cache.
    const DeviceProperties& p = device_properties(device);
    auto binary = codegen::cuda::cuda_build_source(source(), num_buffers, p.major * 10 + p.minor);
    auto kernel = std::make_shared<const codegen::cuda::CudaKernel>(std::move(binary), device);
    std::lock_guard<std::mutex> lock(mu_);
    return kernels_.emplace(std::move(key), std::move(kernel)).first->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const codegen::cuda::CudaKernel>, Hash> kernels_;
};

// The key of the kernels that depend on nothing but their op, its input and output dtypes and
// the device (reductions, normalizations, random ops), and the one cache they share.
struct OpDTypeKey {
  const OpDef* op = nullptr;
  DType input = kFloat32;
  DType output = kFloat32;
  int device = 0;
  bool operator==(const OpDTypeKey&) const = default;
};
struct OpDTypeKeyHash {
  size_t operator()(const OpDTypeKey& k) const {
    return std::hash<const void*>()(k.op) ^
           (static_cast<size_t>(k.input) << 1 | static_cast<size_t>(k.output) << 9 |
            static_cast<size_t>(k.device) << 17);
  }
};
inline EagerKernelCache<OpDTypeKey, OpDTypeKeyHash>& op_dtype_kernels() {
  // Never destroyed: kernels may run during exit.
  static auto* c = new EagerKernelCache<OpDTypeKey, OpDTypeKeyHash>();
  return *c;
}

}  // namespace kiln::cuda
