#include "kiln/frontend/compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/base/warning.h"
#include "kiln/frontend/compile/debug_dump.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/compile/segments.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::Auto:
      return "auto";
    case Backend::Interpreter:
      return "interpreter";
    case Backend::LLVM:
      return "llvm";
    case Backend::CUDA:
      return "cuda";
  }
  return "?";
}

namespace compile_detail {
namespace {
bool any_cuda_input(const Signature& sig) {
  return std::any_of(sig.inputs.begin(), sig.inputs.end(),
                     [](const TensorSignature& t) { return t.defined && t.device.is_cuda(); });
}
}  // namespace

struct State {
  Fn fn;
  CompileOptions options;
  std::string name;

  // Serializes captures; never held while a plan runs or while mu is needed by the function
  // being captured (Note [Capture outside the lock]).
  std::mutex capture_mu;
  std::mutex mu;  // guards everything below; plans themselves are immutable once made
  std::vector<std::shared_ptr<const Plan>> plans;
  std::shared_ptr<const Plan> last;
  // Input dims made symbolic by automatic dynamic shapes (Note [Symbolic plans]), per input.
  std::vector<std::vector<bool>> automatic;
  int64_t compiles = 0;
  int64_t cache_hits = 0;
  int64_t eager_calls = 0;
  bool warned_cache_full = false;
};

namespace {

std::atomic<int> next_function_id{0};

// Note [Capture outside the lock]
// Capturing runs the user's function, which may call this function's stats() or dump(), or
// another compiled function. So State::mu is only held to look plans up and to add one, never
// around the capture; State::capture_mu serializes captures of one function across threads.
// The functions this thread is running the body of (capturing, or inlining under a trace) are
// on t_active: finding one there again is recursion, which a trace cannot express.
thread_local std::vector<const State*> t_active;

struct ActiveScope {
  explicit ActiveScope(const State& s) {
    KILN_CHECK(std::find(t_active.begin(), t_active.end(), &s) == t_active.end(),
               "compile: {} calls itself (recursion) while it is being traced; a compiled "
               "function cannot call itself",
               s.name);
    t_active.push_back(&s);
  }
  ~ActiveScope() { t_active.pop_back(); }
  ActiveScope(const ActiveScope&) = delete;
  ActiveScope& operator=(const ActiveScope&) = delete;
};

// Note [Symbolic plans]
// A plan whose forward graph kept symbols (Note [Symbolic tracing]) serves any call that has its
// signature except in the sizes of symbolic inputs, when those sizes bind the symbols
// (ir::bind_symbols: duck-sized dims equal, no symbol 0 or 1, integer dims unchanged). Which
// dims are traced as symbols is CompileOptions::dynamic's choice: all of them, none, or (unset)
// the dims mark_dynamic marked plus the dims a recompile found changed (automatic dynamic
// shapes). Plans are tried in the order they were made, exact signatures first.
// `why` (when given) says why not, for the recompile log.
bool serves(const Plan& p, const Signature& sig, const std::vector<Tensor>& inputs,
            std::string* why = nullptr) {
  auto no = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (!p.symbolic) return false;
  if (p.signature.grad_mode != sig.grad_mode || p.signature.inputs.size() != sig.inputs.size())
    return no("another grad mode or number of inputs");
  const ir::Graph& g = *p.forward;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSignature &a = p.signature.inputs[i], &b = sig.inputs[i];
    if (!same_but_geometry(a, b))
      return no(fmt::format("input {} differs in more than its sizes", i));
    if (!a.defined) continue;
    const ir::TensorType& t = g.input(i)->type();
    if (!t.is_symbolic()) {
      if (a.sizes != b.sizes || a.strides != b.strides)
        return no(fmt::format("input {} has sizes {}, and the plan has it as {}", i,
                              shape_str(b.sizes), t.str()));
      continue;
    }
    // A symbolic input type is contiguous (Note [Symbolic tracing]).
    if (b.sizes.size() != t.sym_sizes.size() || !inputs[i].impl()->is_contiguous())
      return no(
          fmt::format("input {} is not a contiguous tensor of {} dims", i, t.sym_sizes.size()));
  }
  std::vector<int64_t> values;
  try {
    values = ir::bind_symbols(g, inputs, "the symbolic plan");
  } catch (const Error& e) {
    return no(e.what());
  }
  for (const SymFact& f : p.guards)
    if (!f.holds(values)) return no("its guard " + f.str() + " fails");
  return true;
}

std::shared_ptr<const Plan> find_plan(State& s, const Signature& sig,
                                      const std::vector<Tensor>& inputs) {
  std::shared_ptr<const Plan> found;
  for (const auto& p : s.plans) {
    if (p->signature == sig) {
      found = p;
      break;
    }
  }
  for (size_t i = 0; !found && i < s.plans.size(); ++i)
    if (serves(*s.plans[i], sig, inputs)) found = s.plans[i];
  if (found) {
    ++s.cache_hits;
    s.last = found;
  }
  return found;
}

// The dims of a signature that differ from `before`'s when nothing but sizes differ (same
// dtypes, devices, ranks, requires_grad, aliasing and grad mode; strides equal or both
// contiguous), else nullopt.
std::optional<std::vector<std::vector<bool>>> changed_sizes(const Signature& before,
                                                            const Signature& after) {
  if (before.grad_mode != after.grad_mode || before.inputs.size() != after.inputs.size())
    return std::nullopt;
  std::vector<std::vector<bool>> changed(after.inputs.size());
  bool any = false;
  for (size_t i = 0; i < after.inputs.size(); ++i) {
    const TensorSignature &a = before.inputs[i], &b = after.inputs[i];
    if (!same_but_geometry(a, b) || a.sizes.size() != b.sizes.size()) return std::nullopt;
    bool contiguous =
        strides_are_contiguous(a.sizes, a.strides) && strides_are_contiguous(b.sizes, b.strides);
    if (!contiguous && a.strides != b.strides) return std::nullopt;
    changed[i].resize(b.sizes.size());
    for (size_t d = 0; d < b.sizes.size(); ++d) {
      changed[i][d] = a.sizes[d] != b.sizes[d];
      any = any || changed[i][d];
    }
  }
  if (!any) return std::nullopt;
  return changed;
}

// The input dims to trace as symbols for this capture (Note [Symbolic plans]); with the
// default `dynamic`, a recompile caused only by sizes first adds the changed dims to the
// automatic ones and logs them. Called with s.mu held.
std::vector<std::vector<bool>> dims_to_trace(State& s, const Signature& sig,
                                             const std::vector<Tensor>& inputs) {
  std::vector<std::vector<bool>> dims(inputs.size());
  if (s.options.dynamic == false) return dims;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    dims[i].assign(static_cast<size_t>(inputs[i].dim()), s.options.dynamic == true);
    for (int64_t d : dynamic_dims(inputs[i]))
      dims[i][static_cast<size_t>(d)] = true;
  }
  if (s.options.dynamic == true) return dims;
  for (const auto& p : s.plans) {
    std::optional<std::vector<std::vector<bool>>> changed = changed_sizes(p->signature, sig);
    if (!changed) continue;
    s.automatic.resize(inputs.size());
    for (size_t i = 0; i < changed->size(); ++i) {
      s.automatic[i].resize((*changed)[i].size());
      for (size_t d = 0; d < (*changed)[i].size(); ++d) {
        if (!(*changed)[i][d] || s.automatic[i][d]) continue;
        s.automatic[i][d] = true;
        log_line(
            "recompiles",
            fmt::format("{}: input {} dim {} changed size ({} -> {}); it is symbolic from "
                        "now on (automatic dynamic shapes)",
                        s.name, i, d, p->signature.inputs[i].sizes[d], sig.inputs[i].sizes[d]));
      }
    }
    break;
  }
  for (size_t i = 0; i < s.automatic.size() && i < dims.size(); ++i)
    for (size_t d = 0; d < s.automatic[i].size() && d < dims[i].size(); ++d)
      dims[i][d] = dims[i][d] || s.automatic[i][d];
  return dims;
}

