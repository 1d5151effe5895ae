#include "kiln/runtime/tensor_impl.h"

#include "kiln/base/error.h"
#include "kiln/runtime/autograd/autograd_meta.h"

namespace kiln {

TensorImpl::TensorImpl(Storage storage, DType dtype, Shape sizes, Shape strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset),
      numel_(shape_numel(sizes_)),
      dtype_(dtype) {
  is_contiguous_ = strides_are_contiguous(sizes_, strides_);
}

TensorImpl::~TensorImpl() = default;

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) autograd_meta_ = std::make_unique<autograd::AutogradMeta>();
  return *autograd_meta_;
}

}  // namespace kiln
