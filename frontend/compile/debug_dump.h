// What a compiled function shows of itself: the text of each IR stage (CompiledFunction::dump,
// `kiln dump`) and the KILN_DEBUG_DIR folder of each compiled signature.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/frontend/compile/plan.h"

namespace kiln::compile_detail {

// Every stage of `plan` in one text: the figures, the joint graph, the optimized forward and
// backward graphs and the kernel IR (or the steps of a plan with graph breaks).
std::string plan_dump(const Plan& plan);

// The stages `stage_text` knows, in pipeline order: traced, joint, forward, backward, fused,
// kernels.
const std::vector<std::string_view>& stage_names();

// One stage of `plan` as text IR, or as Graphviz DOT with `dot` ("fused" gives two graphs, the
// forward's then the backward's). Throws kiln::Error for an unknown stage, for a stage the plan
// does not have (no backward; graph breaks; an eager plan, naming why) and for --dot of
// "kernels".
std::string stage_text(const Plan& plan, std::string_view stage, bool dot);

// Writes KILN_DEBUG_DIR/<name>/signature_<index>/ (layout in README.md): the stages as text IR
// and DOT (and SVG where Graphviz's `dot` is on PATH), the graph after each pass, the kernel IR
// and generated code, summary.txt and the repro (Note [Repro]). A folder that cannot be made is
// logged under `recompiles` and skipped: a debugging aid never fails the call.
void write_debug_dir(const std::string& root, const std::string& name, int64_t index,
                     const std::shared_ptr<const Plan>& plan, const std::vector<Tensor>& inputs);

}  // namespace kiln::compile_detail
