#include "kiln/passes/fusion_space.h"

#include <fmt/format.h>

#include "kiln/ir/infer_types.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_def.h"

namespace kiln::passes {
namespace {

// The reduced dims of a reduction node, as a mask over its input's dims.
std::vector<bool> reduced_mask(const ir::Node& node) {
  const Shape& dims =
      node.is_op("var") ? node.attrs_as<VarAttrs>().dims : node.attrs_as<ReduceAttrs>().dims;
  int64_t ndim = node.input(0)->type().dim();
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims)
    mask.at(static_cast<size_t>(wrap_dim(node.op()->name, d, ndim))) = true;
  return mask;
}

// Sizes without their leading 1s: two values whose sizes agree this way list their elements in
// the same row-major order.
std::span<const SymInt> strip_leading_ones(const SymShape& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == SymInt(1))
    ++i;
  return std::span<const SymInt>(s).subspan(i);
}

bool same_order(const SymShape& a, const SymShape& b) {
  std::span<const SymInt> x = strip_leading_ones(a), y = strip_leading_ones(b);
  return std::equal(x.begin(), x.end(), y.begin(), y.end());
}

// Views that only reshape: their output lists the input's elements in the same order.
bool is_reshape_view(const ir::Node& node) {
  return node.is_op("view") || node.is_op("unsqueeze") || node.is_op("squeeze");
}

SymInt product(const SymShape& sizes) {
  SymInt n = 1;
  for (const SymInt& s : sizes)
    n = n * s;
  return n;
}

// View `n`'s geometry over `base` (ir::view_geometry); nullopt when its rule refuses it.
std::optional<ExtViewGeometry> compose_view(const ir::Node& n, const ExtViewGeometry& base) {
  const ir::TensorType& in = n.input(0)->type();
  std::optional<SymOutputGeometry> g =
      ir::view_geometry(*n.op(), n.attrs(), {base.sizes, base.strides, base.offset}, in.dtype,
                        in.device, *n.owning_graph());
  if (!g) return std::nullopt;
  return ExtViewGeometry{base.root, std::move(g->sizes), std::move(g->strides), g->storage_offset};
}

// May a Full value of sizes `out` (== space.full) read the Kept value of sizes `in` by
// broadcasting? Only when the broadcast runs along exactly the reduced dims.
bool kept_broadcast_ok(const GroupSpace& space, const SymShape& in) {
  const SymShape& full = space.full;
  if (in.size() > full.size()) return false;
  size_t lead = full.size() - in.size();
  for (size_t d = 0; d < full.size(); ++d) {
    SymInt s = d < lead ? SymInt(1) : in[d - lead];
    if (full[d] == SymInt(1)) continue;
    if (space.reduced[d] ? !(s == SymInt(1)) : !(s == full[d])) return false;
  }
  return true;
}

class Analyzer {
 public:
  Analyzer(const std::function<bool(const ir::Node*)>& is_member, std::string* why)
      : is_member_(is_member), why_(why) {}

  std::optional<GroupAnalysis> run(std::span<const ir::Node* const> members) {
    if (!choose_space(members)) return std::nullopt;
    for (const ir::Node* n : members)
      if (!classify(*n)) return std::nullopt;
    return std::move(a_);
  }

 private:
  bool fail(std::string reason) {
    if (why_ != nullptr) *why_ = std::move(reason);
    return false;
  }

  bool member_value(const ir::Value* v) const { return is_member_(v->node()); }

  bool choose_space(std::span<const ir::Node* const> members) {
    bool have = false;
    for (const ir::Node* n : members) {
      if (!is_fusible_reduction(*n)) continue;
      SymShape full = n->input(0)->type().symbolic_sizes();
      std::vector<bool> mask = reduced_mask(*n);
      if (!have) {
        a_.space = GroupSpace{full, mask};
        have = true;
      } else if (full != a_.space.full || mask != a_.space.reduced) {
        return fail(fmt::format("reductions over different spaces: {} and {}", shape_str(full),
                                shape_str(a_.space.full)));
      }
    }
    if (have) return true;
    // A pointwise group: the space is its largest member's sizes (compared at the hints; a
    // wrong pick only makes classify refuse the group).
    int64_t largest = 0;
    for (const ir::Node* n : members) {
      if (n->op() == nullptr || n->op()->has(kView)) continue;
      const ir::TensorType& t = n->output(0)->type();
      if (!have || t.numel() > largest) {
        a_.space.full = t.symbolic_sizes();
        largest = t.numel();
        have = true;
      }
    }
    a_.space.reduced.assign(a_.space.full.size(), false);
    return have || fail("no computing member");
  }

