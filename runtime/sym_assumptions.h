// Facts a shape rule may assume about symbolic sizes while a graph is traced or checked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/base/sym_int.h"

namespace kiln {

// Note [Assumed size facts]
// Some rules over symbols can only give their answer for some values of a symbol: `x[:4]` has
// 4 rows when s0 >= 4 and s0 rows otherwise, and `x.select(0, 3)` needs s0 >= 4 at all. A rule
// asks `assume(fact)` (op_rules.h) instead of refusing. Inside a SymAssumptions scope the
// answer is yes when the fact holds at the scope's hints (the sizes being traced), and the fact
// is recorded; outside one, or when it fails at the hints, it is no and the rule refuses (the
// tracer then specializes). The graph keeps what was assumed (Graph::symbol_facts, printed as
// `assuming(s0 >= 4)` after the symbols clause), ir::bind_symbols refuses a call whose sizes
// break one, and a compiled plan lists them among its guards. The verifier re-runs the rules in
// a scope over the graph's hints and checks that every fact they assume is one the graph lists.
class SymAssumptions {
 public:
  explicit SymAssumptions(std::span<const int64_t> hints);
  ~SymAssumptions();
  SymAssumptions(const SymAssumptions&) = delete;
  SymAssumptions& operator=(const SymAssumptions&) = delete;

  // What the rules assumed in this scope, each once, in the order first assumed.
  const std::vector<SymFact>& facts() const { return facts_; }

  // `fact` if it holds at the innermost scope's hints (recording it there); false when no scope
  // is open on this thread or it fails at the hints.
  static bool assume(const SymFact& fact);

 private:
  std::vector<int64_t> hints_;
  std::vector<SymFact> facts_;
  SymAssumptions* outer_;
};

// `expr >= least` in the form graphs print: the integer part of `expr` moved to the right
// (s0 - 3 >= 0 becomes s0 >= 3), and a side whose symbol terms are all negative turned round
// (64 - s0 >= 0 becomes s0 <= 64).
SymFact at_least(const SymInt& expr, int64_t least);

// Adds each of `facts` that `into` does not hold yet.
void add_facts(std::vector<SymFact>& into, std::span<const SymFact> facts);

}  // namespace kiln