// Finds or makes the plan for `sig`. Returns null when the cache is full (run eagerly).
std::shared_ptr<const Plan> plan_for(State& s, const std::vector<Tensor>& inputs,
                                     const Signature& sig) {
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (auto p = find_plan(s, sig, inputs)) return p;
  }
  ActiveScope active(s);
  std::lock_guard<std::mutex> capturing(s.capture_mu);
  std::unique_lock<std::mutex> lock(s.mu);
  if (auto p = find_plan(s, sig, inputs)) return p;  // another thread captured it meanwhile
  if (static_cast<int64_t>(s.plans.size()) >= s.options.cache_limit) {
    if (!s.warned_cache_full) {
      s.warned_cache_full = true;
      size_t compiled = s.plans.size();
      lock.unlock();  // a handler may call into another language (Note [Warning handlers])
      KILN_WARN(
          "{}: {} input signatures compiled, the cache limit; new signatures run eagerly (raise "
          "CompileOptions::cache_limit). This one: {}",
          s.name, compiled, sig.str());
    }
    return nullptr;
  }
  if (!s.plans.empty()) {
    std::string line =
        fmt::format("{}: recompiling (signature {} of at most {}): {}", s.name, s.plans.size() + 1,
                    s.options.cache_limit, describe_change(s.plans.back()->signature, sig));
    // Note [Symbolic plans]: why the most recent symbolic plan does not serve this call (bound
    // again only when the line is printed).
    for (auto it = s.plans.rbegin(); log_topic_enabled("recompiles") && it != s.plans.rend();
         ++it) {
      std::string why;
      if (!(*it)->symbolic || serves(**it, sig, inputs, &why)) continue;
      line += "; the symbolic plan for " + (*it)->signature.str() + " does not fit: " + why;
      break;
    }
    log_line("recompiles", line);
  }
  std::string debug_dir = s.options.debug_dir.empty() ? options().debug_dir : s.options.debug_dir;
  std::vector<std::vector<bool>> dims = dims_to_trace(s, sig, inputs);
  lock.unlock();
  std::shared_ptr<Plan> captured =
      capture_plan(s.fn, inputs, sig, s.options.rematerialize, !debug_dir.empty(),
                   resolve_backend(s.options.backend, any_cuda_input(sig)), dims);
  for (const SymbolicDim& d : captured->symbolic_dims) {
    // A dim asked to be symbolic that the trace specialized: this plan serves only its size.
    if (d.specialized()) log_line("recompiles", fmt::format("{}: {}", s.name, d.str()));
  }
  bool writes_an_argument =
      std::any_of(captured->write_backs.begin(), captured->write_backs.end(),
                  [&](const std::pair<size_t, size_t>& w) { return w.first < inputs.size(); });
  if (!captured->eager && writes_an_argument && sig.has_aliased_inputs()) {
    // Note [Aliased inputs]: the plan wrote into copies that did not alias.
    captured->eager = true;
    captured->eager_reason =
        "some inputs share memory and the function writes into an input in place";
  }
  std::shared_ptr<const Plan> plan = captured;
  lock.lock();
  ++s.compiles;
  s.plans.push_back(plan);
  s.last = plan;
  if (plan->eager) {
    std::string line =
        fmt::format("{}: signature {} runs eagerly: {}", s.name, sig.str(), plan->eager_reason);
    if (log_topic_enabled("fallbacks")) {
      log_line("fallbacks", line);
    } else {
      // A whole signature losing compilation is a performance cliff: say so once, even
      // without KILN_LOGS, as the cache-limit warning does.
      lock.unlock();
      KILN_WARN("{}", line);
      lock.lock();
    }
  }
  for (const std::string& why : plan->fallback_reasons)
    log_line("fallbacks", fmt::format("{}: {}", s.name, why));
  if (!debug_dir.empty()) {
    write_debug_dir(debug_dir, s.name, static_cast<int64_t>(s.plans.size()) - 1, plan, inputs);
  }
  return plan;
}

}  // namespace

