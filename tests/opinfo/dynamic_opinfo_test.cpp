// trace() with symbolic sizes on every OpInfo sample (Note [Symbolic tracing]), then the traced
// graph called on the sample's inputs narrowed to smaller sizes, against eager code at those
// sizes. The graph must either refuse the smaller sizes (a symbol it specialized, a dim it
// kept an integer) or compute exactly what eager computes: a symbol that survives the trace
// while some value depended on its traced size would give a wrong answer here, on whichever op
// reads it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "kiln/kiln.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

struct Counts {
  int samples = 0;
  int symbolic = 0;        // traced graphs that kept at least one symbol
  int compared = 0;        // ran at the smaller sizes, equal to eager
  int refused = 0;         // the graph refused the smaller sizes (specialized)
  int eager_refused = 0;   // the op itself refuses the smaller sizes
  int untraceable = 0;     // the sample cannot be traced (data reads)
  int compiled = 0;        // samples compiled with dynamic=True
  int compiled_calls = 0;  // calls at the smaller sizes compared with eager
  int one_plan = 0;        // samples whose calls at changed sizes all ran on the first plan
  int compiled_grads = 0;  // compiled calls whose gradients were compared with eager's
  std::map<std::string, int> recompiled;  // per OpInfo: samples that needed a second plan
};
Counts& counts() {
  static Counts c;
  return c;
}

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    const Counts& c = counts();
    if (c.compiled > 0)
      std::printf(
          "[dynamic compile opinfo] %d samples compiled with dynamic=True; %d calls at smaller "
          "sizes within tolerance of eager (%d calls compared gradients too); %d samples served "
          "at every size by one plan\n",
          c.compiled, c.compiled_calls, c.compiled_grads, c.one_plan);
    if (!c.recompiled.empty()) {
      // The ops that keep samples from one plan, most first: what symbolic rules to write next.
      std::vector<std::pair<int, std::string>> by_count;
      for (const auto& [name, n] : c.recompiled)
        by_count.emplace_back(n, name);
      std::sort(by_count.rbegin(), by_count.rend());
      std::printf("[dynamic compile opinfo] samples compiled more than once, by OpInfo:");
      for (const auto& [n, name] : by_count)
        std::printf(" %s %d,", name.c_str(), n);
      std::printf("\n");
    }
    if (c.samples == 0) return;
    std::printf(
        "[dynamic trace opinfo] %d samples traced with symbolic sizes (%d kept symbols, %d not "
        "traceable); at smaller sizes: %d equal to eager, %d refused by the graph, %d refused by "
        "eager\n",
        c.samples, c.symbolic, c.untraceable, c.compared, c.refused, c.eager_refused);
  }
};
[[maybe_unused]] auto* const kReport =
    ::testing::AddGlobalTestEnvironment(new ReportCounts());  // gtest owns it

// Each dim of size 2 + by or more `by` smaller, the same way in every input (sizes that were
// equal stay equal, as duck sizing assumed): the leading part of each dim, so values (indices,
// masks) keep their meaning where they still fit.
std::vector<Tensor> narrowed(const std::vector<Tensor>& inputs, int64_t by = 1) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      out.push_back(t);
      continue;
    }
    Tensor n = t.detach();
    for (int64_t d = 0; d < n.dim(); ++d) {
      int64_t size = n.size(d);
      if (size >= 2 + by) n = n.slice(d, 0, size - by);
    }
    // A fresh storage: a contiguous input stays contiguous, and no later write reaches `t`.
    out.push_back(t.is_contiguous() ? n.contiguous().clone() : n.clone());
  }
  return out;
}

bool changes_sizes(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].defined() && a[i].sizes() != b[i].sizes()) return true;
  return false;
}

