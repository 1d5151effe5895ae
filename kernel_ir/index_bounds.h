// Interval bounds of integer kernel-IR expressions, for the verifier's check that every index
// stays inside its buffer (Note [Kernel IR]).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// [lo, hi], or, when `why` is set, no bound: why names what the analysis could not follow
// ("it reads accumulator %a").
struct IndexRange {
  int64_t lo = 0;
  int64_t hi = 0;
  std::string why;
  bool bounded() const { return why.empty(); }
};

// Computes exact-arithmetic bounds over all iterations: a loop variable ranges over
// [0, extent - 1], a `let` variable over its value's range, and the rest follows the operators.
// Accumulators, loads and floating values have no bound. Results are cached per expression.
class IndexBounds {
 public:
  explicit IndexBounds(const Kernel& k) : k_(k), cache_(k.exprs.size()) {}
  // Records a variable's range when it is defined (a loop index or an integer let).
  void define(VarId v, IndexRange r);
  const IndexRange& range(ExprId e);

 private:
  IndexRange compute(ExprId e);
  // The range of a min of a max (or a max of a min) whose bounds are bounded, whatever the
  // clamped operand is (Note [Clamped indices]).
  std::optional<IndexRange> clamp(const Expr& e);
  const Kernel& k_;
  std::vector<std::optional<IndexRange>> vars_;  // per variable, once defined
  std::vector<std::optional<IndexRange>> cache_;
};

}  // namespace kiln::kir
