// Symbolic sizes in the graph IR (Note [Symbolic types], ir/type.h): types with symbols parse,
// print back and verify; their integer sizes are the symbols' values at the graph's hints; and
// every op rule written over symbols agrees with the op's integer rule.
#include <gtest/gtest.h>

#include <random>

#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/symbols.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernels/sort_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/sym_assumptions.h"

namespace kiln::ir {
namespace {

const SymInt s0 = SymInt::symbol(0);
const SymInt s1 = SymInt::symbol(1);

constexpr const char* kGraph =
    R"(graph(%x : f32[s0, 32], %y : f32[32], %z : f32[floordiv(s0 + 1, 2), s1] strided[1, floordiv(s0 + 1, 2)], %w : f32[s1] cuda:0) symbols(s0 = 9, s1 = 4):
  %0 : f32[s0, 32] = add(%x, %y) {alpha=1}
  %1 : f32[floordiv(s0 + 1, 2), s1] = relu(%z)
  return (%0, %1)
)";

TEST(SymbolicTypes, ParseKeepsSymbolsAndHints) {
  auto g = parse(kGraph);
  EXPECT_EQ(g->symbol_hints(), (std::vector<int64_t>{9, 4}));
  EXPECT_TRUE(g->has_symbolic_types());
  const TensorType& x = g->input(0)->type();
  EXPECT_EQ(x.sym_sizes, (SymShape{s0, 32}));
  EXPECT_EQ(x.sizes, (Shape{9, 32}));
  EXPECT_TRUE(x.strides.empty());
  const TensorType& z = g->input(2)->type();
  EXPECT_EQ(z.sym_sizes, (SymShape{floordiv(s0 + 1, 2), s1}));
  EXPECT_EQ(z.sym_strides, (SymShape{1, floordiv(s0 + 1, 2)}));
  EXPECT_EQ(z.sizes, (Shape{5, 4}));  // floordiv(9 + 1, 2) = 5
  EXPECT_EQ(z.strides, (Shape{1, 5}));
  EXPECT_FALSE(g->input(1)->type().is_symbolic());
  EXPECT_EQ(g->input(3)->type().device, Device::cuda(0));
  EXPECT_EQ(g->outputs()[1]->type().symbolic_strides(), (SymShape{s1, 1}));
  verify(*g);
}

TEST(SymbolicTypes, PrintsBackAndClones) {
  auto g = parse(kGraph);
  EXPECT_EQ(print(*g), kGraph);
  auto c = g->clone();
  EXPECT_EQ(print(*c), kGraph);
  EXPECT_EQ(c->symbol_hints(), g->symbol_hints());
}

TEST(SymbolicTypes, IntegerSizesWithSymbolicStrides) {
  // A row of a [s0, 3] matrix read down its column: size 3, stride s0.
  constexpr const char* kText = R"(graph(%x : f32[3] strided[s0]) symbols(s0 = 4):
  return (%x)
)";
  auto g = parse(kText);
  const TensorType& t = g->input(0)->type();
  EXPECT_TRUE(t.is_symbolic());
  EXPECT_EQ(t.sizes, (Shape{3}));
  EXPECT_EQ(t.strides, (Shape{4}));
  EXPECT_EQ(print(*g), kText);
  verify(*g);
}

TEST(SymbolicTypes, ContiguousSymbolicStridesAreDropped) {
  auto g = parse(R"(graph(%x : f32[s0, s1, 3] strided[3*s1, 3, 1]) symbols(s0 = 2, s1 = 7):
  return (%x)
)");
  EXPECT_TRUE(g->input(0)->type().sym_strides.empty());
  EXPECT_EQ(g->input(0)->type().symbolic_strides(), (SymShape{3 * s1, 3, 1}));
  EXPECT_EQ(print(*g), R"(graph(%x : f32[s0, s1, 3]) symbols(s0 = 2, s1 = 7):
  return (%x)
)");
}

