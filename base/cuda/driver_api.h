// The CUDA driver entry points Kiln calls, resolved from libcuda.so.1 at run time (see driver.h).
// Only for files built with KILN_WITH_CUDA: the types come from the toolkit's cuda.h.
#pragma once

#include <cuda.h>

#include <string_view>

namespace kiln::cuda {

// Each entry is the exported symbol name (the _v2 names that cuda.h's macros stand for).
#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                            \
  X(cuInit)                                                                                      \
  X(cuDriverGetVersion)                                                                          \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)                  \
      X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuCtxGetCurrent) X(cuCtxSetCurrent)   \
          X(cuCtxSynchronize) X(cuGetErrorName) X(cuGetErrorString) X(cuMemAlloc_v2)             \
              X(cuMemFree_v2) X(cuMemGetInfo_v2) X(cuMemHostAlloc) X(cuMemFreeHost)              \
                  X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2)        \
                      X(cuStreamCreate) X(cuStreamSynchronize) X(cuStreamQuery)                  \
                          X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) \
                              X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy_v2)   \
                                  X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload)   \
                                      X(cuLaunchKernel)

struct DriverApi {
#define KILN_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_MEMBER)
#undef KILN_CUDA_DRIVER_MEMBER
};

// The resolved table; throws kiln::Error naming `what` and the reason when there is no driver.
const DriverApi& api(std::string_view what);

// Throws kiln::Error "what: CUDA_ERROR_X (description)" unless r is CUDA_SUCCESS.
void check(CUresult r, std::string_view what);

}  // namespace kiln::cuda
