#include "kiln/passes/pipeline.h"

namespace kiln::passes {
namespace {

void run(ir::Graph& graph, const std::vector<std::string>& names, const PipelineOptions& options) {
  PassContext ctx;
  ctx.fusion = options.fusion;
  PassRunOptions run;
  if (options.after_change) {
    run.after_change = [&](const PassInfo& p, const ir::Graph& g) {
      options.after_change(p.name, g);
    };
  }
  run_passes(graph, names, ctx, run);
}

}  // namespace

const std::vector<std::string>& joint_pipeline() {
  static const std::vector<std::string> names = {
      "simplify",       // x*1, neg(neg x), view chains, ...
      "constant_fold",  // ops on captured constants, evaluated once
      "cse",
      "dce",
  };
  return names;
}

const std::vector<std::string>& partitioned_pipeline() {
  static const std::vector<std::string> names = {
      "simplify",  // what rematerialization duplicated or exposed
      "cse",
      "dce",
      "canonicalize_views",  // shortest view chains, so fusion reads them through strides
      "fuse",                // fusion groups (Note [Fusion spaces])
      "lower",               // one kernel per group
  };
  return names;
}

void optimize_joint_graph(ir::Graph& graph, const PipelineOptions& options) {
  run(graph, joint_pipeline(), options);
}

void optimize_partitioned_graph(ir::Graph& graph, const PipelineOptions& options) {
  run(graph, partitioned_pipeline(), options);
}

}  // namespace kiln::passes