  std::optional<SpaceRole> role_of(const ir::Value* v) const {
    if (!member_value(v)) return std::nullopt;
    auto it = a_.roles.find(v);
    return it == a_.roles.end() ? std::nullopt : std::optional(it->second);
  }

  bool classify_view(const ir::Node& n) {
    const ir::Value* in = n.input(0);
    const ir::Value* out = n.output(0);
    std::optional<SpaceRole> r = role_of(in);
    if (!r || *r == SpaceRole::ExtView) {
      // A view of an outside value (or of such a view): compose its geometry.
      ExtViewGeometry base;
      if (r) {
        base = a_.views.at(in);
      } else {
        base = {in, in->type().symbolic_sizes(), in->type().symbolic_strides(), 0};
      }
      std::optional<ExtViewGeometry> g = compose_view(n, base);
      if (!g) return fail(n.kind_name() + " has no rule over these sizes to compose the view with");
      a_.views[out] = std::move(*g);
      a_.roles[out] = SpaceRole::ExtView;
      return true;
    }
    if (is_reshape_view(n) && symbolic_numel(in->type()) == symbolic_numel(out->type())) {
      a_.roles[out] = *r;
      return true;
    }
    if (n.is_op("expand")) {
      SymShape in_sizes = in->type().symbolic_sizes(), out_sizes = out->type().symbolic_sizes();
      if (*r == SpaceRole::Full && in_sizes == out_sizes) {
        a_.roles[out] = SpaceRole::Full;
        return true;
      }
      if (*r == SpaceRole::Kept && out_sizes == a_.space.full &&
          kept_broadcast_ok(a_.space, in_sizes)) {
        a_.roles[out] = SpaceRole::Full;
        return true;
      }
    }
    return fail(
        fmt::format("{} of a value computed in the group reorders its elements", n.kind_name()));
  }

  bool classify_reduction(const ir::Node& n) {
    const ir::Value* in = n.input(0);
    std::optional<SpaceRole> r = role_of(in);
    if (r == SpaceRole::Kept) return fail(n.kind_name() + " of a reduced value");
    SymShape sizes = r == SpaceRole::ExtView ? a_.views.at(in).sizes : in->type().symbolic_sizes();
    if (sizes != a_.space.full)
      return fail(fmt::format("{} reads sizes {}, the group iterates over {}", n.kind_name(),
                              shape_str(sizes), shape_str(a_.space.full)));
    a_.roles[n.output(0)] = SpaceRole::Kept;
    return true;
  }

  bool classify_pointwise(const ir::Node& n) {
    const ir::Value* out = n.output(0);
    SymInt numel = symbolic_numel(out->type());
    SymShape out_sizes = out->type().symbolic_sizes();
    SpaceRole role;
    if (numel == product(a_.space.full)) {
      role = SpaceRole::Full;
    } else if (a_.space.has_reduction() && numel == product(a_.space.kept_keepdim())) {
      role = SpaceRole::Kept;
    } else {
      return fail(fmt::format("{} has sizes {}, outside the group's space {}", n.kind_name(),
                              shape_str(out_sizes), shape_str(a_.space.full)));
    }
    if (role == SpaceRole::Full && out_sizes != a_.space.full &&
        !same_order(out_sizes, a_.space.full))
      return fail(fmt::format("{} has sizes {}, a reshape of the group's space {}", n.kind_name(),
                              shape_str(out_sizes), shape_str(a_.space.full)));
    for (const ir::Value* in : n.inputs()) {
      std::optional<SpaceRole> r = role_of(in);
      if (!r || *r == SpaceRole::ExtView) continue;
      SymShape s = in->type().symbolic_sizes();
      if (*r == role) {
        if (!same_order(s, out_sizes))
          return fail(fmt::format("{} broadcasts a value computed in the group ({} to {})",
                                  n.kind_name(), shape_str(s), shape_str(out_sizes)));
        continue;
      }
      if (*r == SpaceRole::Kept && role == SpaceRole::Full && out_sizes == a_.space.full &&
          kept_broadcast_ok(a_.space, s))
        continue;
      return fail(
          fmt::format("{} reads {} across the group's spaces", n.kind_name(), shape_str(s)));
    }
    a_.roles[out] = role;
    return true;
  }

