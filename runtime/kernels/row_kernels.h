// What the CPU kernels of the normalization ops and their fused backwards (nn_ops.cpp,
// nn_backward_ops.cpp) share: their compute dtype, and running a body over contiguous rows
// with the reduced dim innermost.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"

namespace kiln {

// Half types compute in float32.
inline DType row_compute_dtype(DType t) {
  return element_size(t) == 2 ? kFloat32 : t;
}

// `t` in the compute dtype, contiguous, with `dim` moved innermost.
inline Tensor rows_of(const Tensor& t, DType compute, int64_t dim) {
  Tensor x = t.dtype() == compute ? t : t.to(compute);
  int64_t last = t.dim() == 0 ? 0 : t.dim() - 1;
  if (t.dim() > 0 && dim != last) x = x.transpose(dim, last);
  return x.contiguous();
}

// Runs body<T>(compute, results) for rows of `like`'s shape with `dim` innermost, where
// `results` are contiguous compute-dtype tensors (the outputs themselves where they already
// are), then copies them into `outputs`. Nothing runs for an empty `like`.
template <class Body>
void over_rows(std::span<const Tensor> outputs, const Tensor& like, int64_t dim, Body&& body) {
  int64_t nd = like.dim();
  int64_t last = nd == 0 ? 0 : nd - 1;
  DType compute = row_compute_dtype(like.dtype());
  bool moved = nd > 0 && dim != last;
  Shape sizes = like.sizes();
  if (moved) std::swap(sizes[static_cast<size_t>(dim)], sizes[static_cast<size_t>(last)]);
  std::vector<Tensor> results;
  for (const Tensor& out : outputs) {
    bool direct = !moved && compute == out.dtype() && out.is_contiguous();
    results.push_back(direct ? out : empty_tensor(sizes, compute, out.device()));
  }
  if (like.numel() > 0) {
    if (compute == kFloat64) {
      body.template operator()<double>(compute, results);
    } else {
      body.template operator()<float>(compute, results);
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (results[i].is_same(outputs[i])) continue;
    copy_into(outputs[i], moved ? results[i].transpose(dim, last) : results[i]);
  }
}

}  // namespace kiln
