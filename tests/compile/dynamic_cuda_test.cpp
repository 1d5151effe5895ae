// Symbolic plans on a CUDA device (docs/dynamic_shapes.md): one plan, traced at the first call's
// sizes with dynamic=True, trains at other batch sizes with the same CUDA kernels, whose grids
// follow each call's sizes (CudaEntry::work_sizes), and every loss and gradient matches eager
// CUDA. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "compile/compare.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
using Fn = CompiledFunction::Fn;

TEST(DynamicCuda, OneSymbolicPlanTrainsAtEveryBatchSize) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const kiln::Device gpu = kiln::Device::cuda(0);
  kiln::manual_seed(40);
  const int64_t d = 32;
  auto on_gpu = [&](const Tensor& t) { return t.to(gpu).requires_grad_(); };
  std::vector<Tensor> params{on_gpu(kiln::ones({d})), on_gpu(kiln::zeros({d})),
                             on_gpu(kiln::randn({4 * d, d}) * (1 / std::sqrt(double(d)))),
                             on_gpu(kiln::randn({4 * d}) * 0.1),
                             on_gpu(kiln::randn({d, 4 * d}) * (0.5 / std::sqrt(4.0 * d)))};
  // A pre-LayerNorm MLP block with a residual and a softmax over its features, regressing a
  // target: layer_norm, gelu and the softmax are fused groups over the batch symbol.
  Fn loss = [&](const std::vector<Tensor>& in) {
    Tensor h = kiln::layer_norm(in[0], {d}, params[0], params[1]);
    Tensor y =
        in[0] + kiln::linear(kiln::gelu(kiln::linear(h, params[2], params[3]), "tanh"), params[4]);
    return std::vector<Tensor>{kiln::mse_loss(kiln::softmax(y, -1) * 8.0, in[1])};
  };
  auto step = [&](const Fn& f, const std::vector<Tensor>& batch) {
    for (const Tensor& p : params)
      p.mutable_grad() = Tensor();
    Tensor l = f(batch)[0];
    l.backward();
    std::vector<Tensor> out{l.detach().to(kiln::kCPU)};
    for (const Tensor& p : params)
      out.push_back(p.grad().to(kiln::kCPU));
    return out;
  };
  CompiledFunction f = kiln::compile(loss, {.name = "mlp_block", .dynamic = true});
  for (int64_t batch : {24, 7, 300, 64, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<Tensor> in{kiln::randn({batch, d}).to(gpu), kiln::randn({batch, d}).to(gpu)};
    expect_all_close(step(f, in), step(loss, in), kReductionTol,
                     "loss, then each parameter's gradient");
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1) << f.dump();
  EXPECT_EQ(st.eager_calls, 0);
  EXPECT_GE(st.forward_kernels, 2) << f.dump();
  EXPECT_NE(f.dump().find("symbolic sizes"), std::string::npos) << f.dump();
  std::printf("[dynamic cuda] one plan for 5 batch sizes: %lld forward and %lld backward kernels\n",
              static_cast<long long>(st.forward_kernels),
              static_cast<long long>(st.backward_kernels));
}

}  // namespace
}  // namespace kiln_test
