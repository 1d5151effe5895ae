#include "kiln/codegen/cuda/nvrtc_info.h"

#include "kiln/config.h"

#if KILN_WITH_CUDA
#include <nvrtc.h>
#endif

namespace kiln::cuda {

std::string nvrtc_version() {
#if KILN_WITH_CUDA
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
#else
  return "";
#endif
}

}  // namespace kiln::cuda
