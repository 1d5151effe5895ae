// The row programs (Note [Row programs] in runtime/kernels/row_programs.cpp) against the eager
// CPU kernels: on every OpInfo sample that reaches softmax, log_softmax or layer_norm, the op's
// row program run by the kernel-IR interpreter gives the CPU kernel's result. The sums run in
// another order (the CPU's blocks of 1024 are combined in double; the program accumulates in
// the compute dtype), so results agree to a tolerance that grows with the row length.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;
namespace kir = kiln::kir;

struct Counts {
  int calls = 0;
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

// op(args) by the row program in the interpreter, against `eager`, the CPU kernel's output.
void check_call(const kiln::OpDef& op, const void* attrs, const std::vector<Tensor>& args,
                const Tensor& eager) {
  Tensor out = kiln::empty_tensor(eager.sizes(), eager.dtype(), eager.device());
  kiln::RowCall call = kiln::row_call(op, args, out, attrs);
  kir::Kernel k = kiln::row_program(op, args[0].dtype(), attrs);
  ASSERT_NO_THROW(kir::verify(k)) << k.str();
  ASSERT_FALSE(k.sizes().empty()) << "a row program takes its sizes at launch\n" << k.str();
  try {
    kir::run_kernel(k, call.buffers, call.sizes);
  } catch (const std::exception& e) {
    FAIL() << e.what() << "\n" << k.str();
  }
  Tensor got = call.copy_back ? call.result : out;
  ++counts().calls;
  counts().ops.insert(op.name);
  int64_t n = call.row_length;
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
    ASSERT_LE(diff, scale) << op.name << " element " << i << ": row program " << g[i] << ", CPU "
                           << w[i] << " (row length " << n << ")";
  }
}

bool has_row_program(const kiln::OpDef& op) {
  return op.row_program != nullptr;
}

void check_sample(const Sample& s) {
  kiln::TracedFunction f = kiln::trace(s.call, s.inputs);
  replay_graph(f.graph(), s.inputs, [](const kiln::ir::Node& node, const std::vector<Tensor>& a) {
    std::vector<Tensor> outs = kiln::call_op(*node.op(), a, node.attrs());
    if (has_row_program(*node.op()) && outs[0].numel() > 0)
      check_call(*node.op(), node.attrs(), a, outs[0]);
    return outs;
  });
}

std::vector<std::string> row_opinfo_names() {
  std::vector<std::string> names;
  for (const std::string& n : opinfo_names()) {
    for (const std::string& c : find_opinfo(n).covers) {
      const kiln::OpDef* op = kiln::OpTable::instance().find(c);
      if (op != nullptr && has_row_program(*op)) {
        names.push_back(n);
        break;
      }
    }
  }
  return names;
}

class RowProgramOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(RowProgramOpInfo, InterpreterMatchesTheCpuKernel) {
  for_each_sample(find_opinfo(GetParam()), check_sample);
}

INSTANTIATE_TEST_SUITE_P(Ops, RowProgramOpInfo, ::testing::ValuesIn(row_opinfo_names()),
                         opinfo_test_name);

TEST(RowPrograms, TheRowOpsHaveOneAndTheOpInfoSamplesReachEach) {
  for (const char* name : {"softmax", "log_softmax", "layer_norm"})
    EXPECT_NE(kiln::get_op(name).row_program, nullptr) << name;
  std::set<std::string> reached;
  for (const std::string& n : row_opinfo_names())
    for (const std::string& c : find_opinfo(n).covers)
      reached.insert(c);
  for (const char* name : {"softmax", "log_softmax", "layer_norm"})
    EXPECT_TRUE(reached.count(name)) << "no OpInfo covers " << name;
}

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    if (counts().calls == 0) return;
    std::printf(
        "[row programs] %d calls of %zu ops compared with the CPU kernels; worst %.3g eps\n",
        counts().calls, counts().ops.size(), counts().worst);
  }
};
[[maybe_unused]] auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportCounts());

}  // namespace
}  // namespace kiln_test
