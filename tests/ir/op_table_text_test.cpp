// Every op of the op table prints and parses through the generic attribute path
// (AttrVTable::fields): one-node graphs with default and with non-default attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <type_traits>
#include <variant>

#include "kiln/base/error.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/op_table.h"

namespace kiln::ir {
namespace {

// Types need not satisfy the ops' shape rules here (that is the verifier's business), so
// they are drawn freely: any dtype, rank 0-3, sometimes strided, on any device.
TensorType random_type(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  TensorType t;
  t.dtype = static_cast<DType>(pick(kNumDTypes));
  int rank = pick(4);
  for (int i = 0; i < rank; ++i)
    t.sizes.push_back(pick(6));
  if (rank > 1 && pick(3) == 0) {
    t.strides = contiguous_strides(t.sizes);
    std::swap(t.strides.front(), t.strides.back());
    if (strides_are_contiguous(t.sizes, t.strides)) t.strides.clear();
  }
  int dev = pick(4);
  t.device = dev == 0 ? kMeta : dev == 1 ? Device::cuda(1) : kCPU;
  t.requires_grad = pick(2) == 0;
  return t;
}

struct DefaultAttrs {
  explicit DefaultAttrs(const AttrVTable* v) : vt(v), p(v->make_default()) {}
  ~DefaultAttrs() { vt->destroy(p); }
  DefaultAttrs(const DefaultAttrs&) = delete;
  DefaultAttrs& operator=(const DefaultAttrs&) = delete;
  const AttrVTable* vt;
  void* p;
};

// A graph with one node of `op`, random input and output types, and attributes `attrs`.
std::shared_ptr<Graph> one_node_graph(const OpDef& op, const void* attrs, std::mt19937& rng) {
  auto g = std::make_shared<Graph>();
  size_t n_inputs = op.input_names.size() + (op.variadic ? 2 : 0);
  std::vector<Value*> inputs;
  for (size_t i = 0; i < n_inputs; ++i)
    inputs.push_back(
        g->add_input(random_type(rng), i < op.input_names.size() ? op.input_names[i] : ""));
  std::vector<TensorType> outputs{random_type(rng)};
  if (rng() % 2 == 0) outputs.push_back(random_type(rng));
  Node* n = g->create_op(op, inputs, attrs, outputs);
  for (Value* v : n->outputs())
    g->add_output(v);
  return g;
}

void expect_round_trip(const OpDef& op, const Graph& g) {
  std::string text = print(g);
  std::shared_ptr<Graph> parsed;
  try {
    parsed = parse(text);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << text;
    return;
  }
  EXPECT_EQ(print(*parsed), text);
  const Node* a = g.nodes().back();
  const Node* b = parsed->nodes().back();
  ASSERT_EQ(b->op(), &op);
  EXPECT_TRUE(op.attrs->equal(a->attrs(), b->attrs())) << text;
  EXPECT_EQ(op.attrs->hash(a->attrs()), op.attrs->hash(b->attrs()));
}

TEST(IrTextOps, EveryOpWithDefaultAttributes) {
  std::mt19937 rng(20240611);
  ASSERT_GT(OpTable::instance().ops().size(), 50u);
  for (const OpDef* op : OpTable::instance().ops()) {
    SCOPED_TRACE(op->name);
    ASSERT_NE(op->attrs, nullptr);
    DefaultAttrs attrs(op->attrs);
    expect_round_trip(*op, *one_node_graph(*op, attrs.p, rng));
  }
}

// Sets every field to a value that differs from the usual defaults, by the field's type.
void set_unusual_values(void* attrs, const AttrVTable* vt, std::mt19937& rng) {
  for (const AttrField& f : vt->fields(attrs)) {
    std::visit(
        [&](auto* p) {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, bool>) {
            *p = !*p;
          } else if constexpr (std::is_same_v<T, int64_t>) {
            *p = static_cast<int64_t>(rng() % 1000) - 500;
          } else if constexpr (std::is_same_v<T, double>) {
            *p = std::ldexp(static_cast<double>(rng()), -40);
          } else if constexpr (std::is_same_v<T, std::string>) {
            *p = "q\"uo\\te\nd";
          } else if constexpr (std::is_same_v<T, Scalar>) {
            *p = rng() % 2 == 0 ? Scalar(0.125) : Scalar(true);
          } else if constexpr (std::is_same_v<T, std::optional<Scalar>>) {
            *p = p->has_value() ? std::nullopt : std::optional<Scalar>(Scalar(int64_t{-3}));
          } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
            *p = p->has_value() ? std::nullopt : std::optional<int64_t>(-2);
          } else if constexpr (std::is_same_v<T, Shape>) {
            *p = Shape{3, -1, 0};
          } else if constexpr (std::is_same_v<T, SymShape>) {
            *p = SymShape{3, -1, 0};
          } else if constexpr (std::is_same_v<T, SymInt>) {
            *p = static_cast<int64_t>(rng() % 1000) - 500;
          } else if constexpr (std::is_same_v<T, DType>) {
            *p = *p == kBFloat16 ? kBool : kBFloat16;
          } else {
            static_assert(std::is_same_v<T, Device>);
            *p = p->is_meta() ? Device::cuda(3) : kMeta;
          }
        },
        f.ref);
  }
}

TEST(IrTextOps, EveryOpWithNonDefaultAttributes) {
  std::mt19937 rng(7);
  size_t fields = 0;
  for (const OpDef* op : OpTable::instance().ops()) {
    SCOPED_TRACE(op->name);
    DefaultAttrs attrs(op->attrs);
    set_unusual_values(attrs.p, op->attrs, rng);
    fields += op->attrs->fields(attrs.p).size();
    DefaultAttrs defaults(op->attrs);
    if (!op->attrs->fields(attrs.p).empty()) {
      EXPECT_FALSE(op->attrs->equal(attrs.p, defaults.p));
    }
    expect_round_trip(*op, *one_node_graph(*op, attrs.p, rng));
  }
  EXPECT_GT(fields, 20u);
}

TEST(IrTextOps, OmittedFieldsKeepTheirDefaults) {
  for (const OpDef* op : OpTable::instance().ops()) {
    SCOPED_TRACE(op->name);
    std::string text = "graph(%x : f32[2]):\n  %0 : f32[2] = " + op->name + "(%x)\n  return (%0)\n";
    auto g = parse(text);
    DefaultAttrs defaults(op->attrs);
    EXPECT_TRUE(op->attrs->equal(g->nodes().back()->attrs(), defaults.p));
  }
}

}  // namespace
}  // namespace kiln::ir
