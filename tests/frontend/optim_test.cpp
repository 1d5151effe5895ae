// kiln::optim: SGD, Adam and AdamW against straightforward float64 loops of torch.optim's
// update rules, the compiled multi-tensor kernel against the tensor-op path (to the bit:
// Note [Optimizer math is written once]), learning-rate schedules without recompiles, skipped
// parameters, in-place state and torch's argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "kiln/config.h"
#include "kiln/kiln.h"
#include "runtime/cuda_test_util.h"
#include "test_util.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;
namespace optim = kiln::optim;

// Sizes around the kernel's chunk (Note [Multi-tensor kernels]): one element, a vector tail, one
// chunk and a bit, and several chunks.
const std::vector<int64_t> kSizes = {1, 17, (int64_t{1} << 14) + 3, 3 * (int64_t{1} << 14)};

std::vector<Tensor> make_params(kiln::DType dtype, uint64_t seed) {
  kiln::manual_seed(seed);
  std::vector<Tensor> params;
  for (int64_t n : kSizes)
    params.push_back(kiln::randn({n}, dtype));
  params.push_back(kiln::randn({5, 7}, dtype));
  return params;
}

// Gradients for step `step`: every parameter but the skipped one (undefined .grad) gets one.
void set_grads(const std::vector<Tensor>& params, int step, int64_t skipped) {
  kiln::manual_seed(1000 + static_cast<uint64_t>(step));
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = kiln::randn(params[i].sizes(), params[i].dtype());
    params[i].mutable_grad() = static_cast<int64_t>(i) == skipped ? Tensor() : g;
  }
}

std::vector<std::vector<double>> values(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts)
    out.push_back(t.to(kiln::kFloat64).to_vector<double>());
  return out;
}

// torch.optim.SGD's rule over float64 values, one parameter.
struct SgdReference {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  std::vector<double> buf;
  void step(std::vector<double>& p, const std::vector<double>& g) {
    bool first = buf.empty();
    if (first) buf.assign(p.size(), 0.0);
    for (size_t k = 0; k < p.size(); ++k) {
      double d = g[k] + weight_decay * p[k];
      if (momentum != 0) {
        buf[k] = first ? d : momentum * buf[k] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[k] : buf[k];
      }
      p[k] -= lr * d;
    }
  }
};

