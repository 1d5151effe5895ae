// The row programs (Note [Row programs] in runtime/kernels/row_programs.cpp) and the reduction
// programs (Note [Reduction programs]) against the eager CPU kernels: on every OpInfo sample
// that reaches softmax, log_softmax, layer_norm, their fused backwards, sum, mean, prod, amax,
// amin or nll_loss, the op's program run by the kernel-IR interpreter (and by LLVM) gives the
// CPU kernel's result (reductions in both forms, vector and serial). The sums run in another order
// (the CPU's blocks of 1024 are combined in double; a row program accumulates in the compute
// dtype), so floating results agree to a tolerance that grows with the count of reduced elements;
// integer results are identical.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "kiln/config.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/runtime/cuda/cuda_reduction_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/kernels/loss_programs.h"
#include "kiln/runtime/kernels/reduction_programs.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;
namespace kir = kiln::kir;

struct Counts {
  int calls = 0;
  int llvm_calls = 0;  // of them, also run by the LLVM backend
  std::set<std::string> ops;
  double worst = 0;  // the largest difference, in units of the tolerance's epsilon
};
Counts& counts() {
  static Counts c;
  return c;
}

double epsilon_of(DType t) {
  switch (t) {
    case kiln::kFloat64:
      return 0x1p-52;
    case kiln::kFloat32:
      return 0x1p-23;
    case kiln::kBFloat16:
      return 0x1p-7;
    default:
      return 0x1p-10;
  }
}

// `got` (the program's result) against `eager` (the CPU kernel's) for a reduction over `n`
// elements.
void compare(const kiln::OpDef& op, const Tensor& got, const Tensor& eager, int64_t n) {
  ++counts().calls;
  counts().ops.insert(op.name);
  if (!kiln::is_floating(eager.dtype())) {
    EXPECT_EQ(got.to(kiln::kInt64).to_vector<int64_t>(),
              eager.to(kiln::kInt64).to_vector<int64_t>())
        << op.name;
    return;
  }
  double eps = epsilon_of(eager.dtype());
  double scale = 8 + static_cast<double>(n) / 16;
  std::vector<double> g = got.to(kiln::kFloat64).contiguous().to_vector<double>();
  std::vector<double> w = eager.to(kiln::kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << op.name << " element " << i << ": " << g[i] << ", CPU NaN";
      continue;
    }
    if (std::isinf(w[i])) {
      ASSERT_EQ(g[i], w[i]) << op.name << " element " << i;
      continue;
    }
    double diff = std::abs(g[i] - w[i]) / (eps * (1 + std::abs(w[i])));
    counts().worst = std::max(counts().worst, diff);
    ASSERT_LE(diff, scale) << op.name << " element " << i << ": program " << g[i] << ", CPU "
                           << w[i] << " (" << n << " elements reduced)";
  }
}

// Runs `k` in the interpreter on `buffers` and `sizes`; false (with a failure) when it throws.
bool run(const kir::Kernel& k, const std::vector<Tensor>& buffers,
         const std::vector<int64_t>& sizes) {
  EXPECT_NO_THROW(kir::verify(k)) << k.str();
  EXPECT_FALSE(k.sizes().empty()) << "a program takes its sizes at launch\n" << k.str();
  try {
    kir::run_kernel(k, buffers, sizes);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << k.str();
    return false;
  }
  return true;
}

// The same program compiled by LLVM once for every size (Note [Size parameters]) and run on
// `buffers` with fresh (contiguous) tensors for its first `outputs` buffers; those, or nothing
// without LLVM.
std::vector<Tensor> run_llvm(const kir::Kernel& k, const std::vector<Tensor>& buffers,
                             const std::vector<int64_t>& sizes, size_t outputs = 1) {
#if KILN_WITH_LLVM
  std::vector<Tensor> args = buffers;
  for (size_t i = 0; i < outputs; ++i)
    args[i] = kiln::empty_tensor(buffers[i].sizes(), buffers[i].dtype(), buffers[i].device());
  try {
    auto compiled = kiln::codegen::llvm_compile(k);
    kiln::codegen::llvm_run(*compiled, k, kir::bind_arguments(k, args, "test"), sizes);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "llvm: " << e.what() << "\n" << k.str();
    return {};
  }
  ++counts().llvm_calls;
  args.resize(outputs);
  return args;
#else
  (void)k, (void)buffers, (void)sizes, (void)outputs;
  return {};
#endif
}