bool shares_storage_with_lifted(const std::vector<Tensor>& inputs, const Plan& plan) {
  for (const Tensor& in : inputs) {
    if (!in.defined()) continue;
    for (const Tensor& p : plan.lifted)
      if (p.impl()->storage() == in.impl()->storage()) return true;
  }
  return false;
}

}  // namespace compile_detail

CompiledFunction::CompiledFunction(Fn fn, CompileOptions options)
    : state_(std::make_shared<compile_detail::State>()) {
  KILN_CHECK(fn != nullptr, "compile: the function is empty");
  KILN_CHECK(options.cache_limit >= 1, "compile: cache_limit must be at least 1, got {}",
             options.cache_limit);
  compile_detail::resolve_backend(options.backend);
  state_->fn = std::move(fn);
  state_->name = options.name.empty()
                     ? fmt::format("compiled_fn_{}", compile_detail::next_function_id++)
                     : options.name;
  state_->options = std::move(options);
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) const {
  compile_detail::State& s = *state_;
  if (is_tracing()) {
    // Called inside another capture (or trace): the body is traced into the caller's graph,
    // as torch.compile inlines nested compiled functions, so the caller's backward sees it.
    compile_detail::ActiveScope active(s);
    return s.fn(inputs);
  }
  bool meta = std::any_of(inputs.begin(), inputs.end(),
                          [](const Tensor& t) { return t.defined() && t.device().is_meta(); });
  if (meta) {
    // Meta tensors have shapes but no data: no kernel can run on them, and eager Meta ops
    // already compute exactly the output shapes.
    {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.eager_calls;
    }
    return s.fn(inputs);
  }
  compile_detail::Signature sig = compile_detail::Signature::of(inputs);
  std::shared_ptr<const compile_detail::Plan> plan = compile_detail::plan_for(s, inputs, sig);
  if (plan == nullptr || plan->eager) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.eager_calls;
    }
    return s.fn(inputs);
  }
  if (!plan->write_backs.empty() && compile_detail::shares_storage_with_lifted(inputs, *plan)) {
    // Note [Aliased inputs], for an argument that is also a tensor the function reads from
    // outside its arguments: a write to one must be seen through the other.
    {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.eager_calls;
    }
    return s.fn(inputs);
  }
  try {
    return compile_detail::run_plan(plan, inputs);
  } catch (const compile_detail::BreakShapesChanged& e) {
    // Note [Shapes after a data-dependent break]: nothing of this call is visible yet.
    KILN_WARN_ONCE("{}", e.what());
    {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.eager_calls;
    }
    return s.fn(inputs);
  }
}

