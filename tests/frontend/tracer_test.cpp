// trace(): what it records (ops, constants, call sites, functionalized in-place ops, backward
// passes, fallbacks), what it refuses (data reads, writes through aliases, non-traceable ops),
// and that the interpreter reproduces eager results from the recorded graph.
#include <string>

#include "kiln/ir/verifier.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
using kiln::TracedFunction;
using kiln::ir::NodeKind;
namespace ag = kiln::autograd;

std::vector<std::string> kinds(const kiln::ir::Graph& g) {
  std::vector<std::string> out;
  for (const kiln::ir::Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Param) out.push_back(n->kind_name());
  }
  return out;
}

size_t count_kind(const kiln::ir::Graph& g, const std::string& kind) {
  std::vector<std::string> k = kinds(g);
  return static_cast<size_t>(std::count(k.begin(), k.end(), kind));
}

std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}

Tensor input(kiln::Shape shape, uint32_t seed) {
  std::vector<float> v = random_vector<float>(static_cast<size_t>(ref_numel(shape)), -1, 1, seed);
  return kiln::from_vector(v, std::move(shape));
}

// The thread is back to eager: no state, no Tracer key included or excluded.
void expect_not_tracing() {
  EXPECT_EQ(kiln::current_tracing_state(), nullptr);
  EXPECT_FALSE(kiln::is_tracing());
  EXPECT_FALSE(kiln::local_dispatch_keys().included.has(kiln::DispatchKey::Tracer));
  EXPECT_FALSE(kiln::local_dispatch_keys().excluded.has(kiln::DispatchKey::Tracer));
}

TEST(Trace, RecordsOpsWithCallSites) {
  int line = 0;
  TracedFunction f = kiln::trace(
      [&](const std::vector<Tensor>& x) {
        // clang-format off
        line = __LINE__; Tensor y = kiln::mul(x[0], x[1]);
        // clang-format on
        return kiln::relu(y).add(1.0);
      },
      {input({2, 3}, 1), input({2, 3}, 2)});
  const kiln::ir::Graph& g = f.graph();
  EXPECT_EQ(kinds(g), (std::vector<std::string>{"mul", "relu", "add_scalar"}));
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.input(0)->debug_name(), "x0");
  EXPECT_EQ(g.input(1)->debug_name(), "x1");
  EXPECT_EQ(g.outputs().size(), 1u);
  kiln::ir::verify(g);
  const kiln::ir::Node* mul = g.nodes()[2];
  EXPECT_EQ(mul->call_site(), "tracer_test.cpp:" + std::to_string(line) +
                                  " in kiln_test::Trace_RecordsOpsWithCallSites_Test::TestBody");
  EXPECT_NE(f.str().find("# tracer_test.cpp:" + std::to_string(line)), std::string::npos)
      << f.str();

  Tensor a = input({2, 3}, 3), b = input({2, 3}, 4);
  EXPECT_EQ(values(f({a, b})[0]), values(kiln::relu(a * b) + 1.0));
  expect_not_tracing();
}

TEST(Trace, OutsideTensorsBecomeConstantCopies) {
  Tensor w = input({3}, 5);
  TracedFunction f =
      kiln::trace([&](const std::vector<Tensor>& x) { return x[0] * w; }, {input({2, 3}, 6)});
  EXPECT_EQ(kinds(f.graph()), (std::vector<std::string>{"prim.constant", "mul"}));
  Tensor a = input({2, 3}, 7);
  std::vector<float> expected = values(a * w);
  w.fill_(100.0);  // the graph holds a copy
  EXPECT_EQ(values(f({a})[0]), expected);
}

TEST(Trace, OutputsMayBeInputsOrConstants) {
  Tensor c = input({2}, 8);
  TracedFunction f = kiln::trace(
      [&](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{x[0], c};
      },
      {input({2}, 9)});
  EXPECT_EQ(f.graph().outputs()[0], f.graph().input(0));
  Tensor a = input({2}, 10);
  std::vector<Tensor> out = f({a});
  EXPECT_TRUE(out[0].is_same(a));
  EXPECT_EQ(values(out[1]), values(c));
}

