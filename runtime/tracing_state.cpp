#include "kiln/runtime/tracing_state.h"

#include <string_view>

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

thread_local TracingState* t_state = nullptr;

void erase_all(std::string& s, std::string_view what) {
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos))
    s.erase(pos, what.size());
}

// std::source_location::function_name() is the compiler's pretty signature: GCC writes
// "std::vector<kiln::Tensor> {anonymous}::mlp(const Tensor&)", Clang "(anonymous
// namespace)::mlp". Both become "mlp"; a lambda becomes its enclosing function, which both
// compilers spell the same way, so golden texts do not depend on the compiler.
std::string short_function_name(const char* pretty) {
  std::string s = pretty;
  erase_all(s, "(anonymous namespace)::");
  erase_all(s, "{anonymous}::");
  int depth = 0;
  size_t paren = std::string::npos;
  for (size_t i = 0; i < s.size() && paren == std::string::npos; ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>' && depth > 0) --depth;
    if (s[i] == '(' && depth == 0) paren = i;
  }
  if (paren != std::string::npos) s.resize(paren);
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>' && depth > 0) --depth;
    if (s[i] == ' ' && depth == 0) start = i + 1;
  }
  return s.substr(start);
}

}  // namespace

TracingState::~TracingState() = default;

void TracingState::on_data_read(const char* accessor) {
  std::string site = short_call_site();
  KILN_ERROR(
      "trace: data-dependent read {}() at {} cannot be traced; the traced graph would bake in "
      "this run's value. Keep the computation in tensor ops (where, masked_fill, clamp, ...) or "
      "move the read outside the traced function",
      accessor, site.empty() ? std::string("an unknown call site") : site);
}

TracingState* current_tracing_state() {
  return t_state;
}

TracingStateGuard::TracingStateGuard(TracingState* state) : saved_(t_state) {
  t_state = state;
}
TracingStateGuard::~TracingStateGuard() {
  t_state = saved_;
}

bool tracing_decomposes_fused_backwards() {
  return is_tracing() && current_tracing_state()->decomposes_fused_backwards();
}

bool is_tracing() {
  if (t_state == nullptr) return false;
  const LocalDispatchKeySet& keys = local_dispatch_keys();
  return keys.included.has(DispatchKey::Tracer) && !keys.excluded.has(DispatchKey::Tracer);
}

void TracingState::on_size_read(const Tensor&, int64_t) {}

std::optional<SymShape> TracingState::symbolic_sizes(const Tensor&) {
  return std::nullopt;
}

void TracingState::on_sym_sizes_read(std::span<const SymInt>, std::string_view) {}
int64_t TracingState::symbolic_size_value(const SymInt& s) {
  return s.expect_int("a symbolic size outside a trace with symbolic sizes");
}
bool TracingState::decide_fact(const SymFact& fact) {
  return SymFact::compare(
      fact.relation, fact.lhs.expect_int("a size compared outside a trace with symbolic sizes"),
      fact.rhs.expect_int("a size compared outside a trace with symbolic sizes"));
}

bool guard_size_fact(const SymFact& fact) {
  std::optional<int64_t> a = fact.lhs.maybe_int(), b = fact.rhs.maybe_int();
  if (a && b) return SymFact::compare(fact.relation, *a, *b);
  // Decided for every value of the symbols (each at least 2): no guard needed.
  if (std::optional<int64_t> least = rules::least_value(fact.lhs - fact.rhs); least && *least > 0)
    return SymFact::compare<int64_t>(fact.relation, 1, 0);
  if (std::optional<int64_t> least = rules::least_value(fact.rhs - fact.lhs); least && *least > 0)
    return SymFact::compare<int64_t>(fact.relation, 0, 1);
  if (fact.lhs == fact.rhs) return SymFact::compare<int64_t>(fact.relation, 0, 0);
  KILN_CHECK(t_state != nullptr, "the sizes {} were compared outside the trace that made them",
             fact.str());
  return t_state->decide_fact(fact);
}

namespace detail {
std::atomic<int> g_symbolic_traces{0};

void report_size_read(const Tensor& t, int64_t dim) {
  if (t.defined() && is_tracing()) t_state->on_size_read(t, dim);
}
void report_sym_sizes_read(std::span<const SymInt> sizes) {
  if (t_state != nullptr)
    t_state->on_sym_sizes_read(sizes,
                               "sizes autograd saved, read as integers in a backward formula");
}
int64_t read_sym_int(const SymInt& s, std::string_view what) {
  if (std::optional<int64_t> v = s.maybe_int()) return *v;
  KILN_CHECK(t_state != nullptr,
             "the symbolic size {} was read as an integer outside the trace that made it", s);
  t_state->on_sym_sizes_read(std::span(&s, 1), what);
  return t_state->symbolic_size_value(s);
}
SymShape resolve_traced_symbols(const SymShape& sizes) {
  return t_state == nullptr ? sizes : t_state->resolve_symbols(sizes);
}
SymShape traced_symbolic_sizes(const Tensor& t) {
  if (t_state == nullptr || !t.defined()) return {};
  std::optional<SymShape> sizes = t_state->symbolic_sizes(t);
  if (!sizes || is_static(*sizes)) return {};
  return std::move(*sizes);
}
}  // namespace detail

SymbolicTraceScope::SymbolicTraceScope() {
  detail::g_symbolic_traces.fetch_add(1, std::memory_order_relaxed);
}

SymbolicTraceScope::~SymbolicTraceScope() {
  detail::g_symbolic_traces.fetch_sub(1, std::memory_order_relaxed);
}

void check_traced_data_read(const char* accessor) {
  if (is_tracing()) t_state->on_data_read(accessor);
}

std::string short_call_site() {
  const CallSite& site = current_call_site();
  if (!site.known()) return "";
  std::string_view file = site.file;
  size_t slash = file.find_last_of("/\\");
  if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
  if (site.function == nullptr || *site.function == '\0')
    return fmt::format("{}:{}", file, site.line);
  return fmt::format("{}:{} in {}", file, site.line, short_function_name(site.function));
}

void TracingState::on_host_tensor(const Tensor&) {}

namespace {

std::vector<Tensor> tracer_kernel(const OpDef& op, std::span<const Tensor> inputs,
                                  const void* attrs) {
  if (TracingState* state = current_tracing_state()) return state->record_op(op, inputs, attrs);
  // The key is included but nothing records (a state's scope ended first): run the op.
  ExcludeDispatchKeysGuard below(DispatchKey::Tracer);
  return call_op(op, inputs, attrs);
}

}  // namespace

void register_tracer_kernels(OpTable& table) {
  for (OpDef* op : table.ops())
    op->boxed[static_cast<int>(DispatchKey::Tracer)] = tracer_kernel;
}

}  // namespace kiln
