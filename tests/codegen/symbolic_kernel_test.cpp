// A fusion group of a symbolic graph (Note [Symbolic types]) compiled once, by the LLVM or the
// CUDA backend, runs at every value of its symbols and matches the eager ops there
// (Note [Size parameters]).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/cuda/driver.h"
#include "kiln/config.h"
#include "kiln/ir/parser.h"
#include "kiln/kiln.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/lower_fusion_group.h"
#include "kiln/runtime/kernel_args.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif
#if KILN_WITH_CUDA
#include "kiln/codegen/cuda/cuda_backend.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#endif

namespace kiln {
namespace {

// x [s0, s1], b [s1] -> (gelu(x + b) * x, the row means of x): a pointwise chain with its
// vectorized inner loop and parallel outer loop, and a reduction over a row of length s1.
std::shared_ptr<ir::Graph> lowered_graph() {
  auto g = ir::parse(R"(graph(%x : f32[s0, s1], %b : f32[s1]) symbols(s0 = 4, s1 = 8):
  %0 : f32[s0, s1] = add(%x, %b) {alpha=1}
  %1 : f32[s0, s1] = gelu(%0) {approximate="none"}
  %2 : f32[s0, s1] = mul(%1, %x) {alpha=1}
  %3 : f32[s0, 1] = mean(%x) {dims=[1], keepdim=true}
  return (%2, %3)
)");
  passes::fuse(*g);
  passes::lower_fusion_groups(*g);
  return g;
}

std::vector<const ir::Node*> fusion_groups(const ir::Graph& g) {
  std::vector<const ir::Node*> groups;
  for (const ir::Node* n : g.nodes())
    if (n->kind() == ir::NodeKind::FusionGroup) groups.push_back(n);
  return groups;
}

// Sizes around the vector width and the CUDA block, with and without a tail.
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{2, 3},    {3, 16},   {7, 17},
                                                         {64, 100}, {5, 1031}, {300, 257}};

// One call of a group at s0 = rows, s1 = cols: its arguments (inputs, then empty outputs), the
// eager results for its outputs, and the size parameters' values in launch order.
struct GroupCall {
  std::vector<Tensor> args;
  std::vector<Tensor> want;
  std::vector<int64_t> sizes;
};

GroupCall group_call(const ir::Graph& g, const ir::Node& group, int64_t rows, int64_t cols) {
  const kir::Kernel& k = *group.fusion_group().kernel;
  GroupCall c;
  Tensor x = randn({rows, cols}), b = randn({cols});
  for (const ir::Value* v : group.inputs())
    c.args.push_back(v == g.input(0) ? x : b);
  for (size_t j = 0; j < group.num_outputs(); ++j) {
    // The reduction's output is [s0, 1]; the pointwise chain's is [s0, s1].
    bool is_mean = group.output(j)->type().symbolic_sizes().back() == SymInt(1);
    c.want.push_back(is_mean ? mean(x, {1}, true) : gelu(x + b) * x);
    c.args.push_back(empty(c.want.back().sizes()));
  }
  for (kir::VarId v : k.sizes())
    c.sizes.push_back(k.vars[static_cast<size_t>(v)].name == "s0" ? rows : cols);
  return c;
}

void expect_outputs_match(const GroupCall& c, const std::vector<Tensor>& got, double tol) {
  ASSERT_EQ(got.size(), c.want.size());
  for (size_t j = 0; j < got.size(); ++j) {
    std::vector<float> g = got[j].to(kCPU).to_vector<float>();
    std::vector<float> ref = c.want[j].to_vector<float>();
    ASSERT_EQ(g.size(), ref.size());
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], ref[i], tol * (1 + std::abs(ref[i]))) << "output " << j << " " << i;
  }
}

#if KILN_WITH_LLVM
TEST(SymbolicKernel, OneLlvmKernelRunsAtEverySize) {
  auto g = lowered_graph();
  std::vector<const ir::Node*> groups = fusion_groups(*g);
  ASSERT_FALSE(groups.empty());
  for (const ir::Node* group : groups) {
    const kir::Kernel& k = *group->fusion_group().kernel;
    ASSERT_FALSE(k.sizes().empty()) << k.str();
    auto compiled = codegen::llvm_compile(k);
    for (auto [rows, cols] : kSizes) {
      SCOPED_TRACE(::testing::Message() << k.name << " at s0=" << rows << " s1=" << cols);
      GroupCall c = group_call(*g, *group, rows, cols);
      codegen::llvm_run(*compiled, k, kir::bind_arguments(k, c.args, "test"), c.sizes);
      std::vector<Tensor> got(c.args.begin() + static_cast<std::ptrdiff_t>(group->num_inputs()),
                              c.args.end());
      expect_outputs_match(c, got, 2e-6);
    }
  }
}
#endif

#if KILN_WITH_CUDA
namespace cuda = codegen::cuda;

// Every entry of a symbolic group's CUDA kernel says which size parameters its work is the
// product of, so the launcher sizes its grid per call; NVRTC compiles it once for every size.
TEST(SymbolicKernel, CudaEntriesTakeTheirWorkFromTheSizes) {
  if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC";
  auto g = lowered_graph();
  for (const ir::Node* group : fusion_groups(*g)) {
    const kir::Kernel& k = *group->fusion_group().kernel;
    cuda::CudaSource src = cuda::emit_cuda(k);
    ASSERT_FALSE(src.entries.empty()) << src.str();
    EXPECT_EQ(src.num_sizes, static_cast<int>(k.sizes().size()));
    for (auto [rows, cols] : kSizes) {
      GroupCall c = group_call(*g, *group, rows, cols);
      for (const cuda::CudaEntry& e : src.entries) {
        SCOPED_TRACE(src.str());
        ASSERT_FALSE(e.work_sizes.empty());
        // Elementwise entries walk every element of the [s0, s1] output; row entries one row
        // of s0 each (the mean's).
        int64_t want = e.mapping == cuda::Mapping::Elementwise ? rows * cols : rows;
        EXPECT_EQ(e.work_at(c.sizes), want) << e.symbol;
      }
    }
    std::shared_ptr<const cuda::CudaBinary> bin = cuda::cuda_build(k, 90);
    EXPECT_FALSE(bin->image.empty());
  }
}

TEST(SymbolicKernel, OneCudaKernelRunsAtEverySize) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Device gpu = Device::cuda(0);
  auto g = lowered_graph();
  for (const ir::Node* group : fusion_groups(*g)) {
    const kir::Kernel& k = *group->fusion_group().kernel;
    std::shared_ptr<const cuda::CudaKernel> compiled = cuda::cuda_compile(k, 0);
    for (auto [rows, cols] : kSizes) {
      SCOPED_TRACE(::testing::Message() << k.name << " at s0=" << rows << " s1=" << cols);
      GroupCall c = group_call(*g, *group, rows, cols);
      std::vector<Tensor> on_gpu;
      std::vector<void*> ptrs;
      for (const Tensor& t : c.args) {
        on_gpu.push_back(t.to(gpu));
        ptrs.push_back(on_gpu.back().impl()->data());
      }
      compiled->launch_sized(ptrs, c.sizes);
      std::vector<Tensor> got(on_gpu.begin() + static_cast<std::ptrdiff_t>(group->num_inputs()),
                              on_gpu.end());
      // The GPU's erf and the row sum's order differ from the host's by a few ulps.
      expect_outputs_match(c, got, 2e-5);
    }
  }
}
#endif

}  // namespace
}  // namespace kiln
