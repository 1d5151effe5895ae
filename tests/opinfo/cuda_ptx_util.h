// Helpers of the tests that compile eager CUDA kernels to PTX without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"

namespace kiln_test {

inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// The PTX of translation unit `tu` for sm_80 and sm_90, in that order; a compile error fails
// the test.
inline std::vector<std::string> ptx_for_sm80_and_sm90(const std::string& tu, const char* name) {
  std::vector<std::string> ptx;
  for (int arch : {80, 90}) {
    try {
      ptx.push_back(
          kiln::codegen::cuda::nvrtc_compile(tu, name, arch, kiln::codegen::cuda::NvrtcOutput::Ptx)
              .binary);
    } catch (const kiln::Error& e) {
      ADD_FAILURE() << "sm_" << arch << ": " << e.what();
      ptx.emplace_back();
    }
    EXPECT_NE(ptx.back().find(".target sm_" + std::to_string(arch)), std::string::npos);
  }
  return ptx;
}

// One translation unit of eager kernels, each with a single entry, for one NVRTC compile.
struct PtxCorpus {
  std::string tu;  // the preamble, then every kernel's code
  size_t kernels = 0;
  void add(const kiln::codegen::cuda::CudaSource& src) {
    ASSERT_EQ(src.entries.size(), 1u) << src.name;
    if (tu.empty())
      tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
    tu += src.code;
    ++kernels;
  }
};

}  // namespace kiln_test