TEST(Trace, DetachedAliasesReadTheSameValue) {
  TracedFunction f = kiln::trace(
      [](const std::vector<Tensor>& x) {
        Tensor y = x[0].exp();
        return y.detach() * 2.0;
      },
      {input({4}, 11)});
  EXPECT_EQ(kinds(f.graph()), (std::vector<std::string>{"exp", "mul_scalar"}));
}

TEST(Trace, DataReadsThrowNamingTheCallSiteAndLeaveNoState) {
  for (std::string acc : {"item", "to_vector", "data_ptr", "raw_data"}) {
    SCOPED_TRACE(acc);
    int line = 0;
    auto fn = [&](const std::vector<Tensor>& x) {
      Tensor s = x[0].sum();
      // clang-format off
      if (acc == "item") { line = __LINE__; (void)s.item<float>(); }
      if (acc == "to_vector") { line = __LINE__; (void)s.to_vector<float>(); }
      if (acc == "data_ptr") { line = __LINE__; (void)s.data_ptr<float>(); }
      if (acc == "raw_data") { line = __LINE__; (void)s.raw_data(); }
      // clang-format on
      return s;
    };
    std::string msg = error_message([&] { (void)kiln::trace(fn, {input({3}, 12)}); });
    EXPECT_NE(msg.find("data-dependent read " + acc +
                       "() at tracer_test.cpp:" + std::to_string(line) + " in "),
              std::string::npos)
        << msg;
    expect_not_tracing();
  }
  // Eager code works afterwards.
  Tensor t = kiln::from_vector<float>({1, 2, 3});
  EXPECT_EQ(kiln::sum(t).item<float>(), 6.0f);
}

TEST(Trace, EagerOpsAfterATraceAreNotRecorded) {
  TracedFunction f =
      kiln::trace([](const std::vector<Tensor>& x) { return x[0].neg(); }, {input({2}, 13)});
  size_t before = f.graph().num_nodes();
  Tensor y = kiln::exp(input({2}, 14));
  EXPECT_EQ(f.graph().num_nodes(), before);
  (void)y;
}

TEST(Trace, InPlaceOpsAreRecordedOutOfPlace) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0] * 2.0;
    y.add_(x[1]);
    y.relu_();
    y.clamp_(std::nullopt, 0.5);
    y.mul_(3.0);
    return y;
  };
  Tensor a = input({2, 3}, 15), b = input({3}, 16);
  TracedFunction f = kiln::trace(
      kiln::TraceFn([&](const std::vector<Tensor>& x) { return std::vector{fn(x)}; }), {a, b});
  EXPECT_EQ(kinds(f.graph()),
            (std::vector<std::string>{"mul_scalar", "add", "relu", "clamp", "mul_scalar"}));
  kiln::ir::verify(f.graph());
  Tensor c = input({2, 3}, 17), d = input({3}, 18);
  EXPECT_EQ(values(f({c, d})[0]), values(fn({c, d})));
  EXPECT_TRUE(f.write_backs().empty());
}

TEST(Trace, InPlaceWithPromotionConvertsBack) {
  // f32 self, f64 other: computed in f64, stored as f32.
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0].clone();
    y.add_(x[1]);
    return y;
  };
  Tensor a = input({3}, 19), b = input({3}, 20).to(kiln::kFloat64);
  TracedFunction f = kiln::trace(fn, {a, b});
  EXPECT_EQ(kinds(f.graph()), (std::vector<std::string>{"clone", "add", "convert"}));
  kiln::ir::verify(f.graph());
  EXPECT_EQ(values(f({a, b})[0]), values(fn({a, b})));
}

