#include "kiln/passes/fusion_space.h"

#include <fmt/format.h>

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
ShapeRef strip_leading_ones(const Shape& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == 1)
    ++i;
  return ShapeRef(s).subspan(i);
}

bool same_order(const Shape& a, const Shape& b) {
  ShapeRef x = strip_leading_ones(a), y = strip_leading_ones(b);
  return std::equal(x.begin(), x.end(), y.begin(), y.end());
}

// Views that only reshape: their output lists the input's elements in the same order.
bool is_reshape_view(const ir::Node& node) {
  return node.is_op("view") || node.is_op("unsqueeze") || node.is_op("squeeze");
}

// May a Full value of sizes `out` (== space.full) read the Kept value of sizes `in` by
// broadcasting? Only when the broadcast runs along exactly the reduced dims.
bool kept_broadcast_ok(const GroupSpace& space, const Shape& in) {
  const Shape& full = space.full;
  if (in.size() > full.size()) return false;
  size_t lead = full.size() - in.size();
  for (size_t d = 0; d < full.size(); ++d) {
    int64_t s = d < lead ? 1 : in[d - lead];
    if (full[d] == 1) continue;
    if (space.reduced[d] ? s != 1 : s != full[d]) return false;
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
      Shape full = n->input(0)->type().sizes;
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
    // A pointwise group: the space is its largest member's sizes.
    for (const ir::Node* n : members) {
      if (n->op() == nullptr || n->op()->has(kView)) continue;
      const Shape& s = n->output(0)->type().sizes;
      if (!have || shape_numel(s) > shape_numel(a_.space.full)) {
        a_.space.full = s;
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
        base = {in, in->type().sizes, in->type().effective_strides(), 0};
      }
      MetaRef meta{base.sizes, base.strides, base.offset, in->type().dtype, in->type().device};
      std::vector<OutputGeometry> g = n.op()->shape(*n.op(), std::span(&meta, 1), n.attrs());
      a_.views[out] =
          ExtViewGeometry{base.root, g.at(0).sizes, g.at(0).strides, g.at(0).storage_offset};
      a_.roles[out] = SpaceRole::ExtView;
      return true;
    }
    int64_t in_numel = in->type().numel(), out_numel = out->type().numel();
    if (is_reshape_view(n) && in_numel == out_numel) {
      a_.roles[out] = *r;
      return true;
    }
    if (n.is_op("expand")) {
      if (*r == SpaceRole::Full && in->type().sizes == out->type().sizes) {
        a_.roles[out] = SpaceRole::Full;
        return true;
      }
      if (*r == SpaceRole::Kept && out->type().sizes == a_.space.full &&
          kept_broadcast_ok(a_.space, in->type().sizes)) {
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
    const Shape& sizes = r == SpaceRole::ExtView ? a_.views.at(in).sizes : in->type().sizes;
    if (sizes != a_.space.full)
      return fail(fmt::format("{} reads sizes {}, the group iterates over {}", n.kind_name(),
                              shape_str(sizes), shape_str(a_.space.full)));
    a_.roles[n.output(0)] = SpaceRole::Kept;
    return true;
  }

  bool classify_pointwise(const ir::Node& n) {
    const ir::Value* out = n.output(0);
    int64_t numel = out->type().numel();
    SpaceRole role;
    if (numel == shape_numel(a_.space.full)) {
      role = SpaceRole::Full;
    } else if (a_.space.has_reduction() && numel == shape_numel(a_.space.kept_keepdim())) {
      role = SpaceRole::Kept;
    } else {
      return fail(fmt::format("{} has sizes {}, outside the group's space {}", n.kind_name(),
                              shape_str(out->type().sizes), shape_str(a_.space.full)));
    }
    if (role == SpaceRole::Full && out->type().sizes != a_.space.full &&
        !same_order(out->type().sizes, a_.space.full))
      return fail(fmt::format("{} has sizes {}, a reshape of the group's space {}", n.kind_name(),
                              shape_str(out->type().sizes), shape_str(a_.space.full)));
    for (const ir::Value* in : n.inputs()) {
      std::optional<SpaceRole> r = role_of(in);
      if (!r || *r == SpaceRole::ExtView) continue;
      const Shape& s = in->type().sizes;
      if (*r == role) {
        if (!same_order(s, out->type().sizes))
          return fail(fmt::format("{} broadcasts a value computed in the group ({} to {})",
                                  n.kind_name(), shape_str(s), shape_str(out->type().sizes)));
        continue;
      }
      if (*r == SpaceRole::Kept && role == SpaceRole::Full && out->type().sizes == a_.space.full &&
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

Shape GroupSpace::kept_keepdim() const {
  Shape s = full;
  for (size_t d = 0; d < s.size(); ++d)
    if (reduced[d]) s[d] = 1;
  return s;
}

int64_t GroupSpace::reduced_numel() const {
  int64_t n = 1;
  for (size_t d = 0; d < full.size(); ++d)
    if (reduced[d]) n *= full[d];
  return n;
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
  if (in.numel() == 0 || out.numel() == in.numel()) return false;
  // A reduction over outer dims (a column sum, as a bias gradient takes) stays an eager op: the
  // lowering nests the reduced loop innermost, so its loads would stride across rows, with no
  // vector loads and its producers evaluated a column at a time; the eager kernel vectorizes
  // across the kept inner dims instead, and its pointwise producers fuse on their own.
  std::vector<bool> reduced = reduced_mask(node);
  bool reduced_outside = false;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (in.sizes[d] == 1) continue;
    if (reduced[d])
      reduced_outside = true;
    else if (reduced_outside)
      return false;
  }
  return true;
}

bool is_fusible_pointwise(const ir::Node& node) {
  return node.kind() == ir::NodeKind::Op && node.op()->expr != nullptr && node.num_outputs() == 1 &&
         node.output(0)->type().numel() > 0;
}

std::optional<GroupAnalysis> analyze_group(std::span<const ir::Node* const> members,
                                           const std::function<bool(const ir::Node*)>& is_member,
                                           std::string* why) {
  return Analyzer(is_member, why).run(members);
}

}  // namespace kiln::passes
