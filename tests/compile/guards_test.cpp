// The plan cache of kiln::compile: which calls reuse a plan, which recompile (and how the
// change is described), the cache bound, functions that cannot be captured, and the dumps.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "compile/compare.h"
#include "kiln/frontend/compile/signature.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
namespace ag = kiln::autograd;
namespace cd = kiln::compile_detail;
using Fn = CompiledFunction::Fn;

Fn tanh_matmul(const Tensor& w) {
  return [w](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::tanh(kiln::matmul(in[0], w)) * 2.0};
  };
}

TEST(CompileGuards, SameSignatureHitsTheCache) {
  kiln::manual_seed(30);
  Tensor w = param({3, 5});
  Fn fn = tanh_matmul(w);
  CompiledFunction f = kiln::compile(fn);
  for (int i = 0; i < 4; ++i) {
    Tensor x = kiln::randn({4, 3});  // new values, same signature
    EXPECT_TRUE(close(f({x})[0], fn({x})[0], kPointwiseTol));
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_EQ(st.cache_hits, 3);
  EXPECT_EQ(st.eager_calls, 0);
}

TEST(CompileGuards, NewShapeRecompiles) {
  kiln::manual_seed(31);
  Tensor w = param({3, 5});
  Fn fn = tanh_matmul(w);
  CompiledFunction f = kiln::compile(fn);
  Tensor small = kiln::randn({4, 3}), big = kiln::randn({8, 3});
  EXPECT_TRUE(close(f({small})[0], fn({small})[0], kPointwiseTol));
  EXPECT_TRUE(close(f({big})[0], fn({big})[0], kPointwiseTol));
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().cache_hits, 0);
  // Both plans stay cached.
  EXPECT_TRUE(close(f({small})[0], fn({small})[0], kPointwiseTol));
  EXPECT_TRUE(close(f({big})[0], fn({big})[0], kPointwiseTol));
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().cache_hits, 2);
  EXPECT_EQ(cd::describe_change(cd::Signature::of({small}), cd::Signature::of({big})),
            "input 0: sizes [4, 3] -> [8, 3]");
}

TEST(CompileGuards, DescribeChangeNamesEachInputAndHow) {
  Tensor a = kiln::zeros({2, 3}), b = kiln::zeros({5}, kiln::kInt64);
  cd::Signature before = cd::Signature::of({a, b});
  EXPECT_EQ(cd::describe_change(before, before), "no change");
  Tensor b64 = kiln::zeros({5}, kiln::kFloat64);
  EXPECT_EQ(cd::describe_change(before, cd::Signature::of({a, b64})),
            "input 1: dtype int64 -> float64");
  Tensor at = kiln::zeros({3, 2}).t();  // [2, 3], not contiguous
  EXPECT_EQ(cd::describe_change(before, cd::Signature::of({at, b})),
            "input 0: strides [3, 1] -> [1, 2]");
  Tensor ag_ = kiln::zeros({2, 3}).requires_grad_();
  EXPECT_EQ(cd::describe_change(before, cd::Signature::of({ag_, b})),
            "input 0: requires_grad false -> true");
  cd::Signature no_grad;
  {
    kiln::NoGradGuard guard;
    no_grad = cd::Signature::of({a, b});
  }
  EXPECT_EQ(cd::describe_change(before, no_grad), "grad mode on -> off");
  EXPECT_EQ(cd::describe_change(before, cd::Signature::of({a})), "number of inputs 2 -> 1");
  Tensor a4 = kiln::zeros({4, 3});
  EXPECT_EQ(cd::describe_change(before, cd::Signature::of({a4, b64})),
            "input 0: sizes [2, 3] -> [4, 3]; input 1: dtype int64 -> float64");
}

TEST(CompileGuards, RequiresGradChangeRecompiles) {
  kiln::manual_seed(32);
  Tensor w = param({3, 5});
  Fn fn = tanh_matmul(w);
  CompiledFunction f = kiln::compile(fn);
  Tensor x = kiln::randn({4, 3});
  EXPECT_TRUE(close(f({x})[0], fn({x})[0], kPointwiseTol));
  Tensor xg = kiln::randn({4, 3}).requires_grad_();
  Tensor yc = f({xg})[0], ye = fn({xg})[0];
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_TRUE(close(yc, ye, kPointwiseTol));
  // The first plan had no gradient for x; the new one must.
  expect_all_close(ag::grad({yc.sum()}, {xg, w}), ag::grad({ye.sum()}, {xg, w}), kReductionTol,
                   "gradient");
}

