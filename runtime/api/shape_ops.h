// Joining and splitting tensors.
#pragma once

#include <source_location>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

// ---- joining and splitting ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0,
           std::source_location loc = std::source_location::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0,
             std::source_location loc = std::source_location::current());
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0,
                          std::source_location loc = std::source_location::current());
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0,
                          std::source_location loc = std::source_location::current());

}  // namespace kiln