TEST(Trace, CopyAndFillBecomeValueOps) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = kiln::zeros({2, 3});
    y.copy_(x[1]);  // f64 [3] -> f32 [2, 3]: convert, expand, clone
    Tensor z = kiln::empty({2, 3});
    z.fill_(2.0);
    return std::vector<Tensor>{y + x[0], z};
  };
  Tensor a = input({2, 3}, 21), b = input({3}, 22).to(kiln::kFloat64);
  TracedFunction f = kiln::trace(fn, {a, b});
  EXPECT_EQ(count_kind(f.graph(), "convert"), 1u);
  EXPECT_EQ(count_kind(f.graph(), "expand"), 1u);
  EXPECT_EQ(count_kind(f.graph(), "clone"), 1u);
  EXPECT_EQ(count_kind(f.graph(), "full"), 2u);  // zeros, and fill_ on the empty tensor
  kiln::ir::verify(f.graph());
  Tensor c = input({2, 3}, 23), d = input({3}, 24).to(kiln::kFloat64);
  std::vector<Tensor> got = f({c, d}), want = fn({c, d});
  EXPECT_EQ(values(got[0]), values(want[0]));
  EXPECT_EQ(values(got[1]), values(want[1]));
}

TEST(Trace, WritesIntoAnInputAreWrittenBack) {
  auto fn = [](const std::vector<Tensor>& x) {
    x[0].mul_(2.0);
    x[0].add_(x[1]);
    return std::vector<Tensor>{x[0] + 1.0};
  };
  Tensor a = input({2, 3}, 25), b = input({2, 3}, 26);
  TracedFunction f = kiln::trace(fn, {a, b});
  ASSERT_EQ(f.write_backs().size(), 1u);
  EXPECT_EQ(f.write_backs()[0], (TracedFunction::WriteBack{0, 1}));
  EXPECT_EQ(f.graph().outputs().size(), 2u);
  EXPECT_EQ(f.num_outputs(), 1u);

  Tensor c = input({2, 3}, 27), d = input({2, 3}, 28);
  Tensor c_eager = c.clone();
  std::vector<Tensor> want = fn({c_eager, d});
  std::vector<Tensor> got = f({c, d});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(values(got[0]), values(want[0]));
  EXPECT_EQ(values(c), values(c_eager));  // the argument was updated as eager updated it
}

TEST(Trace, WritesThroughAViewOfAnInputAreWrittenBack) {
  // Note [Writes through views]: the input's new Value is recorded, read and written back.
  auto fn = [](const std::vector<Tensor>& x) {
    x[0].slice(0, 0, 1).zero_();
    return std::vector<Tensor>{x[0].neg()};
  };
  TracedFunction f = kiln::trace(fn, {input({3}, 29)});
  ASSERT_EQ(f.write_backs().size(), 1u);
  Tensor c = input({3}, 30);
  Tensor c_eager = c.clone();
  std::vector<Tensor> want = fn({c_eager});
  std::vector<Tensor> got = f({c});
  EXPECT_EQ(values(got[0]), values(want[0]));
  EXPECT_EQ(values(c), values(c_eager));
  expect_not_tracing();
}

TEST(Trace, WritesThroughAViewOfAnIntermediateReachItsBase) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0] * 1.0;
    Tensor rows = y.view({3, 2});
    rows.select(1, 0).add_(1.0);  // a view of a view
    return std::vector<Tensor>{y.add(1.0), rows.sum({1})};
  };
  TracedFunction f = kiln::trace(fn, {input({6}, 31)});
  Tensor c = input({6}, 32);
  std::vector<Tensor> got = f({c}), want = fn({c});
  EXPECT_EQ(values(got[0]), values(want[0]));
  EXPECT_EQ(values(got[1]), values(want[1]));
  expect_not_tracing();
}

