// NVRTC, linked at build time when KILN_WITH_CUDA is on (it needs no GPU or driver).
#pragma once

#include <string>

namespace kiln::cuda {

// "13.0", or "" when this build has no CUDA backend.
std::string nvrtc_version();

}  // namespace kiln::cuda
