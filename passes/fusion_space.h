// What one fusion group computes, in terms of its iteration space: the analysis that both the
// fusion pass (may these nodes be one kernel?) and the lowering (which loops, which index for
// each read?) rely on, so that a group the pass forms is always one the lowering can emit.
//
// Note [Fusion spaces]
// A group iterates over one space: the `full` sizes, some of whose dims are `reduced`. Every
// member's value is either
// - Full: one scalar per point of the full space, in the row-major order of the full sizes
//   (the member's own sizes may differ from `full` only by a reshape: same numel, same order);
// - Kept: one scalar per point of the kept space (the full space with the reduced dims removed),
//   in row-major order; reductions produce them, and pointwise members of that size compute on
//   them (a LayerNorm's mean and rstd);
// - ExtView: a view of a value computed outside the group, read straight from that value's
//   buffer with the view's sizes, strides and offset (view canonicalization at the kernel level:
//   the kernel sees explicit strides and never materializes the view).
// A Full member may read a Kept value only when the read is the broadcast back along exactly the
// reduced dims (x - mean), since the kernel holds one kept scalar per row at a time. A pure
// pointwise group has no reduced dims and no Kept values. The lowering emits, per kept point:
// one loop over the reduced dims per reduction (in order, so softmax's sum can use its max),
// then the Kept members, then one loop that stores the Full outputs.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::passes {

enum class SpaceRole : uint8_t { Full, Kept, ExtView };

// Sizes are symbolic where the group's types are (Note [Symbolic types], ir/type.h): the
// analysis compares them as expressions, so a group it accepts is one kernel for every value of
// the symbols.
struct GroupSpace {
  SymShape full;
  std::vector<bool> reduced;  // per dim of `full`; all false for a pointwise group

  bool has_reduction() const;
  SymShape kept_keepdim() const;  // full with each reduced dim set to 1
  SymInt reduced_numel() const;
};

// A view of an outside value, relative to that value's first element.
struct ExtViewGeometry {
  const ir::Value* root = nullptr;  // the outside value whose buffer the view reads
  SymShape sizes;
  SymShape strides;
  SymInt offset = 0;
};

// The product of a type's sizes, as an expression.
SymInt symbolic_numel(const ir::TensorType& t);

struct GroupAnalysis {
  GroupSpace space;
  std::unordered_map<const ir::Value*, SpaceRole> roles;        // every member's output
  std::unordered_map<const ir::Value*, ExtViewGeometry> views;  // the ExtView members
};

// The reductions a group can hold, and how the lowering accumulates them.
bool is_fusible_reduction(const ir::Node& node);
// Pointwise ops with a kernel-IR expression (OpDef::expr).
bool is_fusible_pointwise(const ir::Node& node);

// Classifies `members` (in topological order; `is_member` tells members from outside nodes).
// Returns nullopt, with the reason in *why, when the nodes cannot be one kernel.
std::optional<GroupAnalysis> analyze_group(std::span<const ir::Node* const> members,
                                           const std::function<bool(const ir::Node*)>& is_member,
                                           std::string* why);

}  // namespace kiln::passes
