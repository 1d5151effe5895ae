// canonicalize_views on random view chains: whatever it rewrites, every output still reads the
// same elements of the input, the graph verifies, and a second run changes nothing. The golden
// files tests/passes/canonicalize_views_*.ir show the individual collapses.
#include <gtest/gtest.h>

#include <random>

#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/passes/canonicalize_views.h"
#include "kiln/passes/propagate_types.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

class ChainBuilder {
 public:
  explicit ChainBuilder(uint32_t seed) : rng_(seed) {}

  // Appends one random view op reading `v`, or returns null when the random attributes do not
  // fit v's type (the caller then tries again).
  ir::Value* add_view(ir::Graph& g, ir::Value* v) {
    const ir::TensorType& t = v->type();
    auto nd = t.dim();
    switch (pick(8)) {
      case 0: {  // view: flatten, or split the last dim into (1, n), or merge the first two
        Shape s = t.sizes;
        int k = pick(3);
        if (k == 0) s = {t.numel()};
        if (k == 1 && nd > 0) s.insert(s.end() - 1, 1);
        if (k == 2 && nd > 1) {
          s[1] *= s[0];
          s.erase(s.begin());
        }
        return make(g, "view", v, SizeAttrs{to_sym_shape(s)});
      }
      case 1: {  // expand: grow size-1 dims, maybe add a leading one
        Shape s = t.sizes;
        for (int64_t& d : s)
          if (d == 1) d = 1 + pick(3);
        if (pick(2) == 0) s.insert(s.begin(), 1 + pick(2));
        return make(g, "expand", v, SizeAttrs{to_sym_shape(s)});
      }
      case 2:
        if (nd == 0) return nullptr;
        return make(g, "transpose", v, TransposeAttrs{pick(nd) - (pick(2) ? nd : 0), pick(nd)});
      case 3: {
        Shape dims(static_cast<size_t>(nd));
        for (int64_t i = 0; i < nd; ++i)
          dims[i] = i;
        std::shuffle(dims.begin(), dims.end(), rng_);
        return make(g, "permute", v, DimsAttrs{dims});
      }
      case 4: {
        Shape dims;
        for (int64_t i = 0; i < nd; ++i)
          if (pick(2) == 0) dims.push_back(i);
        return make(g, "squeeze", v, DimsAttrs{dims});
      }
      case 5:
        return make(g, "unsqueeze", v, DimAttrs{pick(nd + 1)});
      case 6: {
        if (nd == 0) return nullptr;
        int64_t d = pick(nd), n = t.sizes[d];
        int64_t start = pick(n + 1) - (pick(3) == 0 ? n : 0);
        return make(g, "slice", v, SliceAttrs{d, start, pick(n + 2), 1 + pick(3)});
      }
      default: {
        if (nd == 0) return nullptr;
        int64_t d = pick(nd), n = t.sizes[d];
        if (n == 0) return nullptr;
        return make(g, "select", v, SelectAttrs{d, pick(n)});
      }
    }
  }

  int64_t pick(int64_t n) {
    return std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(n, 1) - 1)(rng_);
  }

 private:
  template <class A>
  ir::Value* make(ir::Graph& g, std::string_view op_name, ir::Value* v, const A& attrs) {
    const OpDef& op = get_op(op_name);
    ir::TensorType in = v->type();
    std::vector<ir::TensorType> types;
    try {
      types = infer_op_types(op, std::span(&in, 1), &attrs);
    } catch (const Error&) {
      return nullptr;
    }
    return g.create_op(op, std::span(&v, 1), &attrs, types)->output();
  }

  std::mt19937 rng_;
};

std::vector<float> elements(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

// The strides that decide which elements a view reads: a dim of size 1 contributes nothing, so
// its stride is free (a type whose other strides are the contiguous ones drops them all, see
// strides_are_contiguous), and an empty tensor reads nothing at all.
Shape addressed_strides(const Tensor& t) {
  Shape s = t.strides();
  for (size_t d = 0; d < s.size(); ++d)
    if (t.sizes()[d] == 1 || t.numel() == 0) s[d] = 0;
  return s;
}

TEST(CanonicalizeViews, RandomChainsReadTheSameElements) {
  size_t changed_graphs = 0, views_before = 0, views_after = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    ChainBuilder b(seed);
    auto g = std::make_shared<ir::Graph>();
    ir::TensorType t;
    t.sizes = {2, 1, 3};
    if (seed % 3 == 1) t.sizes = {4, 3};
    if (seed % 3 == 2) t.sizes = {1, 2, 2, 3};
    ir::Value* x = g->add_input(t, "x");
    ir::Value* v = x;
    int64_t length = 2 + b.pick(4);
    for (int64_t i = 0, tries = 0; i < length && tries < 100; ++tries) {
      if (ir::Value* next = b.add_view(*g, v)) {
        v = next;
        ++i;
        if (b.pick(4) == 0) g->add_output(v);  // an intermediate that must survive
      }
    }
    g->add_output(v);
    ir::verify(*g);
    std::shared_ptr<ir::Graph> original = g->clone();

    bool changed = canonicalize_views(*g);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\nbefore:\n" + original->str() + "after:\n" +
                 g->str());
    ir::verify(*g);
    EXPECT_FALSE(canonicalize_views(*g)) << "a second run changed the graph again";
    changed_graphs += changed ? 1 : 0;
    views_before += original->num_nodes();
    views_after += g->num_nodes();

    std::vector<float> data(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<float>(i);
    Tensor input = from_vector(data, t.sizes);
    std::vector<Tensor> want = interpret(*original, {input});
    std::vector<Tensor> got = interpret(*g, {input});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
      EXPECT_EQ(addressed_strides(got[i]), addressed_strides(want[i])) << "output " << i;
      if (want[i].numel() > 0) {
        EXPECT_EQ(got[i].storage_offset(), want[i].storage_offset()) << "output " << i;
      }
      EXPECT_EQ(elements(got[i]), elements(want[i])) << "output " << i;
    }
  }
  // The chains are random, but many of them must collapse for this test to mean something.
  EXPECT_GT(changed_graphs, 100u);
  EXPECT_LT(views_after, views_before);
}

TEST(CanonicalizeViews, LeavesOtherOpsAlone) {
  manual_seed(2);
  TracedFunction f =
      trace([](const std::vector<Tensor>& x) { return (x[0].exp() * x[0]).sum({0}).relu(); },
            {randn({3, 4})});
  std::shared_ptr<ir::Graph> g = f.graph().clone();
  EXPECT_FALSE(canonicalize_views(*g));
  EXPECT_EQ(g->str(), f.str());
}

}  // namespace
}  // namespace kiln::passes
