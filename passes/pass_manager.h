// The pass registry and the pass manager (DESIGN.md principle 5). A pass is a named function
// over an ir::Graph that says whether it changed the graph. `kiln opt --passes=a,b` and the
// compile pipeline run passes by name through run_passes, which verifies the graph after each
// pass and dumps it only when the pass changed it.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/passes/fuse.h"

namespace kiln::passes {

struct PassContext {
  std::ostream* out = nullptr;  // where `print` and `print-kernels` write (kiln opt: stdout)
  FusionOptions fusion;         // for `fuse`
};

using PassFn = bool (*)(ir::Graph& graph, PassContext& ctx);

struct PassInfo {
  std::string name;
  std::string summary;  // one line, for `kiln opt --help`
  // Every pass handles graphs with symbolic sizes (Note [Symbolic types], ir/type.h): it reads
  // the expressions, never the hints, where a result depends on a size.
  PassFn run = nullptr;
};

// The built-in passes, in the order `kiln opt --help` lists them.
const std::vector<PassInfo>& all_passes();
// Null when no pass has that name.
const PassInfo* find_pass(std::string_view name);

struct PassRunOptions {
  bool verify_each = true;  // run ir::verify after every pass
  // Called after a pass that changed the graph (for dumps: KILN_DEBUG_DIR, --print-after-all).
  std::function<void(const PassInfo& pass, const ir::Graph& graph)> after_change;
};

// Runs `names` in order. An unknown name throws kiln::Error listing the registered passes; a
// verifier failure after a pass throws kiln::Error naming that pass.
void run_passes(ir::Graph& graph, const std::vector<std::string>& names, PassContext& ctx,
                const PassRunOptions& options = {});

// "a,b,,c" -> {"a", "b", "c"}: the --passes syntax.
std::vector<std::string> split_pass_list(std::string_view list);

}  // namespace kiln::passes