TEST(Trace, WritesThroughAnUnrecordedAliasStillThrowOnRead) {
  auto fn = [](const std::vector<Tensor>& x) {
    Tensor y = x[0] * 1.0;
    Tensor alias;
    {
      kiln::NoGradGuard no_grad;  // a view of a tensor without grad: not recorded
      alias = y.view({2, 3});
    }
    alias.add_(1.0);
    return std::vector<Tensor>{y.add(1.0)};
  };
  EXPECT_TRUE(throws_error_containing(
      [&] { (void)kiln::trace(fn, {input({6}, 33)}); },
      {"modified in place through another view or alias", "tracer_test.cpp"}));
  expect_not_tracing();
}

TEST(Trace, MetaInputsTraceShapesOnly) {
  Tensor a = kiln::empty({4, 3}, kiln::kMeta), w = kiln::empty({3, 5}, kiln::kMeta);
  TracedFunction f = kiln::trace(
      [](const std::vector<Tensor>& x) { return kiln::softmax(kiln::mm(x[0], x[1]), 1); }, {a, w});
  EXPECT_EQ(kinds(f.graph()), (std::vector<std::string>{"mm", "softmax"}));
  const kiln::ir::TensorType& t = f.graph().outputs()[0]->type();
  EXPECT_TRUE(t.device.is_meta());
  EXPECT_EQ(t.sizes, (kiln::Shape{4, 5}));
  kiln::ir::verify(f.graph());
  std::vector<Tensor> out = f({kiln::empty({4, 3}, kiln::kMeta), kiln::empty({3, 5}, kiln::kMeta)});
  EXPECT_TRUE(out[0].device().is_meta());
  EXPECT_EQ(out[0].sizes(), (kiln::Shape{4, 5}));
}

// Flags an op non-traceable for one test.
class NonTraceableScope {
 public:
  explicit NonTraceableScope(const char* name)
      : op_(kiln::OpTable::instance().mutable_op(name)), saved_(op_.flags) {
    op_.flags |= kiln::kNonTraceable;
  }
  ~NonTraceableScope() { op_.flags = saved_; }

 private:
  kiln::OpDef& op_;
  uint32_t saved_;
};

TEST(Trace, NonTraceableOpThrowsNamingOpAndCallSite) {
  NonTraceableScope flag("exp");
  EXPECT_TRUE(throws_error_containing(
      [] {
        (void)kiln::trace([](const std::vector<Tensor>& x) { return kiln::exp(x[0]); },
                          {input({2}, 32)});
      },
      {"'exp'", "tracer_test.cpp:", "cannot be traced"}));
  expect_not_tracing();
}

TEST(Trace, NestedTraceIsIndependent) {
  TracedFunction inner_fn =
      kiln::trace([](const std::vector<Tensor>& x) { return x[0]; }, {input({1}, 0)});
  TracedFunction f = kiln::trace(
      [&](const std::vector<Tensor>& x) {
        inner_fn = kiln::trace([](const std::vector<Tensor>& y) { return y[0].exp(); }, {x[0]});
        EXPECT_TRUE(kiln::is_tracing());
        return x[0].neg();
      },
      {input({2}, 33)});
  EXPECT_EQ(kinds(inner_fn.graph()), (std::vector<std::string>{"exp"}));
  // The inner trace recorded into its own graph only; the outer one goes on afterwards.
  EXPECT_EQ(kinds(f.graph()), (std::vector<std::string>{"neg"}));
}

TEST(Trace, RandomOpsReplayTheirRecordedStream) {
  kiln::manual_seed(7);
  auto fn = [](const std::vector<Tensor>& x) {
    return kiln::dropout(x[0], 0.5, true) + kiln::rand({4});
  };
  Tensor a = input({4}, 34);
  TracedFunction f = kiln::trace(fn, {a});
  kiln::manual_seed(7);
  std::vector<float> eager = values(fn({a}));
  EXPECT_EQ(values(f({a})[0]), eager);
  EXPECT_EQ(values(f({a})[0]), eager);  // same attributes, same numbers, every call
}

}  // namespace
}  // namespace kiln_test
