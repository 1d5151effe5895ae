// KILN_DEBUG_DIR's repro (Note [Repro]) and the per-stage dumps: the repro's recorded outputs
// equal an eager run of the same function computed here, and its joint graph replays to them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/philox.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace fs = std::filesystem;

fs::path fresh_dir(const char* tag) {
  static std::atomic<int> n{0};
  fs::path root =
      fs::temp_directory_path() /
      (std::string("kiln_") + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  fs::remove_all(root);
  return root;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> a = got.detach().to_vector<double>(), b = want.detach().to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << "element " << i;
}

// Dropout (random), a lifted parameter, an in-place write into an argument, two differentiable
// outputs (each gets a tangent of ones in the repro).
struct Case {
  Tensor w = kiln::randn({6, 4}).requires_grad_();
  kiln::CompiledFunction::Fn fn() const {
    Tensor w_ = w;
    return [w_](const std::vector<Tensor>& in) {
      Tensor h = kiln::dropout(kiln::tanh(kiln::matmul(in[0], w_)), 0.25, true);
      in[1].mul_(2.0);
      return std::vector<Tensor>{(h * h).sum(), kiln::amax(h, {1})};
    };
  }
};

TEST(DebugDir, ReproRecordsWhatEagerComputesAndReplaysToIt) {
  kiln::manual_seed(11);
  Case c;
  Tensor x = kiln::randn({5, 6}).requires_grad_(), acc = kiln::randn({3});
  Tensor x0 = x.detach().clone(), acc0 = acc.detach().clone();
  fs::path root = fresh_dir("repro");
  kiln::CompiledFunction f = kiln::compile(c.fn(), {.debug_dir = root.string(), .name = "r"});
  kiln::manual_seed(99);
  kiln::GeneratorState before = kiln::get_rng_state();
  std::vector<Tensor> out = f({x, acc});
  kiln::autograd::backward(out, {kiln::ones({}), kiln::ones({5})});
  kiln::GeneratorState after_compiled = kiln::get_rng_state();

  // The eager reference: the same function from the same generator state on fresh copies.
  Tensor xe = x0.clone().requires_grad_(), acce = acc0.clone();
  Tensor we = c.w.detach().clone().requires_grad_();
  Case eager_case;  // draws its own w, replaced: the generator is reset after this
  eager_case.w = we;
  kiln::set_rng_state(before);
  std::vector<Tensor> eager = eager_case.fn()({xe, acce});
  kiln::autograd::backward(eager, {kiln::ones({}), kiln::ones({5})});
  kiln::GeneratorState after_eager = kiln::get_rng_state();

  fs::path dir = root / "r" / "signature_0";
  kiln::TensorFile inputs = kiln::load_tensors((dir / "repro.inputs").string());
  kiln::TensorFile outputs = kiln::load_tensors((dir / "repro.outputs").string());
  // Inputs: x, acc (before the write), w (lifted), the tangents of ones for both outputs.
  ASSERT_EQ(inputs.tensors.size(), 5u);
  expect_close(inputs.tensors[0], x0, 0, "x");
  expect_close(inputs.tensors[1], acc0, 0, "acc as it was before the call wrote it");
  expect_close(inputs.tensors[2], c.w, 0, "w");
  expect_close(inputs.tensors[3], kiln::ones({}), 0, "tangent 0");
  expect_close(inputs.tensors[4], kiln::ones({5}), 0, "tangent 1");
  // Outputs: the two forward outputs, the write-back, then dx and dw.
  ASSERT_EQ(outputs.tensors.size(), 5u);
  expect_close(out[0], eager[0], 1e-5, "the call's loss");
  expect_close(outputs.tensors[0], eager[0], 1e-5, "loss");
  expect_close(outputs.tensors[1], eager[1], 1e-5, "amax");
  expect_close(outputs.tensors[2], acce, 1e-6, "write-back");
  expect_close(outputs.tensors[3], xe.grad(), 1e-5, "dx");
  expect_close(outputs.tensors[4], we.grad(), 1e-5, "dw");

  // The joint graph, parsed back from repro.kir, replays with eager kernels to the same values.
  std::shared_ptr<kiln::ir::Graph> g = kiln::ir::parse(read(dir / "repro.kir"));
  kiln::ir::verify(*g);
  std::vector<Tensor> replay = kiln::interpret(*g, inputs.tensors);
  ASSERT_EQ(replay.size(), outputs.tensors.size());
  for (size_t i = 0; i < replay.size(); ++i)
    expect_close(replay[i], outputs.tensors[i], 1e-5, "replayed output " + std::to_string(i));
  // Recording the repro left the caller's generator where an eager call leaves it.
  EXPECT_EQ(after_compiled.offset, after_eager.offset);
  EXPECT_EQ(after_compiled.seed, after_eager.seed);
  fs::remove_all(root);
}

TEST(DebugDir, HoldsEveryStageAndNothingForAnEagerSignature) {
  kiln::manual_seed(12);
  Case c;
  fs::path root = fresh_dir("layout");
  kiln::CompiledFunction f = kiln::compile(c.fn(), {.debug_dir = root.string(), .name = "l"});
  f({kiln::randn({5, 6}).requires_grad_(), kiln::randn({3})})[0].backward();
  fs::path dir = root / "l" / "signature_0";
  for (const char* stem :
       {"traced", "joint", "forward", "backward", "fused_forward", "fused_backward"}) {
    for (const char* ext : {".ir", ".dot"}) {
      fs::path p = dir / (std::string(stem) + ext);
      ASSERT_TRUE(fs::exists(p)) << p;
      std::string text = read(p);
      if (std::string(ext) == ".ir") {
        EXPECT_NO_THROW(kiln::ir::verify(*kiln::ir::parse(text))) << p;
      } else {
        EXPECT_EQ(text.rfind("digraph", 0), 0u) << p;
      }
    }
  }
  for (const char* file :
       {"kernels.kir", "summary.txt", "repro.kir", "repro.inputs", "repro.outputs"})
    EXPECT_TRUE(fs::exists(dir / file)) << file;
  // The stages are the ones CompiledFunction::dump(stage) prints.
  EXPECT_EQ(read(dir / "traced.ir"), f.dump("traced"));
  EXPECT_EQ(read(dir / "backward.ir"), f.dump("backward"));
  EXPECT_TRUE(f.dump("fused", true).starts_with(read(dir / "fused_forward.dot")));
  fs::remove_all(root);
}

TEST(DebugDir, DumpStageErrorsNameTheProblem) {
  kiln::manual_seed(13);
  Case c;
  kiln::CompiledFunction f = kiln::compile(c.fn(), {.name = "e"});
  EXPECT_THROW(
      {
        try {
          (void)f.dump("joint");
        } catch (const kiln::Error& e) {
          EXPECT_NE(std::string(e.what()).find("not been called"), std::string::npos) << e.what();
          throw;
        }
      },
      kiln::Error);
  // Without grad, there is no backward stage.
  {
    kiln::NoGradGuard no_grad;
    f({kiln::randn({5, 6}), kiln::randn({3})});
  }
  for (auto [stage, dot, message] : {std::tuple{"nonsense", false, "unknown stage 'nonsense'"},
                                     std::tuple{"kernels", true, "no Graphviz form"},
                                     std::tuple{"backward", false, "no output requires grad"}}) {
    try {
      (void)f.dump(stage, dot);
      ADD_FAILURE() << stage << " did not throw";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(f.dump("forward").find("graph("), std::string::npos);
}

}  // namespace
}  // namespace kiln_test
