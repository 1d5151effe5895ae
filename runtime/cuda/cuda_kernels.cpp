#include "kiln/runtime/cuda/cuda_kernels.h"

namespace kiln {

void register_cuda_kernels(OpTable& table) {
  register_cuda_pointwise_kernels(table);
  register_cuda_reduction_kernels(table);
  register_cuda_nn_kernels(table);
  register_cuda_random_kernels(table);
  register_cuda_linalg_kernels(table);
  register_cuda_indexing_kernels(table);
  register_cuda_advanced_index_kernels(table);
  register_cuda_index_reduction_kernels(table);
  register_cuda_sort_kernels(table);
  register_cuda_conv_kernels(table);
  register_cuda_attention_kernels(table);
}

}  // namespace kiln