// torch.optim.Adam's (and AdamW's) rule over float64 values, one parameter.
struct AdamReference {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;
  std::vector<double> m, v;
  int64_t t = 0;
  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t k = 0; k < p.size(); ++k) {
      double d = g[k];
      if (decoupled) {
        p[k] *= 1 - lr * weight_decay;
      } else {
        d += weight_decay * p[k];
      }
      m[k] = beta1 * m[k] + (1 - beta1) * d;
      v[k] = beta2 * v[k] + (1 - beta2) * d * d;
      double m_hat = m[k] / (1 - std::pow(beta1, static_cast<double>(t)));
      double v_hat = v[k] / (1 - std::pow(beta2, static_cast<double>(t)));
      p[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// Runs `steps` steps of `opt` over `params` (a different learning rate each step, one parameter
// without a gradient on odd steps) and the same steps of the per-parameter references.
template <class Reference>
void check_against_reference(optim::Optimizer& opt, const std::vector<Tensor>& params,
                             std::vector<Reference> refs, double tolerance) {
  std::vector<std::vector<double>> expected = values(params);
  for (int step = 0; step < 4; ++step) {
    double lr = 0.01 * (step + 1);
    opt.set_lr(lr);
    int64_t skipped = step % 2 == 1 ? 1 : -1;
    set_grads(params, step, skipped);
    std::vector<std::vector<double>> grads;
    for (const Tensor& p : params)
      grads.push_back(p.grad().defined() ? p.grad().to(kiln::kFloat64).to_vector<double>()
                                         : std::vector<double>{});
    opt.step();
    for (size_t i = 0; i < params.size(); ++i) {
      if (static_cast<int64_t>(i) == skipped) continue;
      refs[i].lr = lr;
      refs[i].step(expected[i], grads[i]);
    }
    std::vector<std::vector<double>> got = values(params);
    for (size_t i = 0; i < params.size(); ++i) {
      for (size_t k = 0; k < got[i].size(); ++k) {
        ASSERT_NEAR(got[i][k], expected[i][k], tolerance * (1 + std::abs(expected[i][k])))
            << "step " << step << ", parameter " << i << ", element " << k;
      }
    }
  }
}

struct SgdCase {
  double momentum, dampening, weight_decay;
  bool nesterov;
};
const std::vector<SgdCase> kSgdCases = {
    {0, 0, 0, false}, {0.9, 0, 0, false}, {0.9, 0.1, 1e-2, false}, {0.9, 0, 1e-2, true}};

optim::SGDOptions sgd_options(const SgdCase& c, std::optional<bool> fused) {
  return optim::SGDOptions(0.01)
      .momentum(c.momentum)
      .dampening(c.dampening)
      .weight_decay(c.weight_decay)
      .nesterov(c.nesterov)
      .fused(fused);
}

TEST(Optim, SgdMatchesTorchsRuleOnBothPaths) {
  for (std::optional<bool> fused : {std::optional<bool>(false), std::optional<bool>()}) {
    for (const SgdCase& c : kSgdCases) {
      SCOPED_TRACE(::testing::Message() << "momentum " << c.momentum << " nesterov " << c.nesterov
                                        << " fused " << (fused ? "false" : "unset"));
      std::vector<Tensor> params = make_params(kiln::kFloat64, 1);
      optim::SGD opt(params, sgd_options(c, fused));
      std::vector<SgdReference> refs(
          params.size(), {0.01, c.momentum, c.dampening, c.weight_decay, c.nesterov, {}});
      check_against_reference(opt, params, refs, 1e-12);
      EXPECT_EQ(opt.last_step_compiled(), fused != false && KILN_WITH_LLVM);
    }
  }
}

TEST(Optim, AdamAndAdamWMatchTorchsRuleOnBothPaths) {
  for (std::optional<bool> fused : {std::optional<bool>(false), std::optional<bool>()}) {
    for (bool decoupled : {false, true}) {
      for (double weight_decay : {0.0, 0.05}) {
        SCOPED_TRACE(::testing::Message()
                     << "decoupled " << decoupled << " weight_decay " << weight_decay);
        std::vector<Tensor> params = make_params(kiln::kFloat64, 2);
        std::unique_ptr<optim::Optimizer> opt;
        if (decoupled) {
          optim::AdamWOptions o(0.01);
          o.weight_decay(weight_decay).betas({0.8, 0.99}).fused(fused);
          opt = std::make_unique<optim::AdamW>(params, o);
        } else {
          opt = std::make_unique<optim::Adam>(
              params,
              optim::AdamOptions(0.01).weight_decay(weight_decay).betas({0.8, 0.99}).fused(fused));
        }
        std::vector<AdamReference> refs(params.size(),
                                        {0.01, 0.8, 0.99, 1e-8, weight_decay, decoupled, {}, {}});
        check_against_reference(*opt, params, refs, 1e-11);
        EXPECT_EQ(opt->last_step_compiled(), fused != false && KILN_WITH_LLVM);
        EXPECT_EQ(opt->step_count(0), 4);
        EXPECT_EQ(opt->step_count(1), 2);  // skipped on the odd steps
      }
    }
  }
}

// The kernel and the tensor ops run the same float32 operations: equal bits, state included.
TEST(Optim, TheCompiledStepEqualsTheTensorOpStepToTheBit) {
  if (!KILN_WITH_LLVM) GTEST_SKIP() << "this build has no LLVM backend";
  auto run =
      [](const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, bool)>& make,
         bool fused) {
        std::vector<Tensor> params = make_params(kiln::kFloat32, 3);
        std::unique_ptr<optim::Optimizer> opt = make(params, fused);
        for (int step = 0; step < 3; ++step) {
          opt->set_lr(1e-3 * (step + 1));
          set_grads(params, step, step == 1 ? 2 : -1);
          opt->step();
          EXPECT_EQ(opt->last_step_compiled(), fused);
        }
        std::vector<Tensor> all = params;
        for (size_t i = 0; i < params.size(); ++i)
          for (const Tensor& s : opt->state(i))
            all.push_back(s);
        return values(all);
      };
  std::vector<std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, bool)>> makers;
  for (const SgdCase& c : kSgdCases) {
    makers.push_back([c](std::vector<Tensor> p, bool fused) {
      return std::make_unique<optim::SGD>(std::move(p), sgd_options(c, fused));
    });
  }
  makers.push_back([](std::vector<Tensor> p, bool fused) {
    return std::make_unique<optim::Adam>(std::move(p),
                                         optim::AdamOptions().weight_decay(0.01).fused(fused));
  });
  makers.push_back([](std::vector<Tensor> p, bool fused) {
    optim::AdamWOptions o;
    o.fused(fused);
    return std::make_unique<optim::AdamW>(std::move(p), o);
  });
  for (size_t m = 0; m < makers.size(); ++m) {
    SCOPED_TRACE(::testing::Message() << "optimizer " << m);
    EXPECT_EQ(run(makers[m], true), run(makers[m], false));
  }
}

