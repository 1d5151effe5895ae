// The IR text parser: reads the format of ir/README.md back into a Graph.
#pragma once

#include <memory>
#include <string_view>

#include "kiln/ir/graph.h"

namespace kiln::ir {

// Throws kiln::Error naming the line, the column and what was expected when `text` is not a
// well-formed graph. It never crashes on arbitrary bytes. The result is not verified: a value
// may be used before the line that defines it, and types need not satisfy the ops' rules (run
// the verifier for that).
std::shared_ptr<Graph> parse(std::string_view text);

}  // namespace kiln::ir