TEST(SymbolicTypes, ParseErrors) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      parse(text);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("graph(%x : f32[s0]) symbols(s0 = 1):\n  return (%x)\n"),
            "parse error at line 1, column 34: expected a hint of at least 2 for s0, found 1: "
            "sizes 0 and 1 stay integers (Note [Symbolic sizes])");
  EXPECT_EQ(error_of("graph(%x : f32[s1]) symbols(s1 = 4):\n  return (%x)\n"),
            "parse error at line 1, column 29: expected the symbol s0 in the symbols clause "
            "(symbols are numbered from s0 in order), found 's1'");
  EXPECT_EQ(error_of("graph(%x : f32[s0]):\n  return (%x)\n"),
            "parse error at line 1, column 12: the symbol s0 in the type f32[s0] is not declared "
            "in the graph's symbols(...) clause");
  EXPECT_EQ(error_of("graph(%x : f32[s0 - 9]) symbols(s0 = 4):\n  return (%x)\n"),
            "parse error at line 1, column 12: expected non-negative sizes in a type, found [-5] "
            "(the type f32[s0 - 9] at the symbols' hints)");
  EXPECT_EQ(error_of("graph(%x : f32[floordiv(s0, 0)]) symbols(s0 = 4):\n  return (%x)\n"),
            "parse error at line 1, column 16: symbolic size: division by zero in the sizes of a "
            "type");
  EXPECT_EQ(error_of("graph(%x : f32[s0 +]) symbols(s0 = 4):\n  return (%x)\n"),
            "parse error at line 1, column 20: expected an integer, a symbol (s0, s1, ...), "
            "floordiv, mod or '(' for the sizes of a type, found ']'");
}

// Note [Symbolic size attributes]: view's and expand's sizes may be expressions. They print and
// parse back, the verifier checks the ops' types against them, and they are evaluated at a
// call's values and rewritten when symbols are specialized.
constexpr const char* kSizeAttrs =
    R"(graph(%x : f32[s0, 6]) symbols(s0 = 4):
  %0 : f32[s0, 2, 3] = view(%x) {size=[s0, 2, -1]}
  %1 : f32[2, s0, 2, 3] strided[0, 6, 3, 1] = expand(%0) {size=[2, s0, 2, 3]}
  return (%1)
)";

TEST(SymbolicTypes, SizeAttributesOverSymbols) {
  auto g = parse(kSizeAttrs);
  EXPECT_EQ(g->str(), kSizeAttrs);
  verify(*g);
  const Node* view = g->outputs()[0]->node()->input(0)->node();
  EXPECT_TRUE(attrs_are_symbolic(view->op()->attrs, view->attrs()));
  OpAttrs at7 = evaluate_attrs(view->op()->attrs, view->attrs(), std::vector<int64_t>{7});
  EXPECT_EQ(static_cast<const SizeAttrs*>(at7.get())->size, (SymShape{7, 2, -1}));
  EXPECT_FALSE(attrs_are_symbolic(view->op()->attrs, at7.get()));

  // A type the attribute does not give is refused.
  std::string wrong = kSizeAttrs;
  wrong.replace(wrong.find("f32[s0, 2, 3] ="), 15, "f32[s0, 3, 2] =");
  auto bad = parse(wrong);
  EXPECT_THROW(verify(*bad), Error);

  // A symbol the graph does not declare is a parse error.
  std::string undeclared = kSizeAttrs;
  undeclared.replace(undeclared.find("size=[s0, 2, -1]"), 16, "size=[s1, 2, -1]");
  try {
    parse(undeclared);
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the symbol s1 in 'size' of 'view' is not declared"),
              std::string::npos)
        << e.what();
  }

  // Specializing s0 rewrites the attributes with the types.
  specialize_symbols(*g, {true});
  EXPECT_EQ(g->str(), R"(graph(%x : f32[4, 6]):
  %0 : f32[4, 2, 3] = view(%x) {size=[4, 2, -1]}
  %1 : f32[2, 4, 2, 3] strided[0, 6, 3, 1] = expand(%0) {size=[2, 4, 2, 3]}
  return (%1)
)");
  verify(*g);
}

