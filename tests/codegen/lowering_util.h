// The kernels the compiler lowers from graph IR: for tests of what consumes kernel IR.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ir/parser.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/passes/pass_manager.h"

namespace kiln_test {

// The kernels of the fusion groups of `g`, in node order.
inline std::vector<kiln::kir::Kernel> kernels_of(const kiln::ir::Graph& g) {
  std::vector<kiln::kir::Kernel> out;
  for (const kiln::ir::Node* n : g.nodes())
    if (n->kind() == kiln::ir::NodeKind::FusionGroup && n->fusion_group().kernel)
      out.push_back(*n->fusion_group().kernel);
  return out;
}

// The kernels of graph-IR `text` after the fuse and lower passes.
inline std::vector<kiln::kir::Kernel> fuse_and_lower(const std::string& text) {
  std::shared_ptr<kiln::ir::Graph> g = kiln::ir::parse(text);
  kiln::passes::PassContext ctx;
  kiln::passes::run_passes(*g, {"fuse", "lower"}, ctx);
  return kernels_of(*g);
}

}  // namespace kiln_test
