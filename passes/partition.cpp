#include "kiln/passes/partition.h"

#include <unordered_map>
#include <unordered_set>

#include "kiln/base/error.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/min_cut.h"

namespace kiln::passes {
namespace {

using ValueMap = std::unordered_map<const ir::Value*, ir::Value*>;

// Appends a copy of `n` to `g`, reading its inputs through `map`, and records its outputs.
void copy_node(ir::Graph& g, const ir::Node& n, ValueMap& map) {
  std::vector<ir::Value*> inputs;
  for (const ir::Value* v : n.inputs())
    inputs.push_back(map.at(v));
  ir::Node* copy = g.create_copy(n, inputs);
  for (size_t i = 0; i < n.num_outputs(); ++i)
    map[n.output(i)] = copy->output(i);
}

int64_t bytes_of(const ir::TensorType& t) {
  return t.numel() * static_cast<int64_t>(element_size(t.dtype));
}

// Cheap to run again in backward: pointwise ops and views. Matrix products, reductions and
// random ops are never recomputed (a reduction's input is usually far larger than its result,
// and a random op would need its generator state again).
bool recomputable(const ir::Node* n) {
  if (n->kind() != ir::NodeKind::Op || n->num_outputs() != 1) return false;
  const OpDef& op = *n->op();
  return (op.has(kPointwise) || op.has(kView)) && !op.has(kRandom) && !op.has(kInPlace);
}

// Note [Rematerialization]
// Which forward values to save is a minimum cut (the AOTAutograd formulation). Each forward
// value v is an edge v_in -> v_out whose capacity is its size in bytes. The source feeds every
// value that backward cannot recompute (primals, results of non-recomputable ops); a
// recomputable op's output is fed by its inputs' v_out; every value backward reads drains to
// the sink. A cut separates backward from the source through saved values only, and the
// minimum one saves the fewest bytes; the recomputable values between the cut and backward's
// reads are run again in backward. Constants cost nothing: both graphs hold their own copy.
// A primal costs one byte: the caller's tensor is alive for the call anyway, and saving it
// writes nothing, where saving a value computed from it writes the value in forward and reads
// it back in backward. So the cut recomputes from primals when it can (LayerNorm's backward
// reads x and the saved mean, not a saved x - mean); the one byte breaks ties toward values
// already computed. Partition::saved_bytes still counts a saved primal's full size.
std::vector<const ir::Value*> choose_saved(const std::vector<const ir::Value*>& forward_values,
                                           const std::unordered_set<const ir::Value*>& needed) {
  std::unordered_map<const ir::Value*, int> id;
  for (const ir::Value* v : forward_values)
    id.emplace(v, static_cast<int>(id.size()));
  const int source = 0, sink = 1;
  auto in = [&](const ir::Value* v) { return 2 + 2 * id.at(v); };
  auto out = [&](const ir::Value* v) { return 3 + 2 * id.at(v); };
  MinCut cut(2 + 2 * static_cast<int>(id.size()));
  for (const ir::Value* v : forward_values) {
    const ir::Node* n = v->node();
    cut.add_edge(in(v), out(v), n->kind() == ir::NodeKind::Param ? 1 : bytes_of(v->type()));
    if (n->kind() == ir::NodeKind::Param || !recomputable(n)) {
      cut.add_edge(source, in(v), MinCut::kInfinite);
    } else {
      for (const ir::Value* u : n->inputs())
        if (id.count(u) != 0) cut.add_edge(out(u), in(v), MinCut::kInfinite);
    }
    if (needed.count(v) != 0) cut.add_edge(out(v), sink, MinCut::kInfinite);
  }
  cut.solve(source, sink);
  std::vector<const ir::Value*> saved;
  for (const ir::Value* v : forward_values) {
    if (cut.on_source_side(in(v)) && !cut.on_source_side(out(v))) saved.push_back(v);
  }
  return saved;
}

}  // namespace

Partition partition_joint_graph(const ir::Graph& joint, const JointLayout& layout,
                                const PartitionOptions& options) {
  const size_t num_inputs = joint.inputs().size();
  const size_t num_outputs = joint.outputs().size();
  KILN_CHECK(layout.num_primals <= num_inputs && layout.num_forward_outputs <= num_outputs,
             "partition: the layout ({} primals, {} forward outputs) does not fit a joint graph "
             "with {} inputs and {} outputs",
             layout.num_primals, layout.num_forward_outputs, num_inputs, num_outputs);

  // A value is backward's when it depends on a tangent. Constants depend on nothing and are
  // copied into whichever graph reads them rather than saved.
  std::unordered_set<const ir::Value*> on_tangent;
  for (size_t i = layout.num_primals; i < num_inputs; ++i)
    on_tangent.insert(joint.input(i));
  std::unordered_set<const ir::Node*> backward_nodes;
  std::vector<ir::Node*> nodes = joint.nodes();
  for (const ir::Node* n : nodes) {
    if (n->kind() == ir::NodeKind::Param) continue;
    bool dep = false;
    for (const ir::Value* v : n->inputs())
      dep = dep || on_tangent.count(v) != 0;
    if (dep) {
      backward_nodes.insert(n);
      for (size_t i = 0; i < n->num_outputs(); ++i)
        on_tangent.insert(n->output(i));
    }
  }
  for (size_t i = 0; i < layout.num_forward_outputs; ++i) {
    KILN_CHECK(on_tangent.count(joint.outputs()[i]) == 0,
               "partition: forward output {} depends on a gradient placeholder", i);
  }
  auto is_constant = [](const ir::Value* v) { return v->node()->kind() == ir::NodeKind::Constant; };

  // Saved: forward values that a backward node or a gradient output reads.
  std::vector<const ir::Value*> saved;
  std::unordered_set<const ir::Value*> saved_set;
  auto save = [&](const ir::Value* v) {
    if (on_tangent.count(v) == 0 && !is_constant(v) && saved_set.insert(v).second) {
      saved.push_back(v);
    }
  };
  for (const ir::Node* n : nodes) {
    if (backward_nodes.count(n) == 0) continue;
    for (const ir::Value* v : n->inputs())
      save(v);
  }
  for (size_t i = layout.num_forward_outputs; i < num_outputs; ++i)
    save(joint.outputs()[i]);

  // With rematerialization, the saved set is the minimum cut, and the forward nodes between it
  // and backward's reads run again in backward.
  std::unordered_set<const ir::Node*> recompute;
  if (options.rematerialize && !saved.empty()) {
    std::vector<const ir::Value*> forward_values;
    for (const ir::Node* n : nodes) {
      if (backward_nodes.count(n) != 0 || n->kind() == ir::NodeKind::Constant) continue;
      for (size_t i = 0; i < n->num_outputs(); ++i)
        forward_values.push_back(n->output(i));
    }
    saved = choose_saved(forward_values, saved_set);
    std::unordered_set<const ir::Value*> kept(saved.begin(), saved.end());
    std::vector<const ir::Value*> work(saved_set.begin(), saved_set.end());
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      const ir::Node* n = v->node();
      if (kept.count(v) != 0 || n->kind() == ir::NodeKind::Constant) continue;
      KILN_CHECK(recomputable(n), "partition: the cut left {} unsaved but it cannot be recomputed",
                 n->kind_name());
      if (!recompute.insert(n).second) continue;
      for (const ir::Value* u : n->inputs())
        work.push_back(u);
    }
  }

