// The built-in end-to-end models (frontend/models.h) trained for a few SGD steps on a CUDA
// device, eagerly and through kiln::compile, next to the same model trained eagerly on the CPU
// from the same parameters and batches: eager CUDA must track the CPU (the matrix products sum in
// another order, so to a tolerance), and compiled CUDA must track eager CUDA. Skips without a
// device.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "compile/compare.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/frontend/models.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace models = kiln::models;

// The loss of one step and the parameters' gradients, copied to the host.
struct Step {
  Tensor loss;
  std::vector<Tensor> grads;
};

Step train_step(const models::Model& m, const kiln::CompiledFunction::Fn& loss_fn, int64_t step) {
  Tensor loss = loss_fn(m.batch(step))[0];
  kiln::autograd::backward({loss});
  Step s{loss.detach().to(kiln::kCPU), {}};
  for (const Tensor& p : m.params)
    s.grads.push_back(p.grad().to(kiln::kCPU));
  models::sgd_step(m.params, 0.05);
  return s;
}

void expect_steps_close(const Step& got, const Step& want, double rtol, const char* what) {
  EXPECT_TRUE(close(got.loss, want.loss, rtol)) << what << ": loss";
  expect_all_close(got.grads, want.grads, rtol, std::string(what) + ": gradient of parameter");
}

class CudaModels : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaModels, EagerCudaTracksTheCpuAndCompiledCudaTracksEagerCuda) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const kiln::Device gpu = kiln::Device::cuda(0);
  models::Model cpu = models::make_model(GetParam(), 7);
  models::Model eager = models::make_model(GetParam(), 7, gpu);
  models::Model compiled = models::make_model(GetParam(), 7, gpu);
  kiln::CompiledFunction f = kiln::compile(compiled.loss);
  for (int64_t step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Step c = train_step(cpu, cpu.loss, step);
    Step e = train_step(eager, eager.loss, step);
    Step k = train_step(
        compiled, [&](const std::vector<Tensor>& in) { return f(in); }, step);
    expect_steps_close(e, c, kReductionTol, "eager cuda vs cpu");
    expect_steps_close(k, e, kReductionTol, "compiled cuda vs eager cuda");
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_EQ(st.eager_calls, 0);
  std::printf("[cuda models] %s: %lld forward and %lld backward kernels a step compiled\n",
              GetParam().c_str(), static_cast<long long>(st.forward_kernels),
              static_cast<long long>(st.backward_kernels));
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModels, ::testing::ValuesIn(models::model_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace kiln_test
