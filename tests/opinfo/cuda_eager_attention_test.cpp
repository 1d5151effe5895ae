// Eager CUDA flash-attention kernels (Note [Eager CUDA flash attention]): without a GPU, every
// kernel the ops can ask for (each dtype and head-dim bound, forward and backward) compiles
// with NVRTC to PTX for sm_80 and sm_90, and both ops have their CUDA kernel registered.
// (cuda_eager_opinfo_test.cpp compares the kernels' results with the CPU's on every OpInfo
// sample where there is a GPU.)
#include <gtest/gtest.h>

#include "kiln/base/cuda/driver.h"
#include "kiln/codegen/cuda/eager_attention.h"
#include "kiln/kiln.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/cuda_ptx_util.h"

namespace {

namespace cg = kiln::codegen::cuda;

TEST(CudaEagerAttention, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::string tu;
  size_t entries = 0;
  for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    for (int d : {32, 64, 128, 256}) {
      for (const cg::CudaSource& src :
           {cg::eager_attention_forward_source(t, d), cg::eager_attention_backward_source(t, d)}) {
        if (tu.empty())
          tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
        tu += src.code;
        entries += src.entries.size();
      }
    }
  }
  for (const char* name :
       {"scaled_dot_product_flash_attention", "scaled_dot_product_flash_attention_backward"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : kiln_test::ptx_for_sm80_and_sm90(tu, "eager_attention_corpus"))
    EXPECT_EQ(kiln_test::count(ptx, ".entry"), entries);
  std::printf("[cuda eager] %zu flash-attention entries compiled to PTX for sm_80 and sm_90\n",
              entries);
}

TEST(CudaEagerAttention, HeadDimBounds) {
  EXPECT_EQ(cg::eager_attention_head_dim(8, 3), 32);
  EXPECT_EQ(cg::eager_attention_head_dim(64, 64), 64);
  EXPECT_EQ(cg::eager_attention_head_dim(64, 65), 128);
  EXPECT_EQ(cg::eager_attention_head_dim(256, 1), 256);
  EXPECT_EQ(cg::eager_attention_head_dim(257, 1), 0);
}

// Without a device, the ops' CUDA path is not runnable: the execution tests skip cleanly.
TEST(CudaEagerAttention, MatchesCpuOnDevice) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  kiln::manual_seed(3);
  kiln::Tensor q = kiln::randn({2, 3, 70, 16}), k = kiln::randn({2, 3, 90, 16});
  kiln::Tensor v = kiln::randn({2, 3, 90, 24});
  for (bool causal : {false, true}) {
    kiln::Tensor want = kiln::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
    kiln::Tensor got = kiln::scaled_dot_product_attention(q.to(kiln::kCUDA), k.to(kiln::kCUDA),
                                                          v.to(kiln::kCUDA), {}, 0.0, causal)
                           .to(kiln::kCPU);
    std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 1e-4) << "causal=" << causal << " at " << i;
  }
}

}  // namespace
