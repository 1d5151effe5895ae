// convolution and convolution_backward on CUDA devices through cuDNN, loaded with dlopen on
// first use (Note [cuDNN loaded on first use] in cudnn_conv.cpp). What the tests reach without a
// GPU: loading the library and the descriptors, which cuDNN builds on the host.
#pragma once

#include <string>

#include "kiln/runtime/kernels/conv_geometry.h"

namespace kiln::cuda {

// cuDNN as loaded: the file, its version (cudnnGetVersion: 91900 for 9.19.0), or why it could
// not be loaded ("cuDNN not found ...").
struct CudnnLibrary {
  std::string path;
  size_t version = 0;
  std::string error;  // empty when loaded
};

// The process's cuDNN, loaded on first call: libcudnn.so.<the header's major version>, then the
// library CMake found. Never throws.
const CudnnLibrary& cudnn_library();

// Loads cuDNN from `path` (for tests: the process's library stays as it is).
CudnnLibrary load_cudnn_from(const std::string& path);

// The convolution's output sizes as cuDNN computes them from the descriptors Kiln builds for
// `g` in `dtype` (cudnnGetConvolutionNdForwardOutputDim, on the columns grid of Note
// [Convolution image and columns]). Needs cuDNN, not a GPU; throws kiln::Error without cuDNN.
Shape cudnn_columns_sizes(const ConvGeometry& g, DType dtype);

// As torch.backends.cudnn.benchmark (default false): the first call of each convolution geometry
// times every cuDNN algorithm and keeps the fastest, instead of taking the heuristics' choice
// (Note [cuDNN algorithm choice]).
void set_cudnn_benchmark(bool benchmark);
bool cudnn_benchmark();

}  // namespace kiln::cuda
