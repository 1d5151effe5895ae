// Registration of the eager CUDA kernels, one entry point per family; register_cuda_kernels
// (op_table.h) calls them all.
#pragma once

#include <span>

#include "kiln/base/error.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

// The eager CUDA kernels' device check: every input on the output's device.
inline void check_same_device(const OpDef& op, std::span<const Tensor> inputs, const Tensor& out) {
  for (const Tensor& t : inputs) {
    KILN_CHECK(t.device() == out.device(), "{}: expected all tensors on {}, got one on {}", op.name,
               out.device(), t.device());
  }
}

// Every op with an expression, their in-place twins, fill_, full and copy_
// (cuda_pointwise_ops.cpp).
void register_cuda_pointwise_kernels(OpTable& table);
// sum, mean, prod, amax and amin over dims (cuda_reduction_ops.cpp).
void register_cuda_reduction_kernels(OpTable& table);
// softmax, log_softmax, layer_norm and their fused backwards (cuda_nn_ops.cpp).
void register_cuda_nn_kernels(OpTable& table);
// op(inputs) -> outputs on a CUDA device by the kernel generated from the op's row program (Note
// [Row programs]): softmax, log_softmax and layer_norm where no row-cached entry applies, and
// their fused backwards.
void run_row_program_cuda(const OpDef& op, std::span<const Tensor> inputs,
                          std::span<const Tensor> outputs, const void* attrs);
// rand, randn, dropout and arange (cuda_random_ops.cpp).
void register_cuda_random_kernels(OpTable& table);
// mm and bmm through cuBLAS (cublas_matmul.cpp).
void register_cuda_linalg_kernels(OpTable& table);
// embedding, index_select, gather, scatter_add, cat, slice_backward and select_backward
// (cuda_indexing_ops.cpp).
void register_cuda_indexing_kernels(OpTable& table);
void register_cuda_advanced_index_kernels(OpTable& table);  // cuda_advanced_index_ops.cpp
// max/min with indices, argmax/argmin, nll_loss, logsumexp and var
// (cuda_index_reduction_ops.cpp).
void register_cuda_index_reduction_kernels(OpTable& table);
// sort, argsort, topk, cumsum and cumprod (cuda_sort_ops.cpp).
void register_cuda_sort_kernels(OpTable& table);
// convolution and convolution_backward through cuDNN (cudnn_conv.cpp).
void register_cuda_conv_kernels(OpTable& table);
// scaled_dot_product_flash_attention and its backward (cuda_attention_ops.cpp).
void register_cuda_attention_kernels(OpTable& table);

}  // namespace kiln