TEST(SymbolicTypes, VerifierChecksHintValues) {
  auto g = parse(kGraph);
  TensorType wrong = g->outputs()[0]->type();
  wrong.sizes[0] = 10;  // s0's hint is 9
  g->outputs()[0]->set_type(wrong);
  try {
    verify(*g);
    FAIL() << "verified";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("type f32[s0, 32] has sizes [9, 32] strides [] at the "
                                         "hints, but records [10, 32] and []"),
              std::string::npos)
        << e.what();
  }
}

// For every op whose rule is written over symbols: with one symbol standing for a size, the
// symbolic rule's output at the hint equals the integer rule's output at that size, for
// shapes drawn at random (broadcasting ones included).
TEST(SymbolicTypes, SymbolicRulesAgreeWithIntegerRules) {
  std::mt19937 rng(11);
  int ops = 0, checked = 0;
  for (const OpDef* op : OpTable::instance().ops()) {
    if (op->sym_shape == nullptr) continue;
    ++ops;
    if (op->variadic || op->attrs == nullptr) continue;
    void* attrs = op->attrs->make_default();
    for (int trial = 0; trial < 8; ++trial) {
      // Hints unlike the other sizes here (2 and 3): an integer rule may accept sizes that
      // happen to be equal where a symbol equals only itself.
      int64_t hint = 5 + static_cast<int64_t>(rng() % 3);
      // Input 0: [hint, 3] or [2, hint, 3]; the others broadcast against it.
      Shape base = trial % 2 ? Shape{hint, 3} : Shape{2, hint, 3};
      SymShape sym_base = trial % 2 ? SymShape{s0, 3} : SymShape{2, s0, 3};
      std::vector<Shape> sizes;
      std::vector<SymShape> sym_sizes;
      for (size_t i = 0; i < op->input_names.size(); ++i) {
        if (i == 0 || trial % 4 < 2) {
          sizes.push_back(base);
          sym_sizes.push_back(sym_base);
        } else {
          sizes.push_back(Shape{3});
          sym_sizes.push_back(SymShape{3});
        }
      }
      std::vector<Shape> strides;
      std::vector<SymShape> sym_strides;
      std::vector<MetaRef> metas;
      std::vector<SymMetaRef> sym_metas;
      for (size_t i = 0; i < sizes.size(); ++i) {
        strides.push_back(contiguous_strides(sizes[i]));
        sym_strides.push_back(contiguous_strides(sym_sizes[i]));
      }
      for (size_t i = 0; i < sizes.size(); ++i) {
        metas.push_back(MetaRef{sizes[i], strides[i], 0, kFloat32, kCPU});
        sym_metas.push_back(SymMetaRef{sym_sizes[i], sym_strides[i], 0, kFloat32, kCPU});
      }
      std::vector<OutputGeometry> want;
      try {
        want = op->shape(*op, metas, attrs);
      } catch (const Error&) {
        // The integer rule rejects these inputs (an op that needs other attributes): the
        // symbolic one must reject them too.
        EXPECT_THROW(op->sym_shape(*op, sym_metas, attrs), Error) << op->name;
        continue;
      }
      std::vector<SymOutputGeometry> got = op->sym_shape(*op, sym_metas, attrs);
      ASSERT_EQ(got.size(), want.size()) << op->name;
      std::vector<int64_t> hints{hint};
      for (size_t k = 0; k < got.size(); ++k) {
        Shape at_hint, strides_at_hint;
        for (const SymInt& s : got[k].sizes)
          at_hint.push_back(s.evaluate(hints));
        for (const SymInt& s : got[k].strides)
          strides_at_hint.push_back(s.evaluate(hints));
        EXPECT_EQ(at_hint, want[k].sizes) << op->name;
        EXPECT_EQ(strides_at_hint, want[k].strides) << op->name;
        ++checked;
      }
    }
    op->attrs->destroy(attrs);
  }
  EXPECT_GT(ops, 50);  // every pointwise op
  EXPECT_GT(checked, 400);
}

