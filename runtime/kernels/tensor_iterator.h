// TensorIterator: the CPU loop machinery every pointwise kernel (and the copy kernel) runs on.
// It broadcasts inputs to the output shape (stride 0), drops size-1 dims, orders dims so the
// output is walked in memory order, merges dims that are contiguous across every operand, and
// calls an inner loop on 1-D runs, split across the thread pool above a grain size.
//
// Note [Compute dtype]
// The iterator itself does not cast: the caller brings every input to the op's compute dtype
// first (cast_inputs), so that an inner loop sees one C++ type per operand and vectorizes.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "kiln/base/thread_pool.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

class TensorIterator {
 public:
  static constexpr int kMaxOperands = 8;
  static constexpr int kMaxDims = 16;
  // Below this many elements a loop runs on the calling thread: waking workers costs more.
  static constexpr int64_t kGrainSize = 32768;

  // Operand order: outputs first, then inputs. All outputs share one shape; inputs must be
  // broadcastable to it.
  TensorIterator(std::span<const Tensor> outputs, std::span<const Tensor> inputs);

  int ndim() const { return ndim_; }
  int num_operands() const { return nops_; }
  int64_t numel() const { return numel_; }
  // True when the whole iteration is one run where each operand is contiguous or a broadcast
  // scalar (stride 0): the common fast path.
  bool is_one_dim() const { return ndim_ <= 1; }
  int64_t inner_stride(int op) const { return strides_[op][0]; }

  // loop(char** data, const int64_t* byte_strides, int64_t n): process n elements of a 1-D run
  // starting at data[op], stepping byte_strides[op].
  template <class Loop>
  void for_each(const Loop& loop, int64_t grain = kGrainSize) const {
    if (numel_ == 0) return;
    if (numel_ < grain || in_parallel_region()) {
      serial_for(0, numel_, loop);
      return;
    }
    parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_for(b, e, loop); });
  }

  template <class Loop>
  void serial_for(int64_t begin, int64_t end, const Loop& loop) const {
    std::array<int64_t, kMaxDims> idx{};
    std::array<char*, kMaxOperands> ptrs{};
    int64_t rest = begin;
    for (int d = 0; d < ndim_; ++d) {
      idx[d] = rest % shape_[d];
      rest /= shape_[d];
    }
    for (int op = 0; op < nops_; ++op) {
      char* p = data_[op];
      for (int d = 0; d < ndim_; ++d)
        p += idx[d] * strides_[op][d];
      ptrs[op] = p;
    }
    std::array<int64_t, kMaxOperands> inner{};
    for (int op = 0; op < nops_; ++op)
      inner[op] = strides_[op][0];
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(shape_[0] - idx[0], end - pos);
      loop(ptrs.data(), inner.data(), n);
      pos += n;
      if (pos >= end) break;
      // Advance the multi-index past the finished run, carrying into outer dims.
      for (int op = 0; op < nops_; ++op)
        ptrs[op] += (n - 1) * strides_[op][0];
      idx[0] += n - 1;
      for (int d = 0; d < ndim_; ++d) {
        if (++idx[d] < shape_[d]) {
          for (int op = 0; op < nops_; ++op)
            ptrs[op] += strides_[op][d];
          break;
        }
        for (int op = 0; op < nops_; ++op)
          ptrs[op] -= (shape_[d] - 1) * strides_[op][d];
        idx[d] = 0;
      }
    }
  }

 private:
  int ndim_ = 0;
  int nops_ = 0;
  int64_t numel_ = 0;
  std::array<int64_t, kMaxDims> shape_{};                              // innermost first
  std::array<std::array<int64_t, kMaxDims>, kMaxOperands> strides_{};  // bytes, innermost first
  std::array<char*, kMaxOperands> data_{};
};

// The inputs converted to `dtype` (Tensor::to for those that differ), seen as a span. When all
// of them already have it, nothing is copied, not even the handles: an atomic reference count
// per operand is a measurable part of a small op.
class CastInputs {
 public:
  CastInputs(std::span<const Tensor> inputs, DType dtype);
  // The span may point into this object: never copied or moved (returned by guaranteed elision).
  CastInputs(const CastInputs&) = delete;
  CastInputs& operator=(const CastInputs&) = delete;
  operator std::span<const Tensor>() const { return view_; }  // NOLINT: implicit, as a span
  const Tensor& operator[](size_t i) const { return view_[i]; }
  size_t size() const { return view_.size(); }
  auto begin() const { return view_.begin(); }
  auto end() const { return view_.end(); }

 private:
  std::vector<Tensor> converted_;  // only when some input needed a cast
  std::span<const Tensor> view_;
};
inline CastInputs cast_inputs(std::span<const Tensor> inputs, DType dtype) {
  return CastInputs(inputs, dtype);
}

}  // namespace kiln