TEST(CompileGuards, GradModeChangeRecompiles) {
  kiln::manual_seed(33);
  Tensor w = param({3, 5});
  Fn fn = tanh_matmul(w);
  CompiledFunction f = kiln::compile(fn);
  Tensor x = kiln::randn({4, 3}).requires_grad_();
  Tensor with_grad = f({x})[0];
  EXPECT_TRUE(with_grad.requires_grad());
  {
    kiln::NoGradGuard guard;
    Tensor y = f({x})[0];
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(close(y, fn({x})[0], kPointwiseTol));
  }
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().backward_kernels, 0) << "the no-grad plan has no backward";
  // Back with grad mode on: the first plan again.
  Tensor again = f({x})[0];
  EXPECT_TRUE(again.requires_grad());
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().cache_hits, 1);
  EXPECT_TRUE(
      close(ag::grad({again.sum()}, {x})[0], ag::grad({fn({x})[0].sum()}, {x})[0], kReductionTol));
}

TEST(CompileGuards, CacheLimitRunsFurtherSignaturesEagerly) {
  kiln::manual_seed(34);
  Tensor w = param({3, 5});
  Fn fn = tanh_matmul(w);
  CompiledFunction f = kiln::compile(fn, kiln::CompileOptions{.cache_limit = 2});
  for (int64_t rows : {1, 2}) {
    Tensor x = kiln::randn({rows, 3});
    EXPECT_TRUE(close(f({x})[0], fn({x})[0], kPointwiseTol));
  }
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_EQ(f.stats().eager_calls, 0);
  for (int call = 1; call <= 2; ++call) {
    Tensor x = kiln::randn({3, 3}).requires_grad_();
    Tensor y = f({x})[0];
    Tensor e = fn({x})[0];
    EXPECT_TRUE(close(y, e, kPointwiseTol));
    EXPECT_NE(y.grad_fn()->name(), "CompiledBackward") << "an eager call records eager history";
    EXPECT_TRUE(close(ag::grad({y.sum()}, {x})[0], ag::grad({e.sum()}, {x})[0], kReductionTol));
    EXPECT_EQ(f.stats().compiles, 2);
    EXPECT_EQ(f.stats().eager_calls, call);
  }
  // The cached signatures still hit.
  Tensor x1 = kiln::randn({1, 3});
  EXPECT_TRUE(close(f({x1})[0], fn({x1})[0], kPointwiseTol));
  EXPECT_EQ(f.stats().cache_hits, 1);
  EXPECT_EQ(f.stats().eager_calls, 2);
}

