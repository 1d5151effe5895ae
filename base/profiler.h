// Note [Profiler]
// Timed scopes, as PyTorch's record_function and torch.profiler: the dispatcher opens one per
// op call and one per backend kernel, the autograd engine one per Node it runs, the plan
// executor one per compiled-kernel launch, and compile() one per phase. Scopes nest on each
// thread, so a Chrome trace (chrome://tracing, Perfetto) shows an op inside the Node that called
// it and a kernel inside its op. When no profiler is running a scope costs one relaxed atomic
// load; when one is, it costs a clock read at each end and a locked append.
//
// KILN_PROFILE=trace.json profiles the whole process and writes the trace at exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::profiler {

enum class ScopeKind : uint8_t {
  Op,            // a dispatcher call (the op with every wrapper key: autograd, tracer)
  Kernel,        // device work: an eager backend kernel or a compiled kernel launch
  AutogradNode,  // a backward Node run by the engine
  Compile,       // a compile phase (capture, passes, partition, code generation)
  User,          // record_function in user code
};
std::string_view scope_kind_name(ScopeKind kind);

struct Event {
  std::string name;
  ScopeKind kind = ScopeKind::User;
  int64_t start_ns = 0;     // since the profiler started
  int64_t duration_ns = 0;  // inclusive of nested scopes
  int64_t thread = 0;       // 0, 1, 2, ... in the order threads first recorded a scope
  std::string detail;       // e.g. the backend that ran a kernel
};

namespace detail {
extern std::atomic<bool> g_enabled;
}

inline bool is_enabled() {
  return detail::g_enabled.load(std::memory_order_acquire);
}

// Starts collecting. Throws kiln::Error when a profiler is already running (KILN_PROFILE's
// included).
void start();
// Stops collecting and returns the events of completed scopes, ordered by start time. Throws
// kiln::Error when none is running. A scope still open when it stops is not recorded.
std::vector<Event> stop();

// The events of the scopes completed so far, in completion order (inner before outer), while
// the profiler keeps running. Throws kiln::Error when none is running.
std::vector<Event> snapshot();

// One timed scope; records nothing unless a profiler is running when it opens.
class RecordScope {
 public:
  RecordScope(ScopeKind kind, std::string_view name, std::string_view detail = {}) {
    if (is_enabled()) begin(kind, name, detail);
  }
  ~RecordScope() {
    if (active_) end();
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  void begin(ScopeKind kind, std::string_view name, std::string_view detail);
  void end();
  bool active_ = false;
  uint64_t session_ = 0;
  Event event_;
};

// A user scope around a region of the program (torch.profiler.record_function).
class RecordFunction : public RecordScope {
 public:
  explicit RecordFunction(std::string_view name) : RecordScope(ScopeKind::User, name) {}
};

// The events as Chrome trace JSON: one complete ("X") event per scope, times in microseconds
// with nanosecond decimals, one named track per thread.
std::string chrome_trace_json(const std::vector<Event>& events);
// Writes chrome_trace_json to `path`; throws kiln::Error naming the path when it cannot.
void write_chrome_trace(const std::vector<Event>& events, const std::string& path);

int64_t count(const std::vector<Event>& events, ScopeKind kind);

}  // namespace kiln::profiler
