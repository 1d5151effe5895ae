#include "kiln/passes/pass_manager.h"

#include <fmt/ranges.h>

#include <ostream>

#include "kiln/base/error.h"
#include "kiln/base/profiler.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/ir/verifier.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/passes/canonicalize_views.h"
#include "kiln/passes/constant_fold.h"
#include "kiln/passes/cse.h"
#include "kiln/passes/dce.h"
#include "kiln/passes/lower_fusion_group.h"
#include "kiln/passes/propagate_types.h"
#include "kiln/passes/simplify.h"

namespace kiln::passes {
namespace {

bool verify_pass(ir::Graph& g, PassContext&) {
  ir::verify(g);
  return false;
}

bool print_pass(ir::Graph& g, PassContext& ctx) {
  if (ctx.out != nullptr) *ctx.out << g.str();
  return false;
}

bool dce_pass(ir::Graph& g, PassContext&) {
  return eliminate_dead_code(g);
}

bool cse_pass(ir::Graph& g, PassContext&) {
  return eliminate_common_subexpressions(g);
}

bool simplify_pass(ir::Graph& g, PassContext&) {
  return simplify(g);
}

bool constant_fold_pass(ir::Graph& g, PassContext&) {
  return fold_constants(g);
}

bool propagate_types_pass(ir::Graph& g, PassContext&) {
  return propagate_types(g);
}

bool canonicalize_views_pass(ir::Graph& g, PassContext&) {
  return canonicalize_views(g);
}

bool fuse_pass(ir::Graph& g, PassContext& ctx) {
  return fuse(g, ctx.fusion);
}

bool lower_pass(ir::Graph& g, PassContext&) {
  return lower_fusion_groups(g);
}

// Prints the kernel IR of every lowered fusion group (`kiln opt
// --passes=fuse,lower,print-kernels`).
bool print_kernels_pass(ir::Graph& g, PassContext& ctx) {
  if (ctx.out == nullptr) return false;
  for (const ir::Node* n : g.nodes())
    if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().kernel)
      *ctx.out << n->fusion_group().kernel->str();
  return false;
}

// Prints the CUDA C of every lowered fusion group (`kiln opt --passes=fuse,lower,print-cuda`),
// without the preamble every kernel shares (codegen/cuda/cuda_math.h).
bool print_cuda_pass(ir::Graph& g, PassContext& ctx) {
  if (ctx.out == nullptr) return false;
  for (const ir::Node* n : g.nodes())
    if (n->kind() == ir::NodeKind::FusionGroup && n->fusion_group().kernel)
      *ctx.out << codegen::cuda::emit_cuda(*n->fusion_group().kernel).str();
  return false;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const PassInfo& p : all_passes())
    names.push_back(p.name);
  return names;
}

}  // namespace

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      {"verify", "check SSA order, use lists and types against the op table (changes nothing)",
       verify_pass},
      {"print", "print the graph as it is at this point of the pipeline", print_pass},
      {"dce", "remove nodes whose results are unused", dce_pass},
      {"cse", "merge nodes that compute the same op on the same inputs", cse_pass},
      {"simplify", "algebraic rewrites (x*1, x+0, neg(neg(x)), view chains, ...) that keep types",
       simplify_pass},
      {"constant_fold", "evaluate ops on constants once and store the result (up to 64 KiB)",
       constant_fold_pass},
      {"propagate_types", "recompute op outputs' shapes, dtypes and requires_grad from inputs",
       propagate_types_pass},
      {"canonicalize_views", "collapse view chains to one op, drop identity views, fix strides",
       canonicalize_views_pass},
      {"fuse", "group pointwise ops and reductions into prim.fusion_group nodes, one kernel each",
       fuse_pass},
      {"lower", "lower each fusion group to one kernel-IR kernel and verify it", lower_pass},
      {"print-kernels", "print the kernel IR of the lowered fusion groups", print_kernels_pass},
      {"print-cuda", "print the CUDA C of the lowered fusion groups (codegen/cuda/)",
       print_cuda_pass},
  };
  return passes;
}

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : all_passes())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> split_pass_list(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void run_passes(ir::Graph& graph, const std::vector<std::string>& names, PassContext& ctx,
                const PassRunOptions& options) {
  std::vector<const PassInfo*> passes;
  for (const std::string& name : names) {
    const PassInfo* p = find_pass(name);
    KILN_CHECK(p != nullptr, "unknown pass '{}'; the passes are: {}", name,
               fmt::join(pass_names(), ", "));
    passes.push_back(p);
  }
  for (const PassInfo* p : passes) {
    bool changed;
    {
      // One profiler scope per pass ("pass fuse"), so compile-time figures split by pass.
      profiler::RecordScope scope(profiler::ScopeKind::Compile, "pass " + p->name);
      changed = p->run(graph, ctx);
    }
    if (options.verify_each && changed) {
      try {
        ir::verify(graph);
      } catch (const Error& e) {
        KILN_ERROR("the graph is invalid after pass '{}': {}", p->name, e.what());
      }
    }
    if (changed && options.after_change) options.after_change(*p, graph);
  }
}

}  // namespace kiln::passes