TEST(CompileGuards, DataDependentReadRunsEagerly) {
  kiln::manual_seed(35);
  Tensor w = param({3, 3});
  // The branch and the scale depend on tensor data: no single graph computes this.
  Fn fn = [&](const std::vector<Tensor>& in) {
    double s = in[0].sum().item<float>();
    Tensor h = kiln::matmul(in[0], w);
    return std::vector<Tensor>{s > 0 ? h * s : kiln::tanh(h)};
  };
  CompiledFunction f = kiln::compile(fn);
  for (int call = 1; call <= 3; ++call) {
    Tensor x = kiln::randn({2, 3}) * (call == 2 ? -1.0 : 1.0);
    x.requires_grad_();
    Tensor y = f({x})[0], e = fn({x})[0];
    EXPECT_TRUE(close(y, e, kPointwiseTol)) << "call " << call;
    EXPECT_TRUE(
        close(ag::grad({y.sum()}, {x, w})[1], ag::grad({e.sum()}, {x, w})[1], kReductionTol));
    EXPECT_EQ(f.stats().eager_calls, call);
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_NE(f.dump().find("runs eagerly"), std::string::npos) << f.dump();
}

// A non-contiguous input: eager reshape copies it (its elements are not laid out as [6]). The
// plan must do the same on this call, whatever layout the capture's own copy of x had.
TEST(CompileGuards, ReshapeOfTransposedInput) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].reshape({6}) * 2.0};
  };
  CompiledFunction f = kiln::compile(fn);
  Tensor x = kiln::arange(6, kiln::kFloat32).reshape({3, 2}).t();  // [2, 3], strides [1, 2]
  ASSERT_FALSE(x.is_contiguous());
  try {
    EXPECT_TRUE(close(f({x})[0], fn({x})[0], 0));
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

// Two non-contiguous layouts of the same sizes: every other column of a [2, 12] tensor, where
// reshape to [12] is a view (stride 2 throughout), and a transposed [6, 2], where it must copy.
// Their strides differ, so they are two signatures (Note [Input signature]) with two plans.
TEST(CompileGuards, ReshapeOfTwoNonContiguousLayoutsAreTwoSignatures) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].reshape({12}) + 1.0};
  };
  CompiledFunction f = kiln::compile(fn);
  Tensor every_other = kiln::arange(24, kiln::kFloat32).reshape({2, 12}).slice(1, 0, 12, 2);
  Tensor transposed = kiln::arange(12, kiln::kFloat32).reshape({6, 2}).t();
  ASSERT_EQ(every_other.strides(), (kiln::Shape{12, 2}));
  ASSERT_NE(cd::Signature::of({every_other}), cd::Signature::of({transposed}));
  for (const Tensor& x : {every_other, transposed}) {
    SCOPED_TRACE("strides " + kiln::shape_str(x.strides()));
    try {
      EXPECT_TRUE(close(f({x})[0], fn({x})[0], 0));
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST(CompileGuards, DumpHasForwardAndBackwardGraphs) {
  kiln::manual_seed(36);
  Tensor w = param({3, 5});
  CompiledFunction f = kiln::compile(tanh_matmul(w), {.name = "dumped"});
  EXPECT_NE(f.dump().find("nothing compiled yet"), std::string::npos);
  f({kiln::randn({4, 3}).requires_grad_()});
  std::string d = f.dump();
  EXPECT_NE(d.find("dumped"), std::string::npos) << d;
  size_t joint = d.find("joint graph"), fwd = d.find("forward graph");
  size_t bwd = d.find("backward graph");
  ASSERT_NE(joint, std::string::npos) << d;
  ASSERT_NE(fwd, std::string::npos) << d;
  ASSERT_NE(bwd, std::string::npos) << d;
  // Each section holds graph text: the forward has the matmul, the backward tanh's derivative
  // reads the saved output, so each section has ops of its own.
  EXPECT_NE(d.find("matmul", fwd), std::string::npos) << d;
  EXPECT_LT(fwd, bwd);
  EXPECT_NE(d.find("graph", bwd + 15), std::string::npos) << d;
  EXPECT_NE(d.find("f32[4, 3]"), std::string::npos) << d;
}

TEST(CompileGuards, DebugDirHoldsParsableForwardIr) {
  namespace fs = std::filesystem;
  static std::atomic<int> n{0};
  fs::path root = fs::temp_directory_path() /
                  ("kiln_compile_debug_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  fs::remove_all(root);
  kiln::manual_seed(37);
  Tensor w = param({3, 5});
  kiln::CompileOptions options;
  options.debug_dir = root.string();
  options.name = "debugged";
  CompiledFunction f = kiln::compile(tanh_matmul(w), options);
  f({kiln::randn({4, 3}).requires_grad_()});
  fs::path dir = root / "debugged" / "signature_0";
  for (const char* file : {"forward.ir", "backward.ir", "joint.ir"}) {
    SCOPED_TRACE(file);
    ASSERT_TRUE(fs::exists(dir / file)) << (dir / file);
    std::ifstream in(dir / file);
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty());
    std::shared_ptr<kiln::ir::Graph> g;
    try {
      g = kiln::ir::parse(text.str());
      kiln::ir::verify(*g);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n" << text.str();
    }
  }
  EXPECT_TRUE(fs::exists(dir / "summary.txt"));
  // The pipeline's dumps: one per pass that changed a graph, each a parsable, valid graph; the
  // backward's tanh derivative is fused (a changed graph), so its `fuse` dump is there.
  ASSERT_TRUE(fs::exists(dir / "passes"));
  int dumps = 0;
  bool backward_fuse = false;
  for (const auto& entry : fs::directory_iterator(dir / "passes")) {
    ++dumps;
    std::string stem = entry.path().stem().string();
    backward_fuse = backward_fuse || stem.ends_with("_backward_fuse");
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    try {
      kiln::ir::verify(*kiln::ir::parse(text.str()));
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
  }
  EXPECT_GT(dumps, 0);
  EXPECT_TRUE(backward_fuse);
  // The kernel IR of the fused groups.
  std::ifstream kernels(dir / "kernels.kir");
  std::stringstream ktext;
  ktext << kernels.rdbuf();
  EXPECT_NE(ktext.str().find("kernel fused_"), std::string::npos) << ktext.str();
  fs::remove_all(root);
}

}  // namespace
}  // namespace kiln_test
