// CompileOptions::dynamic and mark_dynamic (Note [Symbolic plans]): which calls a symbolic plan
// serves, when dims become symbolic, what the recompile log says, and that every call still
// returns what eager returns at its sizes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compile/compare.h"
#include "kiln/base/options.h"
#include "kiln/config.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
using Fn = CompiledFunction::Fn;

// A head that fuses (bias, gelu, scale) around a product, with a row reduction.
Fn head() {
  return [](const std::vector<Tensor>& in) {
    Tensor h = kiln::gelu(kiln::matmul(in[0], in[1]) + in[2]) * 0.5;
    return std::vector<Tensor>{h, h.mean({1}, true)};
  };
}

std::vector<Tensor> head_inputs(int64_t batch, int64_t d, int64_t hidden) {
  return {kiln::randn({batch, d}), kiln::randn({d, hidden}), kiln::randn({hidden})};
}

TEST(DynamicCompile, DynamicTrueServesEverySizeWithOnePlan) {
  kiln::manual_seed(1);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (auto [b, d, h] : {std::tuple{8, 6, 5}, {3, 7, 4}, {13, 2, 9}, {64, 32, 48}, {2, 5, 3}}) {
    std::vector<Tensor> in = head_inputs(b, d, h);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 1);
  EXPECT_EQ(st.cache_hits, 4);
  EXPECT_EQ(st.eager_calls, 0);
  EXPECT_GE(st.forward_kernels, 2);  // the product and at least one fused group
  std::string dump = f.dump();
  EXPECT_NE(dump.find("# symbolic sizes: serves every call whose sizes bind the symbols; "
                      "guards: s0 >= 2, s1 >= 2, s2 >= 2"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("input 0 dim 0: symbolic, s0 (traced at 8)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("size"), std::string::npos) << dump;  // kernels with size parameters
}

TEST(DynamicCompile, DefaultMakesAChangedDimSymbolicOnTheFirstRecompile) {
  auto saved = kiln::set_log_topics({"recompiles"});
  kiln::manual_seed(2);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn, {.name = "auto_head"});
  testing::internal::CaptureStderr();
  for (int64_t b : {8, 5, 11, 7, 64}) {
    std::vector<Tensor> in = head_inputs(b, 6, 5);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  // The static first plan, then one symbolic plan for every other batch size.
  EXPECT_EQ(f.stats().compiles, 2);
  // A second dim changing adds it: one more plan, which serves both.
  for (int64_t h : {9, 4}) {
    std::vector<Tensor> in = head_inputs(5, 6, h);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  std::string err = testing::internal::GetCapturedStderr();
  kiln::set_log_topics(saved);
  EXPECT_EQ(f.stats().compiles, 3);
  EXPECT_NE(err.find("[kiln:recompiles] auto_head: input 0 dim 0 changed size (8 -> 5); it is "
                     "symbolic from now on (automatic dynamic shapes)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("input 1 dim 1 changed size"), std::string::npos) << err;
  // The recompile says why the symbolic plan did not serve the call.
  EXPECT_NE(err.find("does not fit: input 1 has sizes [6, 9], and the plan has it as f32[6, 5]"),
            std::string::npos)
      << err;
}

TEST(DynamicCompile, DynamicFalseCompilesEverySize) {
  kiln::manual_seed(3);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn, {.dynamic = false});
  for (int64_t b : {8, 5, 11}) {
    std::vector<Tensor> in = head_inputs(b, 6, 5);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 3);
}

TEST(DynamicCompile, MarkDynamicMakesOneDimSymbolicFromTheFirstCall) {
  kiln::manual_seed(4);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn);
  for (int64_t b : {8, 5, 11}) {
    std::vector<Tensor> in = head_inputs(b, 6, 5);
    kiln::mark_dynamic(in[0], 0);
    EXPECT_EQ(kiln::dynamic_dims(in[0]), (std::vector<int64_t>{0}));
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_TRUE(kiln::dynamic_dims(kiln::randn({3})).empty());
  EXPECT_THROW(kiln::mark_dynamic(kiln::randn({3}), 1), kiln::Error);
}

TEST(DynamicCompile, ASizeReadAsAnIntegerSpecializesTheDimAndSaysWhere) {
  auto saved = kiln::set_log_topics({"recompiles"});
  // The mean over rows written by hand: 1 / x.size(0) is a constant of the graph.
  Fn fn = [](const std::vector<Tensor>& in) {
    double inv = 1.0 / static_cast<double>(in[0].size(0));
    return std::vector<Tensor>{in[0].sum({0}) * inv};
  };
  CompiledFunction f = kiln::compile(fn, {.name = "row_mean", .dynamic = true});
  testing::internal::CaptureStderr();
  for (auto [r, c] : {std::pair{8, 3}, {8, 7}, {5, 3}, {5, 9}}) {
    std::vector<Tensor> in{kiln::randn({r, c})};
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  std::string err = testing::internal::GetCapturedStderr();
  kiln::set_log_topics(saved);
  // One plan per row count; the column count stays symbolic in each.
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(err.find("row_mean: input 0 dim 0: specialized to 8: a size read as an integer at"),
            std::string::npos)
      << err;
}

// Note [Assumed size facts]: x[:4], row 2 and the top 3 of a symbolic dim are what one plan
// computes for every call with at least 4 rows. The plan lists those facts among its guards; a
// call with 3 rows breaks s0 >= 4 and compiles again, and the log says so.
TEST(DynamicCompile, BoundsThatDependOnASizeBecomeGuards) {
  auto saved = kiln::set_log_topics({"recompiles"});
  kiln::manual_seed(4);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    return std::vector<Tensor>{(x.slice(0, 0, 4) * 2.0).sum({0}) + x.select(0, 2),
                               std::get<0>(kiln::topk(x, 3, 0)).exp()};
  };
  CompiledFunction f = kiln::compile(fn, {.name = "heads", .dynamic = true});
  testing::internal::CaptureStderr();
  for (int64_t rows : {8, 6, 13, 7, 3}) {
    Tensor x = kiln::randn({rows, 3});
    Tensor xc = x.detach().requires_grad_(), xe = x.detach().requires_grad_();
    std::vector<Tensor> yc = f({xc}), ye = fn({xe});
    Tensor gc = kiln::autograd::grad({yc[0].sum() + yc[1].sum()}, {xc})[0];
    Tensor ge = kiln::autograd::grad({ye[0].sum() + ye[1].sum()}, {xe})[0];
    expect_all_close({yc[0], yc[1], gc}, {ye[0], ye[1], ge}, kReductionTol);
  }
  std::string err = testing::internal::GetCapturedStderr();
  kiln::set_log_topics(saved);
  // One plan for 8, 6, 13 and 7 rows; the second for 3 rows.
  EXPECT_EQ(f.stats().compiles, 2) << err;
  EXPECT_NE(err.find("but the graph expects s0 >= 4"), std::string::npos) << err;
}

// Rows flattened from two symbolic dims ([s0*s1, 8]) make a loop that runs to s0*s1: its
// kernel takes that product as a size parameter of its own (FusionGroupAttrs::size_args), so
// the group is one kernel at every size instead of ops run one by one.
TEST(DynamicCompile, AGroupOverFlattenedRowsIsOneKernelAtEverySize) {
  auto saved = kiln::set_log_topics({"fallbacks"});
  kiln::manual_seed(9);
  Tensor bias = kiln::randn({8});
  Fn fn = [=](const std::vector<Tensor>& in) {
    Tensor rows = in[0].reshape_symint({-1, 8});
    return std::vector<Tensor>{kiln::gelu(rows + bias) * 0.5};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  testing::internal::CaptureStderr();
  for (auto [b, s] : {std::pair{4, 6}, {3, 5}, {7, 2}}) {
    std::vector<Tensor> in{kiln::randn({b, s, 8})};
    expect_all_close(f(in), fn(in), kPointwiseTol);
  }
  std::string err = testing::internal::GetCapturedStderr();
  kiln::set_log_topics(saved);
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_EQ(f.stats().forward_kernels, 1) << f.dump();
  EXPECT_EQ(err.find("not lowered to one kernel"), std::string::npos) << err;
  EXPECT_NE(f.dump().find("# %e0 = s0*s1"), std::string::npos) << f.dump();
}

TEST(DynamicCompile, DuckSizedDimsMustStayEqual) {
  kiln::manual_seed(5);
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].exp() + 1.0}; };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (auto [r, c] : {std::pair{8, 8}, {5, 5}, {5, 7}, {9, 2}}) {
    std::vector<Tensor> in{kiln::randn({r, c})};
    expect_all_close(f(in), fn(in), kPointwiseTol);
  }
  // [s0, s0] serves the square calls; [5, 7] does not fit it and compiles [s0, s1].
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST(DynamicCompile, ASymbolicPlanCountsOnceAgainstTheCacheLimit) {
  kiln::manual_seed(6);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn, {.cache_limit = 1, .dynamic = true});
  for (int64_t b = 2; b < 12; ++b) {
    std::vector<Tensor> in = head_inputs(b, 6, 5);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().eager_calls, 0);
}

TEST(DynamicCompile, SizesZeroAndOneGetTheirOwnPlans) {
  kiln::manual_seed(7);
  Fn fn = head();
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (int64_t b : {8, 1, 5, 1}) {
    std::vector<Tensor> in = head_inputs(b, 6, 5);
    expect_all_close(f(in), fn(in), kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 2);  // [s0, ...] and the batch of 1
}

// layer_norm's integer normalized_shape specializes the last dim after the forward saved its
// sizes over both symbols; the backward compares those saved sizes with the specialization
// applied (TracingState::resolve_symbols), so the batch dim stays symbolic through it.
TEST(DynamicCompile, ASymbolSpecializedAfterItsSizesWereSavedKeepsTheOthers) {
  kiln::manual_seed(8);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::layer_norm(in[0], {16}) * in[0]};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (int64_t b : {8, 5, 12}) {
    Tensor x = kiln::randn({b, 16});
    Tensor xc = x.detach().requires_grad_(), xe = x.detach().requires_grad_();
    Tensor yc = f({xc})[0], ye = fn({xe})[0];
    Tensor g = kiln::randn({b, 16});
    expect_all_close({yc, kiln::autograd::grad({yc}, {xc}, {g})[0]},
                     {ye, kiln::autograd::grad({ye}, {xe}, {g})[0]}, kReductionTol);
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_NE(f.dump().find("input 0 dim 0: symbolic"), std::string::npos) << f.dump();
}

// A convolution keeps its batch and spatial dims symbolic (Note [Convolution over symbols]): a
// strided one's output is floordiv(s1 + 2p - span, stride) + 1. Its channels specialize (they
// match the weight's). A small CNN's training step then serves every batch and image size with
// one plan, gradients included.
TEST(DynamicCompile, AConvolutionTrainsAtEveryBatchAndImageSizeWithOnePlan) {
  kiln::manual_seed(12);
  Tensor w = param({4, 3, 3, 3}, 0.3), b = param({4}, 0.1), w2 = param({5, 4, 3, 3}, 0.3);
  Fn fn = [=](const std::vector<Tensor>& in) {
    Tensor y = kiln::relu(kiln::conv2d(in[0], w, b, {1}, {1}));
    y = kiln::conv2d(y, w2, {}, {2}, {1});  // strided: the sizes are floor divisions
    return std::vector<Tensor>{kiln::mean(y * y)};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (auto [batch, side] : {std::pair{5, 6}, {2, 9}, {9, 7}, {3, 12}}) {
    Tensor x = kiln::randn({batch, 3, side, side});
    auto step = [&](const Fn& g) {
      Tensor loss = g({x})[0];
      std::vector<Tensor> grads = kiln::autograd::grad({loss}, {w, b, w2});
      return std::vector<Tensor>{loss, grads[0], grads[1], grads[2]};
    };
    expect_all_close(step(f), step(fn), kReductionTol, "loss, then the weights' and bias' grads");
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_EQ(f.stats().eager_calls, 0);
  std::string dump = f.dump();
  EXPECT_NE(dump.find("input 0 dim 0: symbolic"), std::string::npos) << dump;
  EXPECT_NE(dump.find("input 0 dim 2: symbolic"), std::string::npos) << dump;
  EXPECT_NE(dump.find("input 0 dim 1: specialized"), std::string::npos) << dump;
}

// A small CNN as ordinary models write it: convolution, batch_norm in training mode with
// running statistics, max, average and adaptive average pooling, a linear head and
// cross-entropy. Only channels are read as integers, so the batch and the image sides stay
// symbolic through the forward, the backward and the running-statistics update: one plan for
// every batch and image size (Note [Pooling matrices over symbols]).
TEST(DynamicCompile, ACnnWithBatchNormAndPoolingTrainsAtEveryBatchAndImageSize) {
  kiln::manual_seed(14);
  Tensor w = param({4, 3, 3, 3}, 0.3), gamma = param({4}, 1.0), beta = param({4}, 0.1);
  Tensor head = param({5, 8}, 0.4);
  Tensor mean_c = kiln::zeros({4}), var_c = kiln::ones({4});  // compiled run's statistics
  Tensor mean_e = kiln::zeros({4}), var_e = kiln::ones({4});  // eager run's
  auto model = [&](const Tensor& running_mean, const Tensor& running_var) {
    return [=](const std::vector<Tensor>& in) {
      Tensor y = kiln::conv2d(in[0], w, {}, {1}, {1});
      y = kiln::relu(kiln::batch_norm(y, running_mean, running_var, gamma, beta, true, 0.1, 1e-5));
      y = kiln::max_pool2d(y, {3}, {2}, {1});  // padded, strided
      y = kiln::avg_pool2d(y, {2}, {1}, {1}, false, /*count_include_pad=*/false);  // edges
      y = kiln::adaptive_avg_pool2d(y, {2, 1});                                    // uneven windows
      y = y.reshape_symint({y.sym_size(0), -1});
      return std::vector<Tensor>{kiln::cross_entropy(kiln::linear(y, head), in[1])};
    };
  };
  Fn eager = model(mean_e, var_e);
  CompiledFunction f = kiln::compile(model(mean_c, var_c), {.dynamic = true});
  for (auto [batch, side] : {std::pair<int64_t, int64_t>{5, 8}, {2, 11}, {9, 6}, {4, 13}}) {
    Tensor x = kiln::randn({batch, 3, side, side + 1});
    Tensor target = (kiln::arange(batch, kiln::TensorOptions(kiln::kInt64)) * 3).remainder(5);
    auto step = [&](const Fn& g) {
      Tensor loss = g({x, target})[0];
      std::vector<Tensor> grads = kiln::autograd::grad({loss}, {w, gamma, beta, head});
      grads.insert(grads.begin(), loss);
      return grads;
    };
    expect_all_close(step(f), step(eager), kReductionTol,
                     "loss, then the grads of the weight, gamma, beta and head");
    expect_all_close({mean_c, var_c}, {mean_e, var_e}, kReductionTol, "running statistics");
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_EQ(f.stats().eager_calls, 0);
  std::string dump = f.dump();
  EXPECT_NE(dump.find("input 0 dim 0: symbolic"), std::string::npos) << dump;
  EXPECT_NE(dump.find("input 0 dim 2: symbolic"), std::string::npos) << dump;
  EXPECT_NE(dump.find("input 0 dim 3: symbolic"), std::string::npos) << dump;
}

// A learned positional table sliced to each call's sequence length (Note [Symbolic slice
// bounds]): the bound is the symbol itself, so one plan serves every length up to the table's,
// given the fact s1 <= 32 that the plan lists; the table's gradient pads back to 32 rows.
TEST(DynamicCompile, APositionalTableSlicedToTheSequenceLengthServesEveryLength) {
  kiln::manual_seed(15);
  Tensor pos = param({32, 4}, 0.5), w = param({4, 4}, 0.3);
  Fn fn = [=](const std::vector<Tensor>& in) {
    Tensor h = in[0] + pos.slice_symint(0, 0, in[0].sym_size(1));
    return std::vector<Tensor>{kiln::mean(kiln::tanh(kiln::linear(h, w)))};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (auto [batch, length] : {std::pair<int64_t, int64_t>{3, 10}, {2, 17}, {5, 32}, {4, 6}}) {
    Tensor x = kiln::randn({batch, length, 4});
    auto step = [&](const Fn& g) {
      Tensor loss = g({x})[0];
      std::vector<Tensor> grads = kiln::autograd::grad({loss}, {pos, w});
      return std::vector<Tensor>{loss, grads[0], grads[1]};
    };
    expect_all_close(step(f), step(fn), kReductionTol, "loss, then the table's and weight's grads");
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_EQ(f.stats().eager_calls, 0);
  std::string dump = f.dump();
  EXPECT_NE(dump.find("s1 <= 32"), std::string::npos) << dump;
  EXPECT_NE(dump.find("input 0 dim 1: symbolic"), std::string::npos) << dump;
}

// A classifier's cross-entropy step: nll_loss's rule and gradient read only the class count,
// so the batch dim stays symbolic through the loss and its backward.
TEST(DynamicCompile, ACrossEntropyStepServesEveryBatchSize) {
  kiln::manual_seed(13);
  Tensor w = param({10, 6}, 0.4);
  Fn fn = [=](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::cross_entropy(kiln::linear(in[0], w), in[1])};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (int64_t batch : {7, 3, 12}) {
    Tensor classes = (kiln::arange(batch, kiln::TensorOptions(kiln::kInt64)) * 7).remainder(10);
    std::vector<Tensor> in{kiln::randn({batch, 6}), classes};
    auto step = [&](const Fn& g) {
      Tensor loss = g(in)[0];
      return std::vector<Tensor>{loss, kiln::autograd::grad({loss}, {w})[0]};
    };
    expect_all_close(step(f), step(fn), kReductionTol, "loss, then the weight's gradient");
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
}

// Features concatenated along a static dim: cat's rule sums the cat dim and keeps the batch
// symbol, and its gradient reads only the cat dim's sizes.
TEST(DynamicCompile, ConcatenatedFeaturesKeepTheBatchSymbolic) {
  kiln::manual_seed(14);
  Tensor w = param({5, 4}, 0.5), v = param({3, 4}, 0.5);
  Fn fn = [=](const std::vector<Tensor>& in) {
    Tensor h = kiln::cat({kiln::linear(in[0], w), kiln::tanh(kiln::linear(in[0], v))}, 1);
    return std::vector<Tensor>{kiln::mean(h * h)};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (int64_t batch : {6, 3, 11}) {
    std::vector<Tensor> in{kiln::randn({batch, 4})};
    auto step = [&](const Fn& g) {
      Tensor loss = g(in)[0];
      std::vector<Tensor> grads = kiln::autograd::grad({loss}, {w, v});
      return std::vector<Tensor>{loss, grads[0], grads[1]};
    };
    expect_all_close(step(f), step(fn), kReductionTol, "loss, then the weights' gradients");
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
}

#if KILN_WITH_LLVM
// The kernels of a symbolic plan are keyed by their kernel IR, which no size is part of: a
// second function traced at other sizes generates no code.
TEST(DynamicCompile, SymbolicKernelsAreGeneratedOnceForEverySize) {
  kiln::manual_seed(9);
  Fn fn = head();
  CompiledFunction first = kiln::compile(fn, {.backend = kiln::Backend::LLVM, .dynamic = true});
  first(head_inputs(8, 6, 5));
  int64_t before = kiln::codegen::llvm_cache_stats().compiles;
  CompiledFunction second = kiln::compile(fn, {.backend = kiln::Backend::LLVM, .dynamic = true});
  for (int64_t b : {3, 40}) {
    std::vector<Tensor> in = head_inputs(b, 7, 9);
    expect_all_close(second(in), fn(in), kReductionTol);
  }
  EXPECT_EQ(kiln::codegen::llvm_cache_stats().compiles, before);
  EXPECT_GE(second.stats().forward_kernels, 2);
}
#endif

// KILN_DEBUG_DIR of a symbolic plan: the summary lists the symbols, and repro.kir is a symbolic
// graph that replays at the recorded sizes and at others.
TEST(DynamicCompile, TheReproOfASymbolicPlanReplaysAtAnySize) {
  kiln::manual_seed(10);
  std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("kiln_dynamic_repro_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  Fn fn = head();
  CompiledFunction f =
      kiln::compile(fn, {.debug_dir = root.string(), .name = "d", .dynamic = true});
  {
    kiln::NoGradGuard no_grad;
    f(head_inputs(8, 6, 5));
  }
  std::filesystem::path dir = root / "d" / "signature_0";
  std::ifstream summary_file(dir / "summary.txt"), repro_file(dir / "repro.kir");
  std::stringstream summary, repro;
  summary << summary_file.rdbuf();
  repro << repro_file.rdbuf();
  EXPECT_NE(summary.str().find("input 1 dim 1: symbolic, s2 (traced at 5)"), std::string::npos)
      << summary.str();
  std::shared_ptr<kiln::ir::Graph> g = kiln::ir::parse(repro.str());
  kiln::ir::verify(*g);
  EXPECT_EQ(g->symbol_hints(), (std::vector<int64_t>{8, 6, 5}));
  kiln::TensorFile inputs = kiln::load_tensors((dir / "repro.inputs").string());
  kiln::TensorFile outputs = kiln::load_tensors((dir / "repro.outputs").string());
  expect_all_close(kiln::interpret(*g, inputs.tensors), outputs.tensors, kReductionTol);
  std::vector<Tensor> other = head_inputs(3, 4, 7);
  expect_all_close(kiln::interpret(*g, other), fn(other), kReductionTol);
  std::filesystem::remove_all(root);
}

// Training steps: the backward is traced over the same symbols (Note [Symbolic saved sizes]),
// so one plan serves every batch size, and the gradients stay eager's.
TEST(DynamicCompile, OneSymbolicPlanServesTheBackwardAtEverySize) {
  kiln::manual_seed(8);
  Tensor w = param({6, 5});
  Fn fn = [w](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::gelu(kiln::matmul(in[0], w)).sum()};
  };
  CompiledFunction f = kiln::compile(fn, {.dynamic = true});
  for (int64_t b : {8, 5, 13}) {
    Tensor x = kiln::randn({b, 6});
    w.mutable_grad() = Tensor();
    f({x})[0].backward();
    Tensor compiled_grad = w.grad().clone();
    w.mutable_grad() = Tensor();
    fn({x})[0].backward();
    EXPECT_TRUE(close(compiled_grad, w.grad(), kReductionTol));
  }
  EXPECT_EQ(f.stats().compiles, 1) << f.dump();
  EXPECT_NE(f.dump().find("input 0 dim 0: symbolic, s0 (traced at 8)"), std::string::npos)
      << f.dump();
}

}  // namespace
}  // namespace kiln_test
