// kiln::compile against eager on every OpInfo sample: outputs, and gradients from
// autograd::grad on the compiled outputs (floating inputs require grad). Ops outside fusion
// groups run the same kernels as eager code, and a fused pointwise op instantiates the same math
// template, so most results are identical; the rest differ by rounding only: eager kernels let
// the compiler contract multiply-adds into FMAs, and a fused reduction sums in its own order.
// Those must be close (tolerances of the output's dtype, relative to the tensor's largest
// magnitude), and the test reports how many were bitwise equal. Each compiled function is called
// twice: the second call (a cache hit) gets the same signature with other floating values, which
// catches a value the capture baked in as a constant instead of reading it from the call's
// inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "kiln/base/cuda/driver.h"
#include "kiln/base/philox.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

// OpInfos whose outputs are uninitialized memory: compared for types only, since two calls of
// `empty` need not return the same bytes.
const std::set<std::string> kUninitializedOutputs = {"empty", "empty_like"};

int& samples_without_cuda_kernels();

struct Counts {
  int samples = 0;
  int forward_compared = 0;
  int types_only = 0;
  int backward_compared = 0;
  int eager_plans = 0;      // signatures compile() ran eagerly (reseeding or a data-dependent read)
  int tensors_bitwise = 0;  // compared tensors bitwise equal to eager
  int tensors_close = 0;    // compared tensors only within tolerance
};
Counts& counts() {
  static Counts c;
  return c;
}

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    const Counts& c = counts();
    if (c.samples == 0) return;
    std::printf(
        "[compile opinfo] %d samples compiled; forward compared %d (+%d types only), backward "
        "compared %d, each on two calls; %d ran eagerly (the sample reseeds the generator or reads "
        "data)\n",
        c.samples, c.forward_compared, c.types_only, c.backward_compared, c.eager_plans);
    std::printf("[compile opinfo] tensors: %d bitwise equal to eager, %d within tolerance\n",
                c.tensors_bitwise, c.tensors_close);
    if (samples_without_cuda_kernels() > 0)
      std::printf("[compile opinfo] %d CUDA samples reach an op with no CUDA kernel\n",
                  samples_without_cuda_kernels());
  }
};
[[maybe_unused]] auto* const kReport =
    ::testing::AddGlobalTestEnvironment(new ReportCounts());  // gtest owns it

// Bitwise equal, or within the tolerances of compiled code (within_compiled_tolerance).
::testing::AssertionResult matches_eager(const Tensor& got, const Tensor& want,
                                         kiln::DType computed_in) {
  ::testing::AssertionResult same = identical(got, want);
  if (same) {
    ++counts().tensors_bitwise;
    return same;
  }
  ::testing::AssertionResult close = within_compiled_tolerance(got, want, computed_in);
  if (close) ++counts().tensors_close;
  return close;
}

void expect_matches(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                    kiln::DType computed_in, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(matches_eager(got[i], want[i], computed_in)) << what << " " << i;
}

// Fresh leaves with the values of `inputs` scaled by `factor` (1: the same values): floating
// ones require grad; integer and bool ones (indices, masks) are kept as they are.
std::vector<Tensor> leaves(const std::vector<Tensor>& inputs, double factor) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!kiln::is_floating(t.dtype())) {
      out.push_back(t.detach());
      continue;
    }
    Tensor p = factor == 1.0 ? t.detach() : scaled_same_layout(t, factor);
    p.requires_grad_();
    out.push_back(p);
  }
  return out;
}

struct Result {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // one per floating input, undefined where no gradient flows
  kiln::GeneratorState rng_after{};
};

