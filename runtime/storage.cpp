#include "kiln/runtime/storage.h"

#include "kiln/base/error.h"
#include "kiln/runtime/cuda/cuda_allocator.h"

namespace kiln {

StorageImpl::StorageImpl(size_t nbytes, Allocator* allocator, Device device)
    : nbytes_(nbytes), allocator_(allocator), device_(device) {
  if (allocator_ != nullptr) data_ = allocator_->allocate(nbytes);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, std::function<void()> release)
    : data_(data), nbytes_(nbytes), release_(std::move(release)), device_(device) {}

StorageImpl::~StorageImpl() {
  if (allocator_ != nullptr) allocator_->deallocate(data_, nbytes_);
  if (release_) release_();
}

Storage make_external_storage(void* data, size_t nbytes, Device device,
                              std::function<void()> release) {
  return std::make_shared<StorageImpl>(data, nbytes, device, std::move(release));
}

Storage make_storage(size_t nbytes, Device device) {
  switch (device.type) {
    case DeviceType::CPU:
      return std::make_shared<StorageImpl>(nbytes, cpu_allocator(), device);
    case DeviceType::Meta:
      return std::make_shared<StorageImpl>(nbytes, nullptr, device);
    case DeviceType::CUDA:
      return std::make_shared<StorageImpl>(nbytes, cuda_allocator(device.index), device);
  }
  KILN_ERROR("cannot allocate {} bytes on {}: unknown device type", nbytes, device);
}

}  // namespace kiln
