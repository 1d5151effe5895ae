// Eager CUDA pointwise kernels (Note [Eager CUDA pointwise kernels]), on the pointwise op calls
// the OpInfo samples make (every pointwise node of their traced graphs, composites included),
// plus every op with a CUDA pointwise kernel over the floating, integer and bool dtypes its rules
// accept, the in-place twins, fill_, full and copy_:
// - without a GPU, every such kernel compiles with NVRTC to PTX for sm_80 and sm_90;
// - with one, each call of an op with any CUDA kernel (reductions and cuBLAS products too) on
//   CUDA copies of its inputs equals the CPU kernel's result (integers and bools bitwise, floats
//   within a few ulp: the CPU code contracts multiply-adds that the CUDA C may round twice, as in
//   pointwise_expr_opinfo_test.cpp; reductions and products within the rounding of a sum in
//   another order).
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "kiln/base/cuda/driver.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#include "kiln/runtime/cuda/cuda_pointwise_ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;
namespace cg = kiln::codegen::cuda;

// One call's kernel: the op, its attributes (a clone) and operand metadata.
struct Case {
  const kiln::OpDef* op = nullptr;
  std::shared_ptr<void> attrs;
  DType output = kiln::kFloat32;
  std::vector<kiln::Shape> sizes;
  std::vector<DType> dtypes;

  std::vector<kiln::MetaRef> metas() const {
    std::vector<kiln::MetaRef> m;
    for (size_t i = 0; i < sizes.size(); ++i)
      m.push_back(kiln::MetaRef{sizes[i], {}, 0, dtypes[i], kiln::kCPU});
    return m;
  }
  cg::CudaSource source() const {
    return kiln::cuda_pointwise_source(*op, attrs.get(), output, metas());
  }
};

std::shared_ptr<void> clone_attrs(const kiln::OpDef& op, const void* attrs) {
  if (attrs == nullptr || op.attrs == nullptr) return nullptr;
  return std::shared_ptr<void>(op.attrs->clone(attrs), op.attrs->destroy);
}