// Runs `call` on `inputs` from the generator state `rng`, then the gradients of its
// differentiable outputs w.r.t. the floating inputs with incoming gradients `gos` (made on the
// first run, when `gos` is empty, from the outputs' types).
Result run(const kiln::CompiledFunction::Fn& call, const std::vector<Tensor>& inputs,
           kiln::GeneratorState rng, std::vector<Tensor>& gos) {
  Result r;
  kiln::set_rng_state(rng);
  r.outputs = call(inputs);
  r.rng_after = kiln::get_rng_state();
  std::vector<Tensor> diff_outs, wrt;
  for (const Tensor& o : r.outputs) {
    if (o.requires_grad()) diff_outs.push_back(o);
  }
  for (const Tensor& t : inputs) {
    if (t.requires_grad()) wrt.push_back(t);
  }
  if (diff_outs.empty() || wrt.empty()) return r;
  if (gos.empty()) {
    uint32_t seed = 1000;
    for (const Tensor& o : diff_outs)
      gos.push_back(
          make_input(o.sizes(), o.dtype(), Layout::Contiguous, -1, 1, seed++).to(o.device()));
  }
  r.grads = kiln::autograd::grad(diff_outs, wrt, gos, false, false, /*allow_unused=*/true);
  return r;
}

// The result with its tensors copied to the host (a CUDA run's), where their values are
// compared; the copies are detached.
Result on_host(Result r) {
  for (std::vector<Tensor>* list : {&r.outputs, &r.grads}) {
    for (Tensor& t : *list) {
      if (t.defined() && !t.device().is_cpu()) t = t.detach().to(kiln::kCPU);
    }
  }
  return r;
}

void compare(const Result& compiled_result, const Result& eager_result, kiln::DType computed_in,
             const char* call) {
  SCOPED_TRACE(call);
  ASSERT_EQ(compiled_result.outputs.size(), eager_result.outputs.size());
  for (size_t i = 0; i < compiled_result.outputs.size(); ++i) {
    EXPECT_EQ(compiled_result.outputs[i].requires_grad(), eager_result.outputs[i].requires_grad())
        << "requires_grad of output " << i;
  }
  Result compiled = on_host(compiled_result), eager = on_host(eager_result);
  expect_matches(compiled.outputs, eager.outputs, computed_in, "output");
  expect_matches(compiled.grads, eager.grads, computed_in, "gradient of floating input");
  // A compiled call must advance the generator exactly as the eager call does.
  EXPECT_EQ(compiled.rng_after.seed, eager.rng_after.seed) << "generator seed after the call";
  EXPECT_EQ(compiled.rng_after.offset, eager.rng_after.offset) << "generator offset after the call";
}

// The sample's inputs on `device` (the same values; a CUDA copy is contiguous).
std::vector<Tensor> on_device(const std::vector<Tensor>& inputs, kiln::Device device) {
  if (device.is_cpu()) return inputs;
  std::vector<Tensor> out;
  for (const Tensor& t : inputs)
    out.push_back(t.defined() ? t.to(device) : t);
  return out;
}

void check_sample(const OpInfo& info, const Sample& sample, kiln::Device device = kiln::kCPU) {
  Sample s = sample;
  s.inputs = on_device(sample.inputs, device);
  kiln::CompiledFunction f = kiln::compile(s.call);
  ++counts().samples;
  // Both runs of a call start from the same generator state, as a user's manual_seed would.
  kiln::GeneratorState rng = {12345, 7};
  if (kUninitializedOutputs.count(info.name) != 0) {
    std::vector<Tensor> gos;
    Result c = run(f, leaves(s.inputs, 1.0), rng, gos);
    Result e = run(s.call, leaves(s.inputs, 1.0), rng, gos);
    ASSERT_EQ(c.outputs.size(), e.outputs.size());
    for (size_t i = 0; i < c.outputs.size(); ++i)
      EXPECT_EQ(kiln::ir::TensorType::of(c.outputs[i]), kiln::ir::TensorType::of(e.outputs[i]));
    ++counts().types_only;
    return;
  }
  std::vector<Tensor> gos;
  Result c1 = run(f, leaves(s.inputs, 1.0), rng, gos);
  Result e1 = run(s.call, leaves(s.inputs, 1.0), rng, gos);
  kiln::DType computed_in = least_precise_floating(s.inputs);
  compare(c1, e1, computed_in, "first call (compiles)");

  // Second call: same signature, other values for the inputs and the incoming gradients, and
  // another generator state.
  std::vector<Tensor> other_gos;
  for (const Tensor& g : gos)
    other_gos.push_back(scaled_same_layout(g, -1.5));
  kiln::GeneratorState rng2 = {777, 3};
  Result c2 = run(f, leaves(s.inputs, 0.75), rng2, other_gos);
  Result e2 = run(s.call, leaves(s.inputs, 0.75), rng2, other_gos);
  compare(c2, e2, computed_in, "second call (cache hit)");

  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_EQ(st.cache_hits, 1);
  if (st.eager_calls > 0) ++counts().eager_plans;
  ++counts().forward_compared;
  if (!e1.grads.empty()) ++counts().backward_compared;
}

class CompileOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(CompileOpInfo, CompiledMatchesEager) {
  const OpInfo& info = find_opinfo(GetParam());
  for_each_sample(info, [&](const Sample& s) { check_sample(info, s); });
}

INSTANTIATE_TEST_SUITE_P(Ops, CompileOpInfo, ::testing::ValuesIn(opinfo_names()), opinfo_test_name);

// The same on a CUDA device: compile() picks Backend::CUDA for CUDA inputs (Backend::Auto), its
// fusion groups become NVRTC kernels, and the results must be eager CUDA's. A sample that reaches
// an op with no CUDA kernel raises that op's "no CUDA kernel" error in eager mode; it is counted
// and left out, since there is nothing to compare with.
int& samples_without_cuda_kernels() {
  static int n = 0;
  return n;
}

class CudaCompileOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaCompileOpInfo, CompiledMatchesEagerOnCuda) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const OpInfo& info = find_opinfo(GetParam());
  for (const Sample& s : info.samples()) {
    SCOPED_TRACE(info.name + " / " + s.name + " on cuda:0");
    try {
      check_sample(info, s, kiln::Device::cuda(0));
    } catch (const kiln::Error& e) {
      if (std::string(e.what()).find("no CUDA kernel") != std::string::npos) {
        ++samples_without_cuda_kernels();
        continue;
      }
      ADD_FAILURE() << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaCompileOpInfo, ::testing::ValuesIn(opinfo_names()),
                         opinfo_test_name);

// Eager CUDA against eager CPU, each sample's call whole: every output (sort's indices, nonzero's
// positions and the data-dependent ops' sizes too) and the gradients of the floating inputs,
// from the same generator state (Philox draws the same numbers on both devices). The
// node-by-node comparison of cuda_eager_opinfo_test.cpp sees only first outputs and no
// backward, and cannot replay the ops that have no graph (advanced indexing, nonzero).
class CudaEagerCallOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaEagerCallOpInfo, WholeCallOnCudaMatchesCpu) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const OpInfo& info = find_opinfo(GetParam());
  if (kUninitializedOutputs.count(info.name) != 0) return;
  for (const Sample& s : info.samples()) {
    SCOPED_TRACE(info.name + " / " + s.name + ": cuda:0 against the cpu");
    kiln::GeneratorState rng = {12345, 7};
    std::vector<Tensor> gos;
    Result cpu = run(s.call, leaves(s.inputs, 1.0), rng, gos);
    std::vector<Tensor> device_gos;
    for (const Tensor& g : gos)
      device_gos.push_back(g.to(kiln::Device::cuda(0)));
    Result gpu;
    try {
      gpu = run(s.call, leaves(on_device(s.inputs, kiln::Device::cuda(0)), 1.0), rng, device_gos);
    } catch (const kiln::Error& e) {
      if (std::string(e.what()).find("no CUDA kernel") != std::string::npos) {
        ++samples_without_cuda_kernels();
        continue;
      }
      ADD_FAILURE() << e.what();
      continue;
    }
    compare(gpu, cpu, least_precise_floating(s.inputs), "eager on cuda:0 against eager on the cpu");
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaEagerCallOpInfo, ::testing::ValuesIn(opinfo_names()),
                         opinfo_test_name);

}  // namespace
}  // namespace kiln_test