#if KILN_WITH_LLVM
TEST(Optim, ALearningRateScheduleNeverRecompiles) {
  std::vector<Tensor> params = make_params(kiln::kFloat32, 4);
  optim::Adam opt(params, optim::AdamOptions(1e-3).fused(true));
  set_grads(params, 0, -1);
  opt.step();
  int64_t compiles = kiln::codegen::llvm_cache_stats().compiles +
                     kiln::codegen::llvm_cache_stats().disk_hits +
                     kiln::codegen::llvm_cache_stats().memory_hits;
  for (int step = 1; step < 6; ++step) {
    opt.set_lr(1e-3 / step);
    set_grads(params, step, -1);
    opt.step();
  }
  kiln::codegen::LlvmCacheStats after = kiln::codegen::llvm_cache_stats();
  EXPECT_EQ(after.compiles + after.disk_hits + after.memory_hits, compiles);
}
#endif

TEST(Optim, StateIsUpdatedInPlaceAndVersionsAdvance) {
  std::vector<Tensor> params = make_params(kiln::kFloat32, 5);
  optim::Adam opt(params);
  EXPECT_TRUE(opt.state(0).empty());
  set_grads(params, 0, -1);
  uint32_t version = params[0].version();
  void* data = params[0].raw_data();
  opt.step();
  ASSERT_EQ(opt.state(0).size(), 2u);
  void* exp_avg = opt.state(0)[0].raw_data();
  EXPECT_GT(params[0].version(), version);
  set_grads(params, 1, -1);
  opt.step();
  EXPECT_EQ(opt.state(0)[0].raw_data(), exp_avg);
  EXPECT_EQ(params[0].raw_data(), data);
}

