// Graph breaks: a function whose trace contains opaque steps runs as a sequence of compiled
// segments and eager steps (Note [Graph breaks]).
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/compile/signature.h"

namespace kiln::compile_detail {

// One step of a segmented plan: an eager fallback node of the traced forward graph, or a
// compiled segment with its own plan (forward, backward, CompiledBackward Node).
struct Step {
  const ir::Node* fallback = nullptr;     // set for an eager step
  std::shared_ptr<ir::Graph> segment;     // set for a compiled step
  std::vector<const ir::Value*> inputs;   // values of the traced graph the step reads
  std::vector<const ir::Value*> outputs;  // values it defines that later steps or outputs read

  // A compiled step captures a plan from the tensors of the first call with each signature of
  // its inputs: after a data-dependent op (nonzero, masked_select) the same trace sees
  // different shapes on each call (Note [Data-dependent output shapes]).
  std::shared_ptr<const Plan> plan_for(const std::vector<Tensor>& args, bool rematerialize,
                                       Backend backend) const;
  // The first plan captured, or null before the step has run.
  std::shared_ptr<const Plan> captured() const;

 private:
  struct SignatureHash {
    size_t operator()(const Signature& s) const { return s.hash(); }
  };
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Plan> first_;
  mutable std::unordered_map<Signature, std::shared_ptr<const Plan>, SignatureHash> plans_;
};

// Splits `plan.forward` (a forward trace with prim.fallback steps) into steps, in order.
void build_steps(Plan& plan);

// Runs a segmented plan on one call's primals (inputs, then lifted parameters) and returns the
// forward graph's outputs. Throws BreakShapesChanged when a data-dependent op returns tensors of
// other shapes than when the plan was traced.
std::vector<Tensor> run_steps(const Plan& plan, const std::vector<Tensor>& primals);

// Note [Shapes after a data-dependent break]
// The segments after nonzero or masked_select were traced with the count of the traced call, so
// their graphs hold its shapes. A call whose count differs cannot run them: run_steps stops at
// that op, before any segment after it ran and before the plan writes into its inputs, and
// compile() runs the whole function eagerly for that call instead (with a warning, once).
// Only ops of the table (which change nothing in place) may have run eagerly by then.
struct BreakShapesChanged : std::exception {
  explicit BreakShapesChanged(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

}  // namespace kiln::compile_detail
