// TensorImpl: the refcounted object behind a Tensor handle (seed 001): sizes, strides and an
// offset into a Storage that views share, plus a slot for autograd metadata.
#pragma once

#include <memory>

#include "kiln/base/dtype.h"
#include "kiln/base/shape.h"
#include "kiln/runtime/pyobj_slot.h"
#include "kiln/runtime/storage.h"

namespace kiln {

namespace autograd {
struct AutogradMeta;
}

class TensorImpl {
 public:
  TensorImpl(Storage storage, DType dtype, Shape sizes, Shape strides, int64_t storage_offset);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  size_t itemsize() const { return element_size(dtype_); }

  const Storage& storage() const { return storage_; }
  // Address of element 0 (after the storage offset); null for Meta tensors.
  void* data() const {
    auto* base = static_cast<char*>(storage_->data());
    return base == nullptr ? nullptr : base + storage_offset_ * static_cast<int64_t>(itemsize());
  }

  // Note [Version counter] in storage.h.
  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  // Tensor::set_data (`x.data = y`): takes another tensor's storage and geometry in place.
  void set_geometry(Storage storage, DType dtype, Shape sizes, Shape strides,
                    int64_t storage_offset);

  // Autograd metadata is created lazily: most tensors never need it.
  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  autograd::AutogradMeta& ensure_autograd_meta();

  // The Python wrapper (Note [Python object slot] in runtime/pyobj_slot.h).
  PyObjectSlot& pyobj_slot() { return pyobj_slot_; }
  void* pyobj() const { return pyobj_slot_.get(); }

  // TensorImpls alive in the process, for leak tests (the Python package exposes it).
  static int64_t live_count();

 private:
  Storage storage_;
  Shape sizes_;
  Shape strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_;
  bool is_contiguous_ = true;
  std::unique_ptr<autograd::AutogradMeta> autograd_meta_;
  PyObjectSlot pyobj_slot_;
};

}  // namespace kiln