// A bound or an index that holds for every value of a symbol (each is at least 2) keeps it; one
// that depends on its value is refused outside a SymAssumptions scope (the next test has one).
TEST(SymbolicTypes, SliceSelectAndTopkHoldOverSymbolsOnlyWhereTheBoundsDoNotDependOnThem) {
  const OpTable& table = OpTable::instance();
  SymShape sizes{s0, 3}, strides{3, 1};
  SymMetaRef x{sizes, strides, 0, kFloat32, kCPU};
  auto geometry = [&](const char* op, const void* attrs) {
    const OpDef& def = table.get(op);
    return def.sym_shape(def, std::span<const SymMetaRef>(&x, 1), attrs).at(0);
  };
  SliceAttrs tail{0, 1, INT64_MAX, 1};  // x[1:]
  SymOutputGeometry g = geometry("slice", &tail);
  EXPECT_EQ(g.sizes, (SymShape{s0 - 1, 3}));
  EXPECT_EQ(g.storage_offset, SymInt(3));
  SliceAttrs all_but_last{0, 0, -1, 2};  // x[:-1:2]
  g = geometry("slice", &all_but_last);
  EXPECT_EQ(g.sizes, (SymShape{floordiv(s0 - 2, 2) + 1, 3}));
  EXPECT_EQ(g.strides, (SymShape{6, 1}));
  for (SliceAttrs refused :
       {SliceAttrs{0, 0, 4, 1}, SliceAttrs{0, -3, INT64_MAX, 1}, SliceAttrs{0, 2, -1, 1}}) {
    EXPECT_THROW(geometry("slice", &refused), Error)
        << refused.start.str() << ":" << refused.end.str();
  }
  SelectAttrs last{0, -1};
  g = geometry("select", &last);
  EXPECT_EQ(g.sizes, (SymShape{3}));
  EXPECT_EQ(g.storage_offset, (s0 - 1) * 3);
  SelectAttrs beyond{0, 2};
  EXPECT_THROW(geometry("select", &beyond), Error);
  TopkAttrs two{2, 0}, three{3, 0};
  EXPECT_EQ(table.get("topk").sym_shape(table.get("topk"), std::span(&x, 1), &two)[0].sizes,
            (SymShape{2, 3}));
  EXPECT_THROW(geometry("topk", &three), Error);
}

