#include "kiln/frontend/compile/debug_dump.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/frontend/compile/repro.h"
#include "kiln/frontend/compile/segments.h"
#include "kiln/ir/dot.h"
#include "kiln/kernel_ir/kernel_ir.h"

extern char** environ;

namespace kiln::compile_detail {
namespace {

namespace fs = std::filesystem;

// The kernel IR of every lowered fusion group of `g`, in graph order.
std::string kernels_text(const ir::Graph& g) {
  std::string s;
  for (const ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup || !n->fusion_group().kernel) continue;
    const ir::FusionGroupAttrs& group = n->fusion_group();
    // A size parameter that is not a symbol of its own (a loop over s0*s1) says what it is.
    std::vector<kir::VarId> sizes = group.kernel->sizes();
    for (size_t i = 0; i < sizes.size() && i < group.size_args.size(); ++i) {
      if (group.size_args[i].symbol_id()) continue;
      s += fmt::format("# %{} = {}\n", group.kernel->vars[static_cast<size_t>(sizes[i])].name,
                       group.size_args[i].str());
    }
    s += group.kernel->str() + "\n";
  }
  return s;
}

// Graphviz's `dot` from PATH, looked up once; empty when it is not installed.
const std::string& graphviz_dot() {
  static const std::string path = [] {
    const char* env = std::getenv("PATH");
    std::istringstream dirs(env ? env : "");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      fs::path candidate = fs::path(dir) / "dot";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return std::string();
  }();
  return path;
}

// `dot -Tsvg in -o out`; false when it could not run or failed.
bool render_svg(const fs::path& in, const fs::path& out) {
  const std::string& dot = graphviz_dot();
  if (dot.empty()) return false;
  std::string a0 = dot, a1 = "-Tsvg", a2 = in.string(), a3 = "-o", a4 = out.string();
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const ir::Graph& require(const std::shared_ptr<ir::Graph>& g, std::string_view stage,
                         const char* why) {
  KILN_CHECK(g != nullptr, "dump: this signature has no '{}' stage: {}", stage, why);
  return *g;
}

}  // namespace

std::string SymbolicDim::str() const {
  if (specialized())
    return fmt::format("input {} dim {}: specialized to {}: {}", input, dim, hint, why);
  return fmt::format("input {} dim {}: symbolic, s{} (traced at {})", input, dim, symbol, hint);
}

std::string plan_dump(const Plan& p) {
  std::string s = fmt::format("# signature {}\n", p.signature.str());
  if (p.symbolic) {
    s += "# symbolic sizes: serves every call whose sizes bind the symbols; guards:";
    for (size_t i = 0; i < p.guards.size(); ++i)
      s += (i == 0 ? " " : ", ") + p.guards[i].str();
    s += "\n";
  }
  for (const SymbolicDim& d : p.symbolic_dims)
    s += "# " + d.str() + "\n";
  if (p.eager) return s + "# runs eagerly: " + p.eager_reason + "\n";
  if (!p.steps.empty()) {
    s += fmt::format("# {} steps (graph breaks run eagerly between compiled segments)\n",
                     p.steps.size());
    s += "\n# ---- traced forward graph ----\n" + p.forward->str();
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const Step& step = *p.steps[i];
      if (step.fallback != nullptr) {
        s += fmt::format("\n# ---- step {}: eager '{}' ----\n", i, step.fallback->fallback().name);
        continue;
      }
      s += fmt::format("\n# ---- step {}: compiled segment ----\n", i);
      std::shared_ptr<const Plan> sub = step.captured();
      s += sub ? plan_dump(*sub) : "# (not run yet)\n" + step.segment->str();
    }
    return s;
  }
  s += fmt::format(
      "# {} forward kernel(s), {} backward kernel(s), {} fallback op(s), {} saved value(s) "
      "({} bytes)\n",
      p.forward_kernels, p.backward_kernels, p.fallback_ops, p.num_saved, p.saved_bytes);
  s += "\n# ---- joint graph (as traced) ----\n" + p.joint->str();
  s += "\n# ---- forward graph ----\n" + p.forward->str();
  if (p.backward) s += "\n# ---- backward graph ----\n" + p.backward->str();
  s += "\n# ---- forward kernels ----\n" + kernels_text(*p.forward);
  if (p.backward) s += "\n# ---- backward kernels ----\n" + kernels_text(*p.backward);
  return s;
}