// op(args) by the row program in the interpreter, against `eager`, the CPU kernel's outputs.
void check_row_call(const kiln::OpDef& op, const void* attrs, const std::vector<Tensor>& args,
                    const std::vector<Tensor>& eager) {
  std::vector<Tensor> outs;
  for (const Tensor& e : eager)
    outs.push_back(kiln::empty_tensor(e.sizes(), e.dtype(), e.device()));
  kiln::RowCall call = kiln::row_call(op, args, outs, attrs);
  kir::Kernel k = kiln::row_program(op, args[0].dtype(), attrs);
  if (!run(k, call.buffers, call.sizes)) return;
  for (size_t i = 0; i < eager.size(); ++i)
    compare(op, call.results[i], eager[i], call.row_length);
  std::vector<Tensor> l = run_llvm(k, call.buffers, call.sizes, eager.size());
  for (size_t i = 0; i < l.size(); ++i)
    compare(op, l[i], eager[i], call.row_length);
}

bool has_reduction_program(const kiln::OpDef& op) {
  return kiln::has_cuda_reduction_kernel(op);
}

// op(args) by the reduction program in the interpreter, in both forms, against `eager`.
void check_reduction_call(const kiln::OpDef& op, const void* attrs, const std::vector<Tensor>& args,
                          const Tensor& eager) {
  for (bool serial : {false, true}) {
    Tensor out = kiln::empty_tensor(eager.sizes(), eager.dtype(), eager.device());
    auto layout = kiln::reduction_launch_layout(op, args[0], out, attrs);
    kiln::ReductionProgramSpec spec = kiln::reduction_spec(op, args[0].dtype(), out.dtype());
    spec.kept_dims = layout.kept.ndim;
    spec.reduced_dims = layout.reduced.ndim;
    spec.serial = serial;
    kiln::ReductionLayout sizes = kiln::reduction_layout_of(layout);
    kir::Kernel k = kiln::reduction_program(spec);
    std::vector<Tensor> buffers{out, args[0]};
    if (!run(k, buffers, sizes.sizes())) return;
    compare(op, out, eager, sizes.reduced_numel());
    for (const Tensor& l : run_llvm(k, buffers, sizes.sizes()))
      compare(op, l, eager, sizes.reduced_numel());
  }
}

bool has_row_program(const kiln::OpDef& op) {
  return op.row_program != nullptr;
}

bool is_nll_loss(const kiln::OpDef& op) {
  return op.name == "nll_loss";
}

bool has_program(const kiln::OpDef& op) {
  return has_row_program(op) || has_reduction_program(op) || is_nll_loss(op);
}

// nll_loss(args) by its program (Note [The nll_loss program]), in the interpreter and LLVM,
// against `eager`; no target of a sample is out of range, so `bad` must count none.
void check_nll_loss_call(const kiln::OpDef& op, const void* attrs, const std::vector<Tensor>& args,
                         const Tensor& eager) {
  if (args[0].size(args[0].dim() - 1) == 0) return;  // no classes: the program needs one
  Tensor out = kiln::empty_tensor(eager.sizes(), eager.dtype(), eager.device());
  kiln::NllLossCall call = kiln::nll_loss_call(args, out);
  const auto& a = *static_cast<const kiln::NllLossAttrs*>(attrs);
  kir::Kernel k = kiln::nll_loss_program(a, args[0].dtype(), out.dtype());
  if (!run(k, call.buffers, call.sizes)) return;
  EXPECT_EQ(call.buffers[3].to_vector<int64_t>()[0], 0) << "no target is out of range";
  compare(op, out, eager, call.sizes[0]);
  for (const Tensor& l : run_llvm(k, call.buffers, call.sizes))
    compare(op, l, eager, call.sizes[0]);
}