// Note [Assumed size facts]: inside a SymAssumptions scope, a bound that depends on a symbol's
// value is assumed where it holds at the hints, and the scope records the fact.
TEST(SymbolicTypes, BoundsThatDependOnASymbolAreAssumedWhereTheyHoldAtTheHints) {
  const OpTable& table = OpTable::instance();
  SymShape sizes{s0, 3}, strides{3, 1};
  SymMetaRef x{sizes, strides, 0, kFloat32, kCPU};
  auto assumed = [&](std::vector<int64_t> hints, const char* op, const void* attrs,
                     std::vector<SymFact>* facts) {
    SymAssumptions scope(hints);
    const OpDef& def = table.get(op);
    SymOutputGeometry g = def.sym_shape(def, std::span<const SymMetaRef>(&x, 1), attrs).at(0);
    *facts = scope.facts();
    return g;
  };
  using R = SymFact::Relation;
  std::vector<SymFact> facts;
  SliceAttrs head{0, 0, 4, 1};  // x[:4]
  EXPECT_EQ(assumed({8}, "slice", &head, &facts).sizes, (SymShape{4, 3}));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 4}}));
  // At a hint of 3, x[:4] is every row, given s0 <= 4.
  EXPECT_EQ(assumed({3}, "slice", &head, &facts).sizes, (SymShape{s0, 3}));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kLe, 4}}));
  SliceAttrs last3{0, -3, INT64_MAX, 1};  // x[-3:]
  SymOutputGeometry g = assumed({8}, "slice", &last3, &facts);
  EXPECT_EQ(g.sizes, (SymShape{3, 3}));
  EXPECT_EQ(g.storage_offset, (s0 - 3) * 3);
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 3}}));
  SliceAttrs inner{0, 2, -1, 1};  // x[2:-1]: s0 - 3 rows, which must not be negative
  EXPECT_EQ(assumed({8}, "slice", &inner, &facts).sizes, (SymShape{s0 - 3, 3}));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 3}}));
  SliceAttrs reversed{0, 4, 2, 1};  // x[4:2]: empty
  EXPECT_EQ(assumed({8}, "slice", &reversed, &facts).sizes, (SymShape{0, 3}));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 4}}));
  // Note [Symbolic slice bounds]: a bound that is itself a symbol. x[1:s1] with s0 = 8 and
  // s1 = 5 is s1 - 1 rows given s1 <= s0; at s1 = 9 every row after the first, given s1 >= s0.
  SliceAttrs up_to_s1{0, 1, s1, 1};
  g = assumed({8, 5}, "slice", &up_to_s1, &facts);
  EXPECT_EQ(g.sizes, (SymShape{s1 - 1, 3}));
  EXPECT_EQ(g.storage_offset, SymInt(3));
  ASSERT_EQ(facts.size(), 1u);
  EXPECT_TRUE(facts[0].holds(std::vector<int64_t>{8, 8}));
  EXPECT_FALSE(facts[0].holds(std::vector<int64_t>{8, 9}));
  EXPECT_EQ(assumed({8, 9}, "slice", &up_to_s1, &facts).sizes, (SymShape{s0 - 1, 3}));
  ASSERT_EQ(facts.size(), 1u);
  EXPECT_FALSE(facts[0].holds(std::vector<int64_t>{8, 7}));
  // x[-s1:]: the last s1 rows, given s1 <= s0.
  SliceAttrs last_s1{0, -s1, INT64_MAX, 1};
  g = assumed({8, 5}, "slice", &last_s1, &facts);
  EXPECT_EQ(g.sizes, (SymShape{s1, 3}));
  EXPECT_EQ(g.storage_offset, (s0 - s1) * 3);
  SelectAttrs third{0, 2};
  EXPECT_EQ(assumed({8}, "select", &third, &facts).storage_offset, SymInt(6));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 3}}));
  TopkAttrs three{3, 0};
  EXPECT_EQ(assumed({8}, "topk", &three, &facts).sizes, (SymShape{3, 3}));
  EXPECT_EQ(facts, (std::vector<SymFact>{{s0, R::kGe, 3}}));
  // Out of bounds at the hints: nothing to assume.
  EXPECT_THROW(assumed({2}, "select", &third, &facts), Error);
  EXPECT_THROW(assumed({2}, "topk", &three, &facts), Error);
}

// A graph's facts: a call whose sizes break one does not bind, and specializing a symbol drops
// the facts left without symbols and renumbers the others.
TEST(SymbolicTypes, CallsMustSatisfyTheGraphsFacts) {
  auto g = parse(R"(graph(%x : f32[s0, s1]) symbols(s0 = 8, s1 = 6) assuming(s0 >= 4, s1 >= 3):
  %0 : f32[4, s1] = slice(%x) {dim=0, start=0, end=4, step=1}
  %1 : f32[s0, 3] strided[s1, 1] = slice(%x) {dim=1, start=-3, end=9223372036854775807, step=1}
  return (%0, %1)
)");
  verify(*g);
  std::vector<Tensor> fits{kiln::zeros({5, 3})}, breaks{kiln::zeros({3, 7})};
  EXPECT_EQ(bind_symbols(*g, fits, "test"), (std::vector<int64_t>{5, 3}));
  try {
    bind_symbols(*g, breaks, "test");
    ADD_FAILURE() << "s0 = 3 breaks s0 >= 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the inputs' sizes give s0 = 3, s1 = 7, but the graph "
                                         "expects s0 >= 4"),
              std::string::npos)
        << e.what();
  }
  specialize_symbols(*g, {true, false});
  EXPECT_EQ(g->symbol_facts(), (std::vector<SymFact>{{s0, SymFact::Relation::kGe, 3}}));
  verify(*g);
}

}  // namespace
}  // namespace kiln::ir