  bool classify(const ir::Node& n) {
    if (n.kind() != ir::NodeKind::Op) return fail(n.kind_name() + " is not an op");
    for (const ir::Value* v : n.inputs())
      if (v->type().device != n.output(0)->type().device)
        return fail(n.kind_name() + " crosses devices");
    if (n.op()->has(kView)) return classify_view(n);
    if (is_fusible_reduction(n)) return classify_reduction(n);
    if (is_fusible_pointwise(n)) return classify_pointwise(n);
    return fail(n.kind_name() + " cannot be fused");
  }

  const std::function<bool(const ir::Node*)>& is_member_;
  std::string* why_;
  GroupAnalysis a_;
};

}  // namespace

bool GroupSpace::has_reduction() const {
  return std::find(reduced.begin(), reduced.end(), true) != reduced.end();
}

SymShape GroupSpace::kept_keepdim() const {
  SymShape s = full;
  for (size_t d = 0; d < s.size(); ++d)
    if (reduced[d]) s[d] = 1;
  return s;
}

SymInt GroupSpace::reduced_numel() const {
  SymInt n = 1;
  for (size_t d = 0; d < full.size(); ++d)
    if (reduced[d]) n = n * full[d];
  return n;
}

SymInt symbolic_numel(const ir::TensorType& t) {
  return t.is_symbolic() ? product(t.sym_sizes) : SymInt(t.numel());
}

bool is_fusible_reduction(const ir::Node& node) {
  if (node.kind() != ir::NodeKind::Op) return false;
  static constexpr std::string_view kOps[] = {"sum", "mean", "amax", "amin", "var"};
  if (std::find(std::begin(kOps), std::end(kOps), node.op()->name) == std::end(kOps)) return false;
  const ir::TensorType& in = node.input(0)->type();
  const ir::TensorType& out = node.output(0)->type();
  // Floating accumulation in the input's own dtype, as the eager kernels do for these dtypes;
  // a reduction of nothing, or over size-1 dims only, stays an eager op.
  bool floating = (in.dtype == kFloat32 || in.dtype == kFloat64) && out.dtype == in.dtype;
  // Counting (a sum of a mask, as amax's backward takes) accumulates exactly in int64.
  bool counting = node.is_op("sum") && !is_floating(in.dtype) && out.dtype == kInt64;
  if (!floating && !counting) return false;
  if (symbolic_numel(in) == SymInt(0) || symbolic_numel(out) == symbolic_numel(in)) return false;
  // A reduction over outer dims (a column sum, as a bias gradient takes) stays an eager op: the
  // lowering nests the reduced loop innermost, so its loads would stride across rows, with no
  // vector loads and its producers evaluated a column at a time; the eager kernel vectorizes
  // across the kept inner dims instead, and its pointwise producers fuse on their own.
  std::vector<bool> reduced = reduced_mask(node);
  bool reduced_outside = false;
  SymShape in_sizes = in.symbolic_sizes();
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (in_sizes[d] == SymInt(1)) continue;
    if (reduced[d])
      reduced_outside = true;
    else if (reduced_outside)
      return false;
  }
  return true;
}

bool is_fusible_pointwise(const ir::Node& node) {
  return node.kind() == ir::NodeKind::Op && node.op()->expr != nullptr && node.num_outputs() == 1 &&
         !(symbolic_numel(node.output(0)->type()) == SymInt(0));
}

std::optional<GroupAnalysis> analyze_group(std::span<const ir::Node* const> members,
                                           const std::function<bool(const ir::Node*)>& is_member,
                                           std::string* why) {
  return Analyzer(is_member, why).run(members);
}

}  // namespace kiln::passes