TEST(Optim, ZeroGradResetsToNoneOrZeros) {
  std::vector<Tensor> params = make_params(kiln::kFloat32, 6);
  optim::SGD opt(params);
  set_grads(params, 0, 1);
  Tensor held = params[0].grad();
  opt.zero_grad(false);
  EXPECT_EQ(params[0].grad().to_vector<float>(), std::vector<float>(1, 0.0f));
  EXPECT_TRUE(params[0].grad().is_same(held));  // zeroed in place
  EXPECT_FALSE(params[1].grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(params[0].grad().defined());
}

// A strided parameter cannot be addressed by the kernel: tensor ops by default, an error with
// fused(true). A strided gradient is made contiguous.
TEST(Optim, StridedTensorsTakeTheTensorOpPathOrRefuseFused) {
  Tensor strided = kiln::randn({6, 4}).t();
  {
    optim::SGD opt({strided}, optim::SGDOptions(0.1));
    Tensor before = strided.clone();
    strided.mutable_grad() = kiln::ones({4, 6});
    opt.step();
    EXPECT_FALSE(opt.last_step_compiled());
    std::vector<float> expected = (before - 0.1).to_vector<float>();
    EXPECT_EQ(strided.to_vector<float>(), expected);
  }
  optim::SGD opt({strided}, optim::SGDOptions(0.1).fused(true));
  strided.mutable_grad() = kiln::ones({4, 6});
  EXPECT_TRUE(
      throws_error_containing([&] { opt.step(); }, {"SGD", "fused=True", "not contiguous"}));
  if (KILN_WITH_LLVM) {
    Tensor p = kiln::zeros({4, 6});
    optim::SGD contiguous({p}, optim::SGDOptions(0.5));
    p.mutable_grad() = kiln::ones({6, 4}).t();
    contiguous.step();
    EXPECT_TRUE(contiguous.last_step_compiled());
    EXPECT_EQ(p.to_vector<float>(), std::vector<float>(24, -0.5f));
  }
}

TEST(Optim, BadArgumentsThrowTorchsErrors) {
  Tensor p = kiln::zeros({3});
  EXPECT_TRUE(throws_error_containing([&] { optim::SGD({p}, optim::SGDOptions(-1)); },
                                      {"SGD", "Invalid learning rate: -1"}));
  EXPECT_TRUE(
      throws_error_containing([&] { optim::SGD({p}, optim::SGDOptions().nesterov(true)); },
                              {"Nesterov momentum requires a momentum and zero dampening"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.999}));
      },
      {"Adam", "Invalid beta parameter at index 0: 1"}));
  EXPECT_TRUE(throws_error_containing([&] { optim::AdamW({p}, optim::AdamWOptions().eps(-1)); },
                                      {"AdamW", "Invalid epsilon value"}));
  EXPECT_TRUE(throws_error_containing([&] { optim::Adam({}); }, {"empty parameter list"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        optim::Adam({p, p});
      },
      {"parameter 1 is the same tensor as parameter 0"}));
  Tensor leaf = kiln::ones({3}).requires_grad_();
  Tensor non_leaf = leaf * 2;
  EXPECT_TRUE(throws_error_containing([&] { optim::SGD({non_leaf}); },
                                      {"can't optimize a non-leaf Tensor"}));
  optim::Adam opt({p});
  p.mutable_grad() = kiln::ones({4});
  EXPECT_TRUE(throws_error_containing([&] { opt.step(); },
                                      {"Adam", "gradient of parameter 0 has shape [4]"}));
  EXPECT_TRUE(throws_error_containing([&] { opt.set_lr(-0.5); }, {"Invalid learning rate"}));
}

// CUDA parameters take the tensor-op path, on the device; fused(true) says why it cannot.
TEST(Optim, AdamOnACudaDeviceMatchesTheCpu) {
  KILN_REQUIRE_CUDA_DEVICE();
  std::vector<Tensor> cpu = make_params(kiln::kFloat32, 8), gpu;
  for (const Tensor& p : cpu)
    gpu.push_back(p.to(kiln_test::kGpu));
  optim::AdamW on_cpu(cpu, optim::AdamWOptions(0.01)), on_gpu(gpu, optim::AdamWOptions(0.01));
  for (int step = 0; step < 3; ++step) {
    set_grads(cpu, step, -1);
    for (size_t i = 0; i < cpu.size(); ++i)
      gpu[i].mutable_grad() = cpu[i].grad().to(kiln_test::kGpu);
    on_cpu.step();
    on_gpu.step();
  }
  EXPECT_FALSE(on_gpu.last_step_compiled());
  std::vector<std::vector<double>> want = values(cpu);
  for (size_t i = 0; i < gpu.size(); ++i) {
    std::vector<double> got = gpu[i].to(kiln::kCPU).to(kiln::kFloat64).to_vector<double>();
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_NEAR(got[k], want[i][k], 1e-6) << "parameter " << i << ", element " << k;
  }
  optim::Adam fused(gpu, optim::AdamOptions().fused(true));
  EXPECT_TRUE(throws_error_containing([&] { fused.step(); }, {"fused=True", "is on cuda:0"}));
}

// A model trained with Adam, its gradients from backward: the loss falls.
TEST(Optim, AdamTrainsALinearRegression) {
  kiln::manual_seed(7);
  Tensor x = kiln::randn({64, 8});
  Tensor w_true = kiln::randn({8, 1});
  Tensor y = kiln::matmul(x, w_true);
  Tensor w = kiln::zeros({8, 1}).requires_grad_();
  Tensor b = kiln::zeros({1}).requires_grad_();
  optim::Adam opt({w, b}, optim::AdamOptions(0.1));
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = kiln::mse_loss(kiln::matmul(x, w) + b, y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first * 1e-3);
}

}  // namespace