// The pointwise calls of every OpInfo sample, from its traced graph.
std::vector<Case> sample_cases() {
  std::vector<Case> cases;
  for (const std::string& name : opinfo_names()) {
    // A data-dependent op has no graph form (Note [Data-dependent output shapes]).
    if (covers_op_with(find_opinfo(name), kiln::kNonTraceable)) continue;
    for (const Sample& s : find_opinfo(name).samples()) {
      kiln::TracedFunction f = kiln::trace(s.call, s.inputs);
      for (kiln::ir::Node* node : f.graph().nodes()) {
        if (node->kind() != kiln::ir::NodeKind::Op) continue;
        const kiln::OpDef& op = *node->op();
        if (!kiln::has_cuda_pointwise_kernel(op)) continue;
        Case c{&op, clone_attrs(op, node->attrs()), node->output(0)->type().dtype, {}, {}};
        for (const kiln::ir::Value* v : node->inputs()) {
          c.sizes.push_back(v->type().sizes);
          c.dtypes.push_back(v->type().dtype);
        }
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// Every op with a CUDA pointwise kernel and default attributes, all inputs of one dtype, for
// each dtype its rules accept; fill_, full and copy_ over dtype pairs.
std::vector<Case> sweep_cases() {
  const DType kDTypes[] = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16,
                           kiln::kInt64,   kiln::kInt32,   kiln::kBool,    kiln::kUInt8,
                           kiln::kInt8,    kiln::kInt16};
  std::vector<Case> cases;
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (!kiln::has_cuda_pointwise_kernel(*op) || op->input_names.empty()) continue;
    std::shared_ptr<void> attrs(op->attrs->make_default(), op->attrs->destroy);
    if (op->attrs_type == "ClampAttrs") {  // the default, no bound at all, is an error
      auto* clamp = static_cast<kiln::ClampAttrs*>(attrs.get());
      clamp->min = -1;
      clamp->max = 1;
    }
    for (DType t : kDTypes) {
      Case c{op, attrs, t, {}, {}};
      for (size_t i = 0; i < op->input_names.size(); ++i) {
        c.sizes.push_back({3});
        c.dtypes.push_back(t);
      }
      try {
        std::vector<kiln::MetaRef> m = c.metas();
        op->shape(*op, m, attrs.get());
        c.output = op->dtype(*op, m, attrs.get(), 0);
      } catch (const kiln::Error&) {
        continue;  // the op rejects this dtype
      }
      cases.push_back(std::move(c));
    }
  }
  const kiln::OpDef& full = kiln::get_op("full");
  const kiln::OpDef& copy = kiln::get_op("copy_");
  for (DType to : kDTypes) {
    kiln::FullAttrs fa;
    fa.size = {3};
    fa.value = 2.5;
    fa.dtype = to;
    cases.push_back(Case{&full, clone_attrs(full, &fa), to, {}, {}});
    for (DType from : kDTypes) {
      kiln::NoAttrs none;
      cases.push_back(Case{&copy, clone_attrs(copy, &none), to, {{3}, {3}}, {to, from}});
    }
  }
  return cases;
}

TEST(CudaEagerPointwise, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::vector<Case> cases = sample_cases();
  size_t from_samples = cases.size();
  for (Case& c : sweep_cases())
    cases.push_back(std::move(c));
  // One translation unit of every distinct kernel, each entry renamed apart (NVRTC compiles one
  // program far faster than hundreds).
  std::set<std::string> distinct;
  std::set<std::string> ops;
  std::string tu;
  for (const Case& c : cases) {
    cg::CudaSource src = c.source();
    ASSERT_EQ(src.entries.size(), 1u);
    if (!distinct.insert(src.code).second) continue;
    ops.insert(c.op->name);
    if (tu.empty())
      tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
    std::string code = src.code;
    const std::string& sym = src.entries[0].symbol;
    size_t at = code.find(sym + "(");
    ASSERT_NE(at, std::string::npos) << code;
    code.replace(at, sym.size(), sym + "_" + std::to_string(distinct.size()));
    tu += code;
  }
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (kiln::has_cuda_pointwise_kernel(*op)) {
      EXPECT_TRUE(ops.count(op->name)) << op->name << " has a CUDA kernel that no case compiled";
    }
  }
  for (int arch : {80, 90}) {
    cg::NvrtcResult r;
    try {
      r = cg::nvrtc_compile(tu, "eager_pointwise_corpus", arch, cg::NvrtcOutput::Ptx);
    } catch (const kiln::Error& e) {
      FAIL() << "sm_" << arch << ": " << e.what();
    }
    EXPECT_NE(r.binary.find(".target sm_" + std::to_string(arch)), std::string::npos);
    // Every entry made it into the PTX.
    size_t entries = 0;
    for (size_t at = r.binary.find(".entry"); at != std::string::npos;
         at = r.binary.find(".entry", at + 1))
      ++entries;
    EXPECT_EQ(entries, distinct.size()) << "sm_" << arch;
  }
  std::printf(
      "[cuda eager] %zu calls (%zu from OpInfo samples), %zu distinct kernels of %zu ops, "
      "compiled to PTX for sm_80 and sm_90\n",
      cases.size(), from_samples, distinct.size(), ops.size());
}

TEST(CudaEagerPointwise, AComparisonConvertsItsOperandsToTheResultType) {
  // f32[3] < f64[] compares in float32 (a zero-dim operand ranks below), so the kernel converts
  // the double to float before comparing, as eager and the fusion lowering do.
  const kiln::OpDef& lt = kiln::get_op("lt");
  kiln::NoAttrs none;
  kiln::Shape vec{3}, scalar{};
  std::vector<kiln::MetaRef> m = {{vec, {}, 0, kiln::kFloat32, kiln::kCPU},
                                  {scalar, {}, 0, kiln::kFloat64, kiln::kCPU}};
  std::string code = kiln::cuda_pointwise_source(lt, &none, kiln::kBool, m).code;
  EXPECT_NE(code.find("(float)"), std::string::npos) << code;
  m[0].sizes = scalar;  // both zero-dim: compares in float64, nothing narrowed
  code = kiln::cuda_pointwise_source(lt, &none, kiln::kBool, m).code;
  EXPECT_EQ(code.find("(float)"), std::string::npos) << code;
}

// ---- on a device ----

double ulp_of(DType t, double v) {
  int bits = t == kiln::kFloat64 ? 52 : t == kiln::kFloat16 ? 10 : t == kiln::kBFloat16 ? 7 : 23;
  return std::ldexp(1.0, std::ilogb(std::max(std::abs(v), 1.0)) - bits);
}

// empty's CUDA kernel allocates and nothing more: its elements are whatever the memory held.
bool has_cuda_kernel(const kiln::OpDef& op) {
  return op.compute[static_cast<int>(kiln::DispatchKey::CUDA)] != nullptr && op.name != "empty";
}

double largest_abs(const Tensor& t) {
  Tensor x = t.contiguous().to(kiln::kFloat64);
  double largest = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    largest = std::max(largest, std::abs(x.data_ptr<double>()[i]));
  return largest;
}

// The error a float reduction, matrix product or normalization may add by combining in another
// order: each of its n terms rounded once more, at most the largest term's ulp each (prod and the
// normalizations: relative to the result).
double reordering_slack(const kiln::OpDef& op, std::span<const Tensor> inputs, const Tensor& want,
                        double w) {
  if (inputs.empty() || inputs[0].numel() == 0) return 0;
  double n = 0, largest = 0;
  if (op.name == "mm" || op.name == "bmm") {
    n = static_cast<double>(inputs[0].size(-1));
    largest = largest_abs(inputs[0]) * largest_abs(inputs[1]);
  } else if (op.name == "softmax" || op.name == "log_softmax" || op.name == "layer_norm") {
    // A row's sums; the row length is at most every element.
    n = static_cast<double>(inputs[0].numel());
    largest = std::max(std::abs(w), 1.0);
  } else if (op.name.ends_with("softmax_backward") || op.name == "layer_norm_backward") {
    // A row's sums of products of the gradient with y (or x's deviations, at most 6 over the
    // samples' rstd): each term up to the largest gradient times that.
    n = static_cast<double>(inputs[0].numel());
    largest = largest_abs(inputs[0]) * std::max(largest_abs(inputs[1]), 1.0) * 8;
  } else if (op.name == "convolution" || op.name == "convolution_backward") {
    // Each output sums products of two operands (cuDNN in its own order): at most as many terms
    // as the larger operand has, each at most the two largest magnitudes' product.
    std::vector<double> mags;
    for (const Tensor& t : inputs) {
      n = std::max(n, static_cast<double>(t.numel()));
      mags.push_back(largest_abs(t));
    }
    std::sort(mags.rbegin(), mags.rend());
    largest = mags.size() > 1 ? mags[0] * mags[1] : 0;
  } else if (op.has(kiln::kReduction)) {
    n = static_cast<double>(inputs[0].numel()) /
        static_cast<double>(std::max<int64_t>(want.numel(), 1));
    if (op.name == "prod") return n * ulp_of(want.dtype(), w);
    largest = largest_abs(inputs[0]);
    // var sums squared deviations from the mean, each at most (2 * largest)^2.
    if (op.name == "var") largest = 4 * largest * largest;
  }
  if (!std::isfinite(largest)) return 0;
  return n * ulp_of(want.dtype(), largest);
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  const kiln::OpDef* op = nullptr, std::span<const Tensor> inputs = {}) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (!kiln::is_floating(want.dtype())) {
    EXPECT_TRUE(identical(got, want)) << what;
    return;
  }
  Tensor g = got.contiguous().to(kiln::kFloat64), w = want.contiguous().to(kiln::kFloat64);
  const double* gp = g.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    if (std::isnan(wp[i]) && std::isnan(gp[i])) continue;
    if (gp[i] == wp[i]) continue;
    double slack = op != nullptr ? reordering_slack(*op, inputs, want, wp[i]) : 0;
    ASSERT_LE(std::abs(gp[i] - wp[i]), 4 * ulp_of(want.dtype(), wp[i]) + slack)
        << what << ": element " << i << ": cuda " << gp[i] << ", cpu " << wp[i];
  }
}

class CudaEagerOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaEagerOpInfo, CudaMatchesCpu) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const OpInfo& info = find_opinfo(GetParam());
  for (const Sample& s : info.samples()) {
    SCOPED_TRACE(info.name + " / " + s.name);
    kiln::TracedFunction f = kiln::trace(s.call, s.inputs);
    replay_graph(f.graph(), s.inputs,
                 [](const kiln::ir::Node& node, const std::vector<Tensor>& args) {
                   const kiln::OpDef& op = *node.op();
                   std::vector<Tensor> cpu_args = args;
                   for (Tensor& a : cpu_args)
                     a = a.clone();  // in-place ops write their first input
                   std::vector<Tensor> outs = kiln::call_op(op, cpu_args, node.attrs());
                   if (has_cuda_kernel(op)) {
                     std::vector<Tensor> dev;
                     for (const Tensor& a : args)
                       dev.push_back(a.to(kiln::kCUDA));
                     std::vector<Tensor> got = kiln::call_op(op, dev, node.attrs());
                     expect_close(got[0].to(kiln::kCPU), outs[0], op.name, &op, args);
                   }
                   return outs;
                 });
  }
}

bool reaches_cuda(const OpInfo& info) {
  for (const std::string& c : info.covers) {
    const kiln::OpDef* op = kiln::OpTable::instance().find(c);
    if (op != nullptr && has_cuda_kernel(*op)) return true;
  }
  return false;
}

// A data-dependent op has no graph to replay node by node: compile_opinfo_test.cpp's
// WholeCallOnCudaMatchesCpu compares those calls whole.
std::vector<std::string> cuda_opinfo_names() {
  std::vector<std::string> names;
  for (const std::string& n : opinfo_names()) {
    const OpInfo& info = find_opinfo(n);
    if (reaches_cuda(info) && !covers_op_with(info, kiln::kNonTraceable)) names.push_back(n);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaEagerOpInfo, ::testing::ValuesIn(cuda_opinfo_names()),
                         opinfo_test_name);

}  // namespace
}  // namespace kiln_test