CompileStats CompiledFunction::stats() const {
  compile_detail::State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  CompileStats st;
  st.compiles = s.compiles;
  st.cache_hits = s.cache_hits;
  st.eager_calls = s.eager_calls;
  if (s.last && !s.last->eager) {
    compile_detail::PlanFigures f = compile_detail::plan_figures(*s.last);
    st.forward_kernels = f.forward_kernels;
    st.backward_kernels = f.backward_kernels;
    st.fallback_ops = f.fallback_ops;
    st.saved_bytes = f.saved_bytes;
  }
  return st;
}

std::string CompiledFunction::dump() const {
  compile_detail::State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.last) return "# " + s.name + ": nothing compiled yet\n";
  return "# " + s.name + "\n" + compile_detail::plan_dump(*s.last);
}

std::string CompiledFunction::dump(std::string_view stage, bool dot) const {
  compile_detail::State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  KILN_CHECK(s.last != nullptr, "dump: {} has not been called yet, so nothing is compiled", s.name);
  return compile_detail::stage_text(*s.last, stage, dot);
}

CompiledFunction compile(CompiledFunction::Fn fn, CompileOptions options) {
  return CompiledFunction(std::move(fn), std::move(options));
}

CompiledFunction compile(std::function<Tensor(const std::vector<Tensor>&)> fn,
                         CompileOptions options) {
  KILN_CHECK(fn != nullptr, "compile: the function is empty");
  return CompiledFunction(
      [fn = std::move(fn)](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; },
      std::move(options));
}

}  // namespace kiln
