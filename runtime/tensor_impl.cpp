#include "kiln/runtime/tensor_impl.h"

#include <atomic>

#include "kiln/base/error.h"
#include "kiln/runtime/autograd/autograd_meta.h"

namespace kiln {

namespace {
std::atomic<int64_t> g_live_tensor_impls{0};
}  // namespace

int64_t TensorImpl::live_count() {
  return g_live_tensor_impls.load(std::memory_order_relaxed);
}

TensorImpl::TensorImpl(Storage storage, DType dtype, Shape sizes, Shape strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset),
      numel_(shape_numel(sizes_)),
      dtype_(dtype) {
  is_contiguous_ = strides_are_contiguous(sizes_, strides_);
  g_live_tensor_impls.fetch_add(1, std::memory_order_relaxed);
}

TensorImpl::~TensorImpl() {
  g_live_tensor_impls.fetch_sub(1, std::memory_order_relaxed);
}

void TensorImpl::set_geometry(Storage storage, DType dtype, Shape sizes, Shape strides,
                              int64_t storage_offset) {
  storage_ = std::move(storage);
  dtype_ = dtype;
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  storage_offset_ = storage_offset;
  numel_ = shape_numel(sizes_);
  is_contiguous_ = strides_are_contiguous(sizes_, strides_);
}

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) autograd_meta_ = std::make_unique<autograd::AutogradMeta>();
  return *autograd_meta_;
}

}  // namespace kiln
