// TensorImpl: the refcounted object behind a Tensor handle (seed 001): sizes, strides and an
// offset into a Storage that views share, plus a slot for autograd metadata.
#pragma once

#include <memory>

#include "kiln/base/dtype.h"
#include "kiln/base/shape.h"
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

  // Autograd metadata is created lazily: most tensors never need it.
  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  autograd::AutogradMeta& ensure_autograd_meta();

  // Note [Python object slot]
  // The Python wrapper of this tensor (a kiln.Tensor), or null. The wrapper owns a Tensor
  // handle, so this pointer is not a reference: the wrapper sets it when it is created and
  // clears it when it is deallocated. Whoever returns this tensor to Python returns the wrapper
  // in the slot when there is one, so Python sees one object per tensor while it holds it
  // (x.grad is x.grad; attributes set on it survive). Only read or written with the GIL held;
  // the runtime itself never looks at it. Nodes carry the same slot for grad_fn objects.
  void* pyobj() const { return pyobj_; }
  void set_pyobj(void* obj) { pyobj_ = obj; }

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
  void* pyobj_ = nullptr;
};

}  // namespace kiln
