// The traced graph run through the interpreter against eager (DESIGN.md testing layer 1), on
// every OpInfo sample: the forward call, and for samples with floating inputs a function that
// also runs autograd::grad, so that each op's backward formula is traced as well. The same
// kernels run either way, so results must be identical, not merely close. Every traced graph
// also passes the IR verifier and prints, parses and prints back to the same text.
#include <cmath>
#include <cstring>
#include <set>

#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

// OpInfos whose outputs are uninitialized memory: their traced graphs are checked for types
// only, since two runs of `empty` need not return the same bytes.
const std::set<std::string> kUninitializedOutputs = {"empty", "empty_like"};

struct Counts {
  int samples = 0;
  int forward_compared = 0;
  int forward_types_only = 0;
  int forward_other_values = 0;
  int backward_compared = 0;
  int round_trips = 0;
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
        "[trace opinfo] %d samples traced; forward compared %d (%d also on other values, +%d "
        "types only); backward compared %d (each also on other values); print/parse/print "
        "round trips %d\n",
        c.samples, c.forward_compared, c.forward_other_values, c.forward_types_only,
        c.backward_compared, c.round_trips);
  }
};
[[maybe_unused]] auto* const kReport =
    ::testing::AddGlobalTestEnvironment(new ReportCounts());  // gtest owns it

void expect_identical(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(identical(got[i], want[i])) << "output " << i;
}

void check_graph(const kiln::TracedFunction& f) {
  try {
    kiln::ir::verify(f.graph());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "verifier: " << e.what() << "\n" << f.str();
  }
  std::string text = f.str();
  try {
    std::string again = kiln::ir::print(*kiln::ir::parse(text));
    EXPECT_EQ(again, text);
    ++counts().round_trips;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "parse: " << e.what() << "\n" << text;
  }
}

// The same inputs with other values: floating ones scaled (a value outside an op's domain gives
// the same NaN either way), integer and bool ones (indices, masks) kept. Running the graph on
// these catches a value the trace baked in as a constant instead of computing it.
std::vector<Tensor> perturbed(const std::vector<Tensor>& inputs, bool requires_grad) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!kiln::is_floating(t.dtype())) {
      out.push_back(t.detach());
      continue;
    }
    Tensor p = scaled_same_layout(t, 0.75);
    if (requires_grad) p.requires_grad_();
    out.push_back(p);
  }
  return out;
}

bool has_float(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) {
    if (kiln::is_floating(t.dtype())) return true;
  }
  return false;
}

void check_forward(const OpInfo& info, const Sample& s) {
  std::vector<Tensor> during;  // the outputs of the traced run itself
  kiln::TracedFunction f = kiln::trace(
      [&](const std::vector<Tensor>& in) {
        during = s.call(in);
        return during;
      },
      s.inputs);
  ++counts().samples;
  check_graph(f);
  std::vector<Tensor> got = f(s.inputs);
  if (kUninitializedOutputs.count(info.name) != 0) {
    ASSERT_EQ(got.size(), during.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(kiln::ir::TensorType::of(got[i]), kiln::ir::TensorType::of(during[i]));
    }
    ++counts().forward_types_only;
    return;
  }
  expect_identical(got, during);
  // Independent eager runs too, unless each run draws new random numbers.
  if (!covers_op_with(info, kiln::kRandom)) {
    expect_identical(got, s.call(s.inputs));
    if (has_float(s.inputs)) {
      std::vector<Tensor> other = perturbed(s.inputs, false);
      expect_identical(f(other), s.call(other));
      ++counts().forward_other_values;
    }
  }
  ++counts().forward_compared;
}

// Leaves for the floating inputs: aliases of the sample's tensors (same layout), requiring grad.
std::vector<Tensor> grad_inputs(const Sample& s) {
  std::vector<Tensor> in;
  for (const Tensor& t : s.inputs) {
    Tensor a = t.detach();
    if (kiln::is_floating(t.dtype())) a.requires_grad_();
    in.push_back(a);
  }
  return in;
}

