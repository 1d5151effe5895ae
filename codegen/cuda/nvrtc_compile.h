// NVRTC: CUDA C to PTX or cubin, in process and without a GPU (Note [NVRTC options] in
// nvrtc_compile.cpp).
#pragma once

#include <string>

namespace kiln::codegen::cuda {

enum class NvrtcOutput { Ptx, Cubin };

struct NvrtcResult {
  std::string binary;  // PTX text, or the cubin's bytes
  std::string log;     // NVRTC's program log (warnings), possibly empty
};

// True when this build links NVRTC (KILN_WITH_CUDA).
bool nvrtc_available();

// Compiles `source` for compute capability `arch` (80 for sm_80, 90 for sm_90). `name` names
// the program in errors and logs. Throws kiln::Error with NVRTC's log when the source does not
// compile, or when this build has no NVRTC.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          NvrtcOutput output);

}  // namespace kiln::codegen::cuda
