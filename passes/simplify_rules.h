// The rewrite rules of the simplify pass (passes/simplify.h), as a table: each rule names its
// rewrite, says which op its pattern's root is, matches the pattern and builds the replacement.
// The pass applies a replacement only when its type equals the root's, so a rule's match need
// not reason about broadcasting, promotion or strides.
#pragma once

#include <span>
#include <string_view>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// What replaces a matched root's (single) output: an existing value, or else one new node
// `op(input) {attrs}` placed where the root was.
struct SimplifyReplacement {
  ir::Value* value = nullptr;
  const OpDef* op = nullptr;
  ir::Value* input = nullptr;
  ir::OpAttrs attrs;
};

struct SimplifyRule {
  std::string_view name;  // the rewrite as a formula, for humans
  std::string_view root;  // the op of the pattern's root node
  bool (*match)(const ir::Node& root);
  SimplifyReplacement (*rewrite)(const ir::Node& root);
};

std::span<const SimplifyRule> simplify_rules();

}  // namespace kiln::passes