// outputs = call(inputs); grads of the differentiable outputs w.r.t. the floating inputs, with
// the incoming gradients `gos`. Returns the gradients `keep` selects.
std::vector<Tensor> run_grad(const Sample& s, const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& gos, const std::vector<bool>& keep) {
  std::vector<Tensor> outs = s.call(inputs), diff_outs, wrt;
  for (const Tensor& o : outs) {
    if (o.requires_grad()) diff_outs.push_back(o);
  }
  for (const Tensor& t : inputs) {
    if (t.requires_grad()) wrt.push_back(t);
  }
  std::vector<Tensor> g = kiln::autograd::grad(diff_outs, wrt, gos, false, false, true);
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.size(); ++i) {
    if (keep.empty() || keep[i]) out.push_back(g[i]);
  }
  return out;
}

void check_backward(const Sample& s) {
  bool any_float = false;
  for (const Tensor& t : s.inputs)
    any_float = any_float || kiln::is_floating(t.dtype());
  if (!any_float) return;
  // A first eager run (it returns early when no output is differentiable: comparisons, index
  // results, factories) finds the differentiable outputs and which inputs get a gradient.
  std::vector<Tensor> gos;
  uint32_t seed = 1000;
  for (const Tensor& o : s.call(grad_inputs(s))) {
    if (o.requires_grad())
      gos.push_back(make_input(o.sizes(), o.dtype(), Layout::Contiguous, -1, 1, seed++));
  }
  if (gos.empty()) return;
  std::vector<Tensor> probe = run_grad(s, grad_inputs(s), gos, {});
  std::vector<bool> keep;
  bool any = false;
  for (const Tensor& g : probe) {
    keep.push_back(g.defined());
    any = any || g.defined();
  }
  if (!any) return;
  size_t n = s.inputs.size();
  // The incoming gradients are graph inputs, after the sample's own.
  std::vector<Tensor> examples = grad_inputs(s);
  examples.insert(examples.end(), gos.begin(), gos.end());
  kiln::TracedFunction f = kiln::trace(
      [&](const std::vector<Tensor>& in) {
        std::vector<Tensor> xs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
        std::vector<Tensor> gs(in.begin() + static_cast<std::ptrdiff_t>(n), in.end());
        return run_grad(s, xs, gs, keep);
      },
      examples);
  check_graph(f);
  std::vector<Tensor> run = grad_inputs(s);
  run.insert(run.end(), gos.begin(), gos.end());
  expect_identical(f(run), run_grad(s, grad_inputs(s), gos, keep));
  ++counts().backward_compared;
  // Other values for the inputs and incoming gradients: the backward formulas must read the
  // traced values, not copies of the example's.
  std::vector<Tensor> xs = perturbed(s.inputs, true), other_gos = perturbed(gos, false);
  std::vector<Tensor> other = perturbed(s.inputs, true);
  other.insert(other.end(), other_gos.begin(), other_gos.end());
  expect_identical(f(other), run_grad(s, xs, other_gos, keep));
}

class TraceOpInfo : public ::testing::TestWithParam<std::string> {};

// An op whose output shape depends on the data (nonzero, masked_select, a mask index) has no
// graph form: trace() refuses it, naming it (Note [Data-dependent output shapes]).
void check_refused(const OpInfo& info, const Sample& s) {
  try {
    kiln::trace(s.call, s.inputs);
    ADD_FAILURE() << "trace accepted a data-dependent op";
  } catch (const kiln::Error& e) {
    bool named = false;
    for (const std::string& op : info.covers)
      named = named || (kiln::OpTable::instance().get(op).has(kiln::kNonTraceable) &&
                        std::string(e.what()).find("'" + op + "'") != std::string::npos);
    EXPECT_TRUE(named) << e.what();
  }
}

TEST_P(TraceOpInfo, InterpreterMatchesEager) {
  const OpInfo& info = find_opinfo(GetParam());
  for (const Sample& s : info.samples()) {
    SCOPED_TRACE(info.name + " / " + s.name);
    if (covers_op_with(info, kiln::kNonTraceable)) {
      check_refused(info, s);
      continue;
    }
    try {
      check_forward(info, s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "forward: " << e.what();
    }
    try {
      check_backward(s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "backward: " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TraceOpInfo, ::testing::ValuesIn(opinfo_names()), opinfo_test_name);

}  // namespace
}  // namespace kiln_test
