#include "kiln/runtime/kernels/tensor_iterator.h"

#include <algorithm>

#include "kiln/base/error.h"

namespace kiln {

TensorIterator::TensorIterator(std::span<const Tensor> outputs, std::span<const Tensor> inputs) {
  nops_ = static_cast<int>(outputs.size() + inputs.size());
  KILN_CHECK(nops_ <= kMaxOperands, "TensorIterator: {} operands exceed the limit of {}", nops_,
             kMaxOperands);
  const Shape& shape = outputs[0].sizes();
  int out_ndim = static_cast<int>(shape.size());
  KILN_CHECK(out_ndim <= kMaxDims, "TensorIterator: {} dims exceed the limit of {}", out_ndim,
             kMaxDims);
  numel_ = shape_numel(shape);

  // Gather byte strides innermost-first, broadcasting inputs (right-aligned) with stride 0.
  std::array<std::array<int64_t, kMaxDims>, kMaxOperands> strides{};
  int op = 0;
  auto add_operand = [&](const Tensor& t) {
    const TensorImpl* impl = t.impl();
    int nd = static_cast<int>(impl->dim());
    auto item = static_cast<int64_t>(impl->itemsize());
    for (int d = 0; d < out_ndim; ++d) {
      int src = nd - 1 - d;  // source dim aligned with output dim (out_ndim - 1 - d)
      int64_t stride = 0;
      if (src >= 0 && impl->sizes()[src] != 1) stride = impl->strides()[src] * item;
      strides[op][d] = stride;
    }
    data_[op] = static_cast<char*>(impl->data());
    ++op;
  };
  for (const Tensor& t : outputs)
    add_operand(t);
  for (const Tensor& t : inputs)
    add_operand(t);

  // Drop size-1 dims, keeping innermost-first order.
  std::array<int, kMaxDims> dims{};
  int nd = 0;
  for (int d = 0; d < out_ndim; ++d) {
    if (shape[out_ndim - 1 - d] != 1) dims[nd++] = d;
  }
  // Walk the output in memory order: sort dims by the output's stride (stable, so ties keep
  // the logical order). This matters for in-place ops on transposed outputs.
  // Insertion sort: stable like std::stable_sort, which allocates a buffer on every call, and
  // there are kMaxDims dims at most.
  for (int i = 1; i < nd; ++i) {
    int d = dims[i];
    int j = i;
    for (; j > 0 && std::abs(strides[0][dims[j - 1]]) > std::abs(strides[0][d]); --j)
      dims[j] = dims[j - 1];
    dims[j] = d;
  }

  // Merge neighbours that are contiguous for every operand.
  ndim_ = 0;
  for (int i = 0; i < nd; ++i) {
    int d = dims[i];
    int64_t size = shape[out_ndim - 1 - d];
    if (ndim_ > 0) {
      bool mergeable = true;
      for (int o = 0; o < nops_ && mergeable; ++o) {
        mergeable = strides[o][d] == strides_[o][ndim_ - 1] * shape_[ndim_ - 1];
      }
      if (mergeable) {
        shape_[ndim_ - 1] *= size;
        continue;
      }
    }
    shape_[ndim_] = size;
    for (int o = 0; o < nops_; ++o)
      strides_[o][ndim_] = strides[o][d];
    ++ndim_;
  }
  if (ndim_ == 0) {  // a scalar, or every dim was size 1
    ndim_ = 1;
    shape_[0] = numel_ == 0 ? 0 : 1;
    for (int o = 0; o < nops_; ++o)
      strides_[o][0] = 0;
  }
}

CastInputs::CastInputs(std::span<const Tensor> inputs, DType dtype) : view_(inputs) {
  bool same = true;
  for (const Tensor& t : inputs)
    same = same && t.dtype() == dtype;
  if (same) return;
  converted_.reserve(inputs.size());
  for (const Tensor& t : inputs)
    converted_.push_back(t.dtype() == dtype ? t : t.to(dtype));
  view_ = converted_;
}

}  // namespace kiln