void check_sample(const OpInfo& info, const Sample& s) {
  if (covers_op_with(info, kiln::kRandom) || covers_op_with(info, kiln::kNonTraceable)) return;
  if (info.name == "empty" || info.name == "empty_like") return;  // uninitialized outputs
  std::vector<Tensor> inputs;
  for (const Tensor& t : s.inputs)
    inputs.push_back(t.defined() ? t.detach().clone() : t);
  std::optional<kiln::TracedFunction> f;
  try {
    f = kiln::trace(s.call, inputs, kiln::TraceOptions{.dynamic = true});
  } catch (const kiln::Error&) {
    ++counts().untraceable;  // the plain trace suite checks these errors
    return;
  }
  ++counts().samples;
  if (f->graph().has_symbolic_types()) ++counts().symbolic;
  std::vector<Tensor> small = narrowed(s.inputs);
  if (!changes_sizes(s.inputs, small)) return;
  std::vector<Tensor> want;
  try {
    want = s.call(small);
  } catch (const kiln::Error&) {
    ++counts().eager_refused;
    return;
  }
  std::vector<Tensor> got;
  try {
    got = (*f)(narrowed(s.inputs));  // fresh copies: the call may write into its inputs
  } catch (const kiln::Error& e) {
    // Only the guard at the graph's inputs may refuse: anything else is a graph that accepted
    // the sizes and then failed to compute with them.
    std::string msg = e.what();
    EXPECT_NE(msg.find("but the graph expects"), std::string::npos) << msg;
    ++counts().refused;
    return;
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(identical(got[i], want[i])) << "output " << i << "; graph:\n" << f->str();
  ++counts().compared;
}

// The outputs of `call` on fresh leaves made from `inputs` (floating ones require grad), and the
// gradients of its differentiable outputs with respect to them, for incoming gradients drawn
// from the outputs' types (the same for the compiled and the eager call at one size).
struct Run {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;
};
Run run_with_grads(const kiln::CompiledFunction::Fn& call, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    Tensor l = t.defined() ? t.detach() : t;
    if (l.defined() && kiln::is_floating(l.dtype())) l.requires_grad_();
    leaves.push_back(l);
  }
  Run r;
  r.outputs = call(leaves);
  std::vector<Tensor> diff_outs, wrt, gos;
  uint32_t seed = 2000;
  for (const Tensor& o : r.outputs) {
    if (!o.requires_grad()) continue;
    diff_outs.push_back(o);
    gos.push_back(make_input(o.sizes(), o.dtype(), Layout::Contiguous, -1, 1, seed++));
  }
  for (const Tensor& t : leaves)
    if (t.defined() && t.requires_grad()) wrt.push_back(t);
  if (!diff_outs.empty() && !wrt.empty())
    r.grads = kiln::autograd::grad(diff_outs, wrt, gos, false, false, /*allow_unused=*/true);
  return r;
}

// At the sample's sizes, then narrowed by 1 and by 2, with the gradients of the floating inputs
// (Note [Symbolic saved sizes]: the backward is traced over the same symbols).
void check_compiled(const OpInfo& info, const Sample& s) {
  if (covers_op_with(info, kiln::kRandom) || covers_op_with(info, kiln::kNonTraceable)) return;
  if (info.name == "empty" || info.name == "empty_like") return;  // uninitialized outputs
  kiln::CompiledFunction f = kiln::compile(
      s.call, kiln::CompileOptions{.backend = kiln::Backend::Interpreter, .dynamic = true});
  kiln::DType computed_in = least_precise_floating(s.inputs);
  ++counts().compiled;
  bool changed = false;
  for (int64_t by = 0; by <= 2; ++by) {
    Run want;
    try {
      want = run_with_grads(s.call, narrowed(s.inputs, by));
    } catch (const kiln::Error&) {
      if (by == 0) throw;  // the sample itself must run
      continue;            // the op refuses these sizes
    }
    Run got = run_with_grads(f, narrowed(s.inputs, by));
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (size_t i = 0; i < got.outputs.size(); ++i)
      EXPECT_TRUE(within_compiled_tolerance(got.outputs[i], want.outputs[i], computed_in))
          << "output " << i << " with the inputs narrowed by " << by << "; plan:\n"
          << f.dump("fused");
    for (size_t i = 0; i < got.grads.size(); ++i)
      EXPECT_TRUE(within_compiled_tolerance(got.grads[i], want.grads[i], computed_in))
          << "gradient " << i << " with the inputs narrowed by " << by << "; plan:\n"
          << f.dump("fused");
    if (!want.grads.empty()) ++counts().compiled_grads;
    if (by > 0) {
      ++counts().compiled_calls;
      changed = changed || changes_sizes(s.inputs, narrowed(s.inputs, by));
    }
  }
  if (changed && f.stats().compiles == 1) ++counts().one_plan;
  if (changed && f.stats().compiles > 1) ++counts().recompiled[info.name];
}

class DynamicTraceOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicTraceOpInfo, SmallerSizesMatchEagerOrAreRefused) {
  const OpInfo& info = find_opinfo(GetParam());
  for_each_sample(info, [&](const Sample& s) { check_sample(info, s); });
}

INSTANTIATE_TEST_SUITE_P(Ops, DynamicTraceOpInfo, ::testing::ValuesIn(opinfo_names()),
                         opinfo_test_name);

class DynamicCompileOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicCompileOpInfo, SymbolicPlansMatchEagerAtEverySize) {
  const OpInfo& info = find_opinfo(GetParam());
  for_each_sample(info, [&](const Sample& s) { check_compiled(info, s); });
}

INSTANTIATE_TEST_SUITE_P(Ops, DynamicCompileOpInfo, ::testing::ValuesIn(opinfo_names()),
                         opinfo_test_name);

}  // namespace
}  // namespace kiln_test
