// Kernel counts of the fusion workloads (issue: passes, fusion and the kernel IR): each is
// compiled, run through the kernel-IR interpreter, compared with eager outputs and gradients,
// and its kernels per forward and backward call are checked against the targets. The test also
// prints each workload's ideal bytes per call (inputs read once, outputs written once).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "compile/compare.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
namespace ag = kiln::autograd;
using Fn = CompiledFunction::Fn;

int64_t bytes_of(const std::vector<Tensor>& ts) {
  int64_t b = 0;
  for (const Tensor& t : ts)
    b += t.numel() * static_cast<int64_t>(kiln::element_size(t.dtype()));
  return b;
}

struct Workload {
  Fn fn;
  std::vector<Tensor> inputs;
  std::vector<Tensor> wrt;  // what the backward differentiates with respect to
};

// Runs the workload compiled and eagerly (forward, then backward with random output grads),
// checks that they agree, and returns the compiled function for its stats.
CompiledFunction run_and_compare(const std::string& name, const Workload& w, double tol) {
  CompiledFunction f = kiln::compile(w.fn, kiln::CompileOptions{.name = name});
  std::vector<Tensor> eager = w.fn(w.inputs);
  std::vector<Tensor> compiled = f(w.inputs);
  expect_all_close(compiled, eager, tol, name + " output");
  std::vector<Tensor> gos;
  for (const Tensor& e : eager)
    gos.push_back(kiln::randn(e.sizes()));
  std::vector<Tensor> ge = ag::grad(eager, w.wrt, gos, false, false, true);
  std::vector<Tensor> gc = ag::grad(compiled, w.wrt, gos, false, false, true);
  expect_all_close(gc, ge, tol, name + " gradient");

  kiln::CompileStats st = f.stats();
  int64_t fwd_bytes = bytes_of(w.inputs) + bytes_of(eager);
  int64_t bwd_bytes = bytes_of(gos) + bytes_of(ge);
  std::cout << "[fusion] " << name << ": forward " << st.forward_kernels << " kernel(s), backward "
            << st.backward_kernels << " kernel(s); ideal bytes per call: forward " << fwd_bytes
            << ", backward " << bwd_bytes << " + saved " << st.saved_bytes << "\n";
  return f;
}

Tensor gelu_tanh_composite(const Tensor& x) {
  Tensor inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / M_PI);
  return x * 0.5 * (kiln::tanh(inner) + 1.0);
}

TEST(FusionKernels, GeluTanhChainIsOneKernelEachWay) {
  kiln::manual_seed(21);
  Tensor x = param({32, 64});
  Workload w{
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu_tanh_composite(in[0])}; },
      {x},
      {x}};
  CompiledFunction f = run_and_compare("gelu_tanh", w, kPointwiseTol);
  EXPECT_EQ(f.stats().forward_kernels, 1);
  EXPECT_EQ(f.stats().backward_kernels, 1);
}

TEST(FusionKernels, CompositeLayerNorm) {
  kiln::manual_seed(22);
  Tensor gamma = param({64}), beta = param({64});
  Tensor x = param({16, 64});
  Workload w{[&](const std::vector<Tensor>& in) {
               const Tensor& v = in[0];
               Tensor mu = kiln::mean(v, {-1}, true);
               Tensor centered = v - mu;
               Tensor var = kiln::mean(centered * centered, {-1}, true);
               Tensor normed = centered / kiln::sqrt(var + 1e-5);
               return std::vector<Tensor>{normed * gamma + beta};
             },
             {x},
             {x, gamma, beta}};
  CompiledFunction f = run_and_compare("layer_norm", w, kReductionTol);
  EXPECT_LE(f.stats().forward_kernels, 2);
  EXPECT_LE(f.stats().backward_kernels, 3);
}

TEST(FusionKernels, CompositeSoftmax) {
  kiln::manual_seed(23);
  Tensor x = param({16, 64});
  Workload w{[](const std::vector<Tensor>& in) {
               Tensor e = kiln::exp(in[0] - kiln::amax(in[0], {-1}, true));
               return std::vector<Tensor>{e / kiln::sum(e, {-1}, true)};
             },
             {x},
             {x}};
  CompiledFunction f = run_and_compare("softmax", w, kReductionTol);
  EXPECT_LE(f.stats().forward_kernels, 2);
  EXPECT_LE(f.stats().backward_kernels, 2);
}

TEST(FusionKernels, BiasGeluResidual) {
  kiln::manual_seed(24);
  Tensor b = param({64});
  Tensor x = param({16, 64}), r = param({16, 64});
  Workload w{[&](const std::vector<Tensor>& in) {
               return std::vector<Tensor>{kiln::gelu(in[0] + b, "tanh") + in[1]};
             },
             {x, r},
             {x, r, b}};
  CompiledFunction f = run_and_compare("bias_gelu_residual", w, kPointwiseTol);
  EXPECT_EQ(f.stats().forward_kernels, 1);
  EXPECT_LE(f.stats().backward_kernels, 2);
}

// The matmul stays an external call; its bias add and activation run as one kernel after it.
TEST(FusionKernels, MatmulEpilogueIsOneKernel) {
  kiln::manual_seed(25);
  Tensor w1 = param({32, 16}, 0.3), b1 = param({32});
  Tensor x = param({8, 16});
  Workload w{[&](const std::vector<Tensor>& in) {
               return std::vector<Tensor>{kiln::relu(kiln::linear(in[0], w1, b1)) * 2.0};
             },
             {x},
             {x, w1, b1}};
  CompiledFunction f = run_and_compare("linear_relu", w, kReductionTol);
  EXPECT_EQ(f.stats().forward_kernels, 2);  // mm, then bias + relu + scale
}

}  // namespace
}  // namespace kiln_test

namespace kiln_test {
namespace {

// A fused comparison against a wider zero-dim tensor compares in result_type, as eager does:
// f32 0.1f == f64 0.1 holds after 0.1 is rounded to float32, and fails if compared in float64.
TEST(FusionKernels, ComparisonWithZeroDimOperandUsesResultType) {
  Tensor x = kiln::full({4}, 0.1, kiln::kFloat32);
  Tensor y = kiln::full({}, 0.1, kiln::kFloat64);
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{kiln::eq(in[0], in[1])}; };
  CompiledFunction f = kiln::compile(fn);
  std::vector<Tensor> got = f({x, y});
  EXPECT_EQ(f.stats().forward_kernels, 1);
  EXPECT_EQ(got[0].to_vector<bool>(), std::vector<bool>(4, true));
  EXPECT_EQ(fn({x, y})[0].to_vector<bool>(), std::vector<bool>(4, true));
}

}  // namespace
}  // namespace kiln_test