  Partition p;
  p.forward = std::make_shared<ir::Graph>();
  p.backward = std::make_shared<ir::Graph>();

  // Forward: primals -> forward outputs + saved.
  ValueMap fmap;
  for (size_t i = 0; i < layout.num_primals; ++i) {
    const ir::Value* in = joint.input(i);
    fmap[in] = p.forward->add_input(in->type(), in->debug_name());
  }
  for (const ir::Node* n : nodes) {
    if (n->kind() == ir::NodeKind::Param || backward_nodes.count(n) != 0) continue;
    copy_node(*p.forward, *n, fmap);
  }
  for (size_t i = 0; i < layout.num_forward_outputs; ++i)
    p.forward->add_output(fmap.at(joint.outputs()[i]));
  for (const ir::Value* v : saved) {
    p.forward->add_output(fmap.at(v));
    p.saved_bytes += bytes_of(v->type());
  }
  p.num_saved = saved.size();
  eliminate_dead_code(*p.forward);

  // Backward: saved + tangents -> gradients.
  ValueMap bmap;
  for (const ir::Value* v : saved)
    bmap[v] = p.backward->add_input(v->type(), "");
  for (size_t i = layout.num_primals; i < num_inputs; ++i) {
    const ir::Value* in = joint.input(i);
    bmap[in] = p.backward->add_input(in->type(), in->debug_name());
  }
  for (const ir::Node* n : nodes) {
    if (n->kind() == ir::NodeKind::Param) continue;
    if (backward_nodes.count(n) != 0 || recompute.count(n) != 0 ||
        n->kind() == ir::NodeKind::Constant) {
      copy_node(*p.backward, *n, bmap);
    }
  }
  for (size_t i = layout.num_forward_outputs; i < num_outputs; ++i)
    p.backward->add_output(bmap.at(joint.outputs()[i]));
  eliminate_dead_code(*p.backward);
  // Both halves keep the joint graph's symbols (Note [Symbolic types]); the backward binds them
  // from the saved tensors and tangents it is called with.
  for (ir::Graph* g : {p.forward.get(), p.backward.get()})
    if (g->has_symbolic_types()) g->set_symbols_from(joint);
  return p;
}

}  // namespace kiln::passes