void check_sample(const Sample& s) {
  kiln::TracedFunction f = kiln::trace(s.call, s.inputs);
  replay_graph(f.graph(), s.inputs, [](const kiln::ir::Node& node, const std::vector<Tensor>& a) {
    std::vector<Tensor> outs = kiln::call_op(*node.op(), a, node.attrs());
    if (outs[0].numel() > 0 && has_row_program(*node.op()))
      check_row_call(*node.op(), node.attrs(), a, outs);
    if (outs[0].numel() > 0 && has_reduction_program(*node.op()))
      check_reduction_call(*node.op(), node.attrs(), a, outs[0]);
    if (outs[0].numel() > 0 && is_nll_loss(*node.op()))
      check_nll_loss_call(*node.op(), node.attrs(), a, outs[0]);
    return outs;
  });
}

std::vector<std::string> program_opinfo_names() {
  std::vector<std::string> names;
  for (const std::string& n : opinfo_names()) {
    for (const std::string& c : find_opinfo(n).covers) {
      const kiln::OpDef* op = kiln::OpTable::instance().find(c);
      if (op != nullptr && has_program(*op)) {
        names.push_back(n);
        break;
      }
    }
  }
  return names;
}

class ProgramOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(ProgramOpInfo, InterpreterMatchesTheCpuKernel) {
  for_each_sample(find_opinfo(GetParam()), check_sample);
}

INSTANTIATE_TEST_SUITE_P(Ops, ProgramOpInfo, ::testing::ValuesIn(program_opinfo_names()),
                         opinfo_test_name);

TEST(RowPrograms, EveryProgramOpHasOneAndTheOpInfoSamplesReachEach) {
  for (const char* name : {"softmax", "log_softmax", "layer_norm", "softmax_backward",
                           "log_softmax_backward", "layer_norm_backward"})
    EXPECT_NE(kiln::get_op(name).row_program, nullptr) << name;
  std::set<std::string> reached;
  for (const std::string& n : program_opinfo_names())
    for (const std::string& c : find_opinfo(n).covers)
      reached.insert(c);
  for (const char* name :
       {"softmax", "log_softmax", "layer_norm", "softmax_backward", "log_softmax_backward",
        "layer_norm_backward", "sum", "mean", "prod", "amax", "amin", "nll_loss"})
    EXPECT_TRUE(reached.count(name)) << "no OpInfo covers " << name;
}

// Targets out of range are counted into `bad` with the largest of them, ignored ones are not,
// and neither adds to the loss; rows whose target is ignore_index give 0 and are not counted.
TEST(NllLossProgram, CountsOutOfRangeTargetsAndSkipsIgnoredOnes) {
  Tensor x = kiln::from_vector(std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8}, {4, 2});
  Tensor target = kiln::from_vector(std::vector<int64_t>{1, -100, 5, 0}, {4});
  for (const char* reduction : {"none", "sum", "mean"}) {
    SCOPED_TRACE(reduction);
    kiln::NllLossAttrs a{reduction, -100};
    bool none = std::string(reduction) == "none";
    Tensor out = none ? kiln::empty({4}) : kiln::empty({});
    std::vector<Tensor> inputs{x, target};
    kiln::NllLossCall call = kiln::nll_loss_call(inputs, out);
    kir::run_kernel(kiln::nll_loss_program(a, kiln::kFloat32, kiln::kFloat32), call.buffers,
                    call.sizes);
    EXPECT_EQ(call.buffers[3].to_vector<int64_t>(), (std::vector<int64_t>{1, 5}));
    // Counted: rows 0 (target 1: 2) and 3 (target 0: 7); row 2's target is out of range.
    if (none) {
      EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{2, 0, 0, 7}));
    } else {
      EXPECT_EQ(out.item<float>(), std::string(reduction) == "sum" ? 9.0f : 4.5f);
    }
  }
}

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    if (counts().calls == 0) return;
    std::printf(
        "[programs] %d results of %zu ops compared with the CPU kernels (%d run by LLVM); worst "
        "%.3g eps\n",
        counts().calls, counts().ops.size(), counts().llvm_calls, counts().worst);
  }
};
[[maybe_unused]] auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportCounts());

}  // namespace
}  // namespace kiln_test
