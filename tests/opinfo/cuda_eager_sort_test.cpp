// Eager CUDA sort and scan kernels (Note [Eager CUDA sort kernels]): without a GPU, every kernel
// the ops can ask for compiles with NVRTC to PTX for sm_80 and sm_90, and every op has its CUDA
// kernel registered. (cuda_eager_opinfo_test.cpp compares the kernels' results with the CPU's
// on every OpInfo sample where there is a GPU.)
#include <gtest/gtest.h>

#include "kiln/codegen/cuda/eager_sort.h"
#include "kiln/kiln.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/cuda_ptx_util.h"

namespace {

namespace cg = kiln::codegen::cuda;

TEST(CudaEagerSort, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  kiln_test::PtxCorpus corpus;
  // The compute dtypes of index_reduction_rows (sort, topk) and scan_rows (the scans).
  for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kInt64})
    corpus.add(cg::eager_rank_source(t));
  for (kiln::DType t : {kiln::kFloat64, kiln::kInt64}) {
    corpus.add(cg::eager_scan_source(t, false));
    corpus.add(cg::eager_scan_source(t, true));
  }
  for (const char* name : {"sort", "argsort", "topk", "cumsum", "cumprod"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : kiln_test::ptx_for_sm80_and_sm90(corpus.tu, "eager_sort_corpus"))
    EXPECT_EQ(kiln_test::count(ptx, ".entry"), corpus.kernels);
  std::printf("[cuda eager] %zu sort and scan kernels compiled to PTX for sm_80 and sm_90\n",
              corpus.kernels);
}

TEST(CudaEagerSort, RankKernelBreaksTiesByPosition) {
  // Stability comes from the order itself, not from the schedule: equal values compare by index.
  std::string code = cg::eager_rank_source(kiln::kFloat32).code;
  EXPECT_NE(code.find("i < j"), std::string::npos) << code;
  EXPECT_EQ(code.find("atomic"), std::string::npos) << code;
}

}  // namespace
