#include "kiln/runtime/sym_assumptions.h"

#include <algorithm>

#include "kiln/base/error.h"

namespace kiln {
namespace {

thread_local SymAssumptions* innermost = nullptr;

}  // namespace

SymAssumptions::SymAssumptions(std::span<const int64_t> hints)
    : hints_(hints.begin(), hints.end()), outer_(innermost) {
  innermost = this;
}

SymAssumptions::~SymAssumptions() {
  innermost = outer_;
}

bool SymAssumptions::assume(const SymFact& fact) {
  SymAssumptions* scope = innermost;
  if (scope == nullptr) return false;
  bool holds = false;
  try {
    holds = fact.holds(scope->hints_);
  } catch (const Error&) {
    return false;  // a symbol the hints do not bind
  }
  if (!holds) return false;
  add_facts(scope->facts_, std::span(&fact, 1));
  return true;
}

SymFact at_least(const SymInt& expr, int64_t least) {
  int64_t constant = 0;
  bool all_negative = true;  // every symbol term: 64 - s0 >= 0 reads better as s0 <= 64
  for (const SymTerm& t : expr.terms()) {
    if (t.factors.empty())
      constant = t.coeff;
    else
      all_negative = all_negative && t.coeff < 0;
  }
  SymInt rest = expr - constant;
  if (all_negative && rest.is_symbolic())
    return SymFact{-rest, SymFact::Relation::kLe, SymInt(constant - least)};
  return SymFact{rest, SymFact::Relation::kGe, SymInt(least - constant)};
}

void add_facts(std::vector<SymFact>& into, std::span<const SymFact> facts) {
  for (const SymFact& f : facts)
    if (std::find(into.begin(), into.end(), f) == into.end()) into.push_back(f);
}

}  // namespace kiln
