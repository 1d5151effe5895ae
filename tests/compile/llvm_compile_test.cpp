// kiln::compile on the LLVM backend: Auto picks it, fusion groups run as machine code, an LLVM
// failure in a group falls back to the kernel-IR interpreter with one warning, and
// KILN_DEBUG_DIR receives each kernel's LLVM IR before and after optimization and its assembly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "kiln/config.h"
#include "kiln/kiln.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln {
namespace {

// gelu(tanh) written out in ops, a fusion chain: its forward and backward each fuse to one kernel.
Tensor gelu_chain(const Tensor& x) {
  Tensor inner = (x + x * x * x * 0.044715) * 0.7978845608028654;
  return x * 0.5 * (inner.tanh() + 1.0);
}

void expect_close(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], 1e-6f * (1 + std::abs(y[i]))) << "at " << i;
}

// Forward and gradient of gelu_chain(x).sum() through `f`, against eager.
void check_against_eager(const CompiledFunction& f, const Tensor& x0) {
  Tensor xe = x0.detach().requires_grad_();
  Tensor ye = gelu_chain(xe);
  ye.sum().backward();
  Tensor xc = x0.detach().requires_grad_();
  Tensor yc = f({xc})[0];
  yc.sum().backward();
  expect_close(yc.detach(), ye.detach());
  expect_close(xc.grad(), xe.grad());
}

CompiledFunction gelu_compiled(Backend b, std::string name, std::string debug_dir = "") {
  CompileOptions o;
  o.backend = b;
  o.name = std::move(name);
  o.debug_dir = std::move(debug_dir);
  return compile([](const std::vector<Tensor>& in) { return gelu_chain(in[0]); }, o);
}

#if KILN_WITH_LLVM

TEST(LlvmCompile, FusedKernelsMatchEagerForwardAndBackward) {
  CompiledFunction f = gelu_compiled(Backend::LLVM, "gelu_llvm");
  Tensor x = randn({37, 29});  // odd sizes: vector tails
  check_against_eager(f, x);
  CompileStats s = f.stats();
  EXPECT_EQ(s.forward_kernels, 1);
  EXPECT_EQ(s.backward_kernels, 1);
}

// sin and cos in a parallel pointwise loop, and in a vector loop inside one (a 2-D group with a
// broadcast operand), per Note [Reduced-range LLVM loops]: eager's bits both when every input is
// within the polynomial's range and when some are not (libm's values there, from the loop's
// second run), on one compiled plan per shape.
TEST(LlvmCompile, SinAndCosGiveEagersBitsWithinAndBeyondThePolynomialsRange) {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].sin() * in[1] + in[0].cos()};
  };
  for (const Shape& shape : {Shape{4099}, Shape{33, 130}}) {
    // A kernel that fails to compile would run in the interpreter, giving eager's bits too: the
    // warning it prints is what tells.
    testing::internal::CaptureStderr();
    CompiledFunction f = compile(fn, {.backend = Backend::LLVM, .name = "sin_cos_llvm"});
    const int64_t n = shape_numel(shape);
    Tensor a = randn({shape.back()});
    Tensor within = randn(shape) * 50.0;
    std::vector<float> far = within.to_vector<float>();
    far[0] = 1e30f;
    far[1] = -3e38f;
    far[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
    far[static_cast<size_t>(n - 1)] = -std::numeric_limits<float>::infinity();
    int64_t differ = 0, first = -1;
    for (const Tensor& x : {within, from_vector(far, shape)}) {
      std::vector<float> want = fn({x, a})[0].to_vector<float>();
      std::vector<float> got = f({x, a})[0].to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
        if (differ++ == 0) first = static_cast<int64_t>(i);
      }
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(differ, 0) << "first at " << first << " of shape " << shape_str(shape);
    EXPECT_EQ(err.find("failed to compile"), std::string::npos) << err;
    EXPECT_EQ(f.stats().forward_kernels, 1);
  }
}

TEST(LlvmCompile, AutoUsesLlvmAndTheKernelsAreCompiled) {
  int64_t before = codegen::llvm_cache_stats().memory_hits + codegen::llvm_cache_stats().compiles +
                   codegen::llvm_cache_stats().disk_hits;
  CompiledFunction f = gelu_compiled(Backend::Auto, "gelu_auto");
  check_against_eager(f, randn({5, 7}));
  codegen::LlvmCacheStats after = codegen::llvm_cache_stats();
  // Two kernels (forward, backward) went through the LLVM backend, from whichever cache level.
  EXPECT_EQ(after.memory_hits + after.compiles + after.disk_hits - before, 2);
}

TEST(LlvmCompile, InjectedFailureFallsBackToTheInterpreterWithOneWarning) {
  std::string previous = codegen::llvm_inject_failure("fused_");
  testing::internal::CaptureStderr();
  // A shape no other test uses, so that these kernels have not warned before in this process.
  CompiledFunction f = gelu_compiled(Backend::LLVM, "gelu_injected");
  check_against_eager(f, randn({3, 11, 2}));
  CompiledFunction g = gelu_compiled(Backend::LLVM, "gelu_injected_again");
  check_against_eager(g, randn({3, 11, 2}));
  std::string err = testing::internal::GetCapturedStderr();
  codegen::llvm_inject_failure(previous);
  const std::string warning = "failed to compile (llvm backend: kernel fused_";
  size_t first = err.find(warning);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_NE(err.find("injected failure"), std::string::npos) << err;
  EXPECT_NE(err.find("it runs in the kernel-IR interpreter"), std::string::npos) << err;
  // One warning per failing kernel (forward and backward), not one per compile.
  size_t count = 0;
  for (size_t p = err.find(warning); p != std::string::npos; p = err.find(warning, p + 1))
    ++count;
  EXPECT_EQ(count, 2u) << err;
}

TEST(LlvmCompile, DebugDirHoldsLlvmIrBeforeAndAfterOptimizationAndAssembly) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("kiln_llvm_debug_" + std::to_string(::getpid()));
  fs::remove_all(root);
  CompiledFunction f = gelu_compiled(Backend::LLVM, "gelu_dump", root.string());
  check_against_eager(f, randn({64}));
  fs::path dir = root / "gelu_dump" / "signature_0" / "llvm";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int ll = 0, opt = 0, s = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string name = entry.path().filename().string();
    if (name.ends_with(".opt.ll")) {
      ++opt;
      // The O3 pipeline vectorized the elementwise loop.
      EXPECT_NE(text.str().find("x float>"), std::string::npos) << name;
    } else if (name.ends_with(".ll")) {
      ++ll;
      EXPECT_NE(text.str().find("define void @kiln_"), std::string::npos) << name;
    } else if (name.ends_with(".s")) {
      ++s;
      EXPECT_NE(text.str().find("kiln_"), std::string::npos) << name;
    }
  }
  EXPECT_EQ(ll, 2);  // forward and backward kernels
  EXPECT_EQ(opt, 2);
  EXPECT_EQ(s, 2);
  fs::remove_all(root);
}

#endif  // KILN_WITH_LLVM

TEST(LlvmCompile, InterpreterBackendStillRunsFusedGroups) {
  CompiledFunction f = gelu_compiled(Backend::Interpreter, "gelu_interp");
  check_against_eager(f, randn({9, 4}));
  EXPECT_EQ(f.stats().forward_kernels, 1);
}

}  // namespace
}  // namespace kiln