const std::vector<std::string_view>& stage_names() {
  static const std::vector<std::string_view> names = {"traced",   "joint", "forward",
                                                      "backward", "fused", "kernels"};
  return names;
}

std::string stage_text(const Plan& p, std::string_view stage, bool dot) {
  bool known = false;
  for (std::string_view s : stage_names())
    known = known || s == stage;
  KILN_CHECK(known, "dump: unknown stage '{}'; the stages are {}", stage,
             fmt::join(stage_names(), ", "));
  KILN_CHECK(!p.eager, "dump: signature {} runs eagerly, so it has no IR stages: {}",
             p.signature.str(), p.eager_reason);
  auto show = [&](const ir::Graph& g) { return dot ? ir::to_dot(g) : g.str(); };
  if (stage == "traced") return show(require(p.traced ? p.traced : p.forward, stage, ""));
  KILN_CHECK(p.steps.empty(),
             "dump: signature {} has graph breaks: only its 'traced' stage is one graph; each "
             "compiled segment has its own stages (see CompiledFunction::dump())",
             p.signature.str());
  if (stage == "joint") return show(*p.joint);
  if (stage == "forward") return show(require(p.partitioned_forward, stage, "not partitioned"));
  const char* no_backward = "no output requires grad, so nothing was differentiated";
  if (stage == "backward") return show(require(p.partitioned_backward, stage, no_backward));
  if (stage == "fused") {
    std::string s = dot ? "" : "# ---- fused forward ----\n";
    s += show(*p.forward);
    if (p.backward) s += (dot ? "" : "\n# ---- fused backward ----\n") + show(*p.backward);
    return s;
  }
  KILN_CHECK(!dot,
             "dump: the 'kernels' stage is kernel IR, which has no Graphviz form; use "
             "--stage fused --dot for the fused graphs");
  std::string s = "# ---- forward kernels ----\n" + kernels_text(*p.forward);
  if (p.backward) s += "\n# ---- backward kernels ----\n" + kernels_text(*p.backward);
  return s;
}

void write_debug_dir(const std::string& root, const std::string& name, int64_t index,
                     const std::shared_ptr<const Plan>& plan, const std::vector<Tensor>& inputs) {
  const Plan& p = *plan;
  fs::path dir = fs::path(root) / name / fmt::format("signature_{}", index);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    log_line("recompiles", fmt::format("{}: cannot write the debug folder {}: {}", name,
                                       dir.string(), ec.message()));
    return;
  }
  auto write = [&](const std::string& file, const std::string& text) {
    std::ofstream(dir / file) << text;
  };
  // Each graph as text IR (runnable with `kiln run`) and DOT, and SVG when Graphviz is here.
  auto write_graph = [&](const std::string& stem, const ir::Graph& g) {
    write(stem + ".ir", g.str());
    write(stem + ".dot", ir::to_dot(g));
    render_svg(dir / (stem + ".dot"), dir / (stem + ".svg"));
  };
  std::string summary = plan_dump(p);
  if (p.eager) {
    write("summary.txt", summary);
    return;
  }
  if (!p.steps.empty()) {
    write("summary.txt", summary);
    write_graph("traced", *p.forward);  // the steps' own graphs are in summary.txt
    return;
  }
  write_graph("traced", *p.traced);
  write_graph("joint", *p.joint);
  write_graph("forward", *p.partitioned_forward);
  if (p.partitioned_backward) write_graph("backward", *p.partitioned_backward);
  fs::create_directories(dir / "passes", ec);
  for (const auto& [stem, text] : p.pass_dumps)
    std::ofstream(dir / "passes" / (stem + ".ir")) << text;
  write_graph("fused_forward", *p.forward);
  if (p.backward) write_graph("fused_backward", *p.backward);
  std::string kernels = kernels_text(*p.forward);
  if (p.backward) kernels += kernels_text(*p.backward);
  write("kernels.kir", kernels);
  if (!p.kernel_sources.empty()) {
    fs::create_directories(dir / backend_name(p.backend), ec);
    for (const auto& [file, text] : p.kernel_sources)
      std::ofstream(dir / backend_name(p.backend) / file) << text;
  }
  std::string repro_note;
  try {
    repro_note = write_repro(dir, name, plan, inputs);
  } catch (const Error& e) {
    repro_note = fmt::format("no repro: {}", e.what());
  }
  if (!repro_note.empty()) summary = "# " + repro_note + "\n" + summary;
  write("summary.txt", summary);
}

}  // namespace kiln::compile_detail
