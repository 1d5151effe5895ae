#include "kiln/codegen/cuda/nvrtc_compile.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/config.h"

#if KILN_WITH_CUDA
#include <nvrtc.h>
#endif

namespace kiln::codegen::cuda {

bool nvrtc_available() {
  return KILN_WITH_CUDA != 0;
}

#if KILN_WITH_CUDA
namespace {

void check(nvrtcResult r, std::string_view what, const std::string& name) {
  KILN_CHECK(r == NVRTC_SUCCESS, "nvrtc: {} of {} failed: {}", what, name, nvrtcGetErrorString(r));
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    nvrtcDestroyProgram(p);
    delete p;
  }
};

}  // namespace

// Note [NVRTC options]
// - PTX is generated for the virtual architecture compute_XX, so the driver can JIT it for the
//   device at hand (and newer ones); a cubin targets exactly sm_XX.
// - C++17, no fast math: division and square root stay correctly rounded (-prec-div and
//   -prec-sqrt are on by default), denormals are kept, so the polynomials of the preamble give
//   what they give on the CPU up to the fused multiply-adds that both compilers form.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          NvrtcOutput output) {
  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram(nullptr));
  check(nvrtcCreateProgram(prog.get(), source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram", name);
  std::string arch_opt =
      fmt::format("--gpu-architecture={}_{}", output == NvrtcOutput::Ptx ? "compute" : "sm", arch);
  std::vector<const char*> opts = {arch_opt.c_str(), "--std=c++17"};
  nvrtcResult r = nvrtcCompileProgram(*prog, static_cast<int>(opts.size()), opts.data());
  NvrtcResult result;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(*prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    result.log.resize(log_size);
    nvrtcGetProgramLog(*prog, result.log.data());
    result.log.resize(log_size - 1);  // the terminating NUL
  }
  KILN_CHECK(r == NVRTC_SUCCESS, "nvrtc: compiling {} for sm_{} failed: {}\n{}", name, arch,
             nvrtcGetErrorString(r), result.log);
  size_t size = 0;
  if (output == NvrtcOutput::Ptx) {
    check(nvrtcGetPTXSize(*prog, &size), "nvrtcGetPTXSize", name);
    result.binary.resize(size);
    check(nvrtcGetPTX(*prog, result.binary.data()), "nvrtcGetPTX", name);
    if (!result.binary.empty() && result.binary.back() == '\0') result.binary.pop_back();
  } else {
    check(nvrtcGetCUBINSize(*prog, &size), "nvrtcGetCUBINSize", name);
    result.binary.resize(size);
    check(nvrtcGetCUBIN(*prog, result.binary.data()), "nvrtcGetCUBIN", name);
  }
  return result;
}
#else
NvrtcResult nvrtc_compile(const std::string&, const std::string& name, int, NvrtcOutput) {
  KILN_ERROR(
      "nvrtc: cannot compile {}: this build of Kiln has no CUDA backend "
      "(configure with -DKILN_WITH_CUDA=ON and the CUDA toolkit in /usr/local/cuda)",
      name);
}
#endif

}  // namespace kiln::codegen::cuda
