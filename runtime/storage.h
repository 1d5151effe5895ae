// Storage: one refcounted buffer shared by a tensor and all of its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "kiln/runtime/allocator.h"

namespace kiln {

// Note [Version counter]
// Autograd detects "saved a tensor, then modified it in place" by comparing a version number
// recorded at save time with the current one. PyTorch shares one counter between a tensor, its
// views and its detach()ed aliases; all of those share this Storage, so the counter lives here.
// Every in-place kernel bumps it (see TensorImpl::bump_version) and nothing else does.
class StorageImpl {
 public:
  // Owning storage: nbytes from `allocator` (null allocator: no data, as for Meta tensors).
  StorageImpl(size_t nbytes, Allocator* allocator, Device device);
  // Memory owned by someone else (a NumPy array, a DLPack producer): `release` runs when the
  // last tensor over it is gone, and is how the owner learns it may free the memory.
  StorageImpl(void* data, size_t nbytes, Device device, std::function<void()> release);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Allocator* allocator_ = nullptr;
  std::function<void()> release_;
  Device device_;
  std::atomic<uint32_t> version_{0};
};

using Storage = std::shared_ptr<StorageImpl>;

Storage make_storage(size_t nbytes, Device device);
// Storage over memory Kiln did not allocate (see the constructor above).
Storage make_external_storage(void* data, size_t nbytes, Device device,
                              std::function<void()> release);

}  // namespace kiln
