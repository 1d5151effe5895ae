// A fusion group of a symbolic graph (Note [Symbolic types]) compiled once by the LLVM backend
// runs at every value of its symbols and matches the eager ops there (Note [Size parameters]).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/config.h"
#include "kiln/ir/parser.h"
#include "kiln/kiln.h"
#include "kiln/passes/fuse.h"
#include "kiln/passes/lower_fusion_group.h"
#include "kiln/runtime/kernel_args.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln {
namespace {

#if KILN_WITH_LLVM
// x [s0, s1], b [s1] -> (gelu(x + b) * x, the row means of x): a pointwise chain with its
// vectorized inner loop and parallel outer loop, and a reduction over a row of length s1.
TEST(SymbolicKernel, OneLlvmKernelRunsAtEverySize) {
  auto g = ir::parse(R"(graph(%x : f32[s0, s1], %b : f32[s1]) symbols(s0 = 4, s1 = 8):
  %0 : f32[s0, s1] = add(%x, %b) {alpha=1}
  %1 : f32[s0, s1] = gelu(%0) {approximate="none"}
  %2 : f32[s0, s1] = mul(%1, %x) {alpha=1}
  %3 : f32[s0, 1] = mean(%x) {dims=[1], keepdim=true}
  return (%2, %3)
)");
  passes::fuse(*g);
  passes::lower_fusion_groups(*g);
  std::vector<const ir::Node*> groups;
  for (const ir::Node* n : g->nodes())
    if (n->kind() == ir::NodeKind::FusionGroup) groups.push_back(n);
  ASSERT_FALSE(groups.empty());
  for (const ir::Node* group : groups) {
    const kir::Kernel& k = *group->fusion_group().kernel;
    ASSERT_FALSE(k.sizes().empty()) << k.str();
    auto compiled = codegen::llvm_compile(k);
    // Sizes around the vector width, with and without a tail.
    for (auto [rows, cols] :
         std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {3, 16}, {7, 17}, {64, 100}, {5, 1031}}) {
      SCOPED_TRACE(::testing::Message() << k.name << " at s0=" << rows << " s1=" << cols);
      Tensor x = randn({rows, cols}), b = randn({cols});
      std::vector<Tensor> args;
      for (const ir::Value* v : group->inputs())
        args.push_back(v == g->input(0) ? x : b);
      std::vector<Tensor> want;
      for (size_t j = 0; j < group->num_outputs(); ++j) {
        // The reduction's output is [s0, 1]; the pointwise chain's is [s0, s1].
        bool is_mean = group->output(j)->type().symbolic_sizes().back() == SymInt(1);
        want.push_back(is_mean ? mean(x, {1}, true) : gelu(x + b) * x);
        args.push_back(empty(want.back().sizes()));
      }
      std::vector<int64_t> sizes;
      for (kir::VarId v : k.sizes()) {
        const std::string& name = k.vars[static_cast<size_t>(v)].name;
        sizes.push_back(name == "s0" ? rows : cols);
      }
      codegen::llvm_run(*compiled, k, kir::bind_arguments(k, args, "test"), sizes);
      for (size_t j = 0; j < want.size(); ++j) {
        std::vector<float> got = args[group->num_inputs() + j].to_vector<float>();
        std::vector<float> ref = want[j].to_vector<float>();
        ASSERT_EQ(got.size(), ref.size());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], ref[i], 2e-6 * (1 + std::abs(ref[i]))) << "output " << j << " " << i;
      }
    }
  }
}
#endif

}  // namespace
}  // namespace kiln
