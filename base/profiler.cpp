#include "kiln/base/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>

#include <fmt/format.h>

#include "kiln/base/error.h"
#include "kiln/base/options.h"

namespace kiln::profiler {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {

using Clock = std::chrono::steady_clock;

// Leaked on purpose: scopes on other threads and the KILN_PROFILE writer at exit may run after
// static destructors would have.
struct Collector {
  std::mutex mutex;
  std::atomic<uint64_t> session{
      0};  // bumped by each start, so that a scope opened before stops is dropped
  Clock::time_point origin;
  std::vector<Event> events;
};
Collector& collector() {
  static auto* c = new Collector();
  return *c;
}

int64_t thread_index() {
  static std::atomic<int64_t> next{0};
  thread_local int64_t index = next.fetch_add(1);
  return index;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - collector().origin)
      .count();
}

void write_env_trace() {
  if (!is_enabled()) return;
  const std::string& path = options().profile_path;
  try {
    std::vector<Event> events = stop();
    write_chrome_trace(events, path);
    std::cerr << "kiln: profile of " << events.size() << " scopes written to " << path << "\n";
  } catch (const Error& e) {
    std::cerr << "kiln: warning: KILN_PROFILE: " << e.what() << "\n";
  }
}

// KILN_PROFILE starts the profiler when the library is loaded and writes its trace at exit.
const bool kStartedFromEnvironment = [] {
  try {
    if (options().profile_path.empty()) return false;
  } catch (const Error&) {
    // A malformed variable must not end the program while it loads: the error is raised again
    // where the library first reads its options.
    return false;
  }
  start();
  std::atexit(write_env_trace);
  return true;
}();

std::string json_escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

std::string_view scope_kind_name(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::Op:
      return "op";
    case ScopeKind::Kernel:
      return "kernel";
    case ScopeKind::AutogradNode:
      return "autograd";
    case ScopeKind::Compile:
      return "compile";
    case ScopeKind::User:
      return "user";
  }
  return "user";
}

void start() {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mutex);
  KILN_CHECK(!is_enabled(), "profiler::start: a profiler is already running{}",
             kStartedFromEnvironment ? " (KILN_PROFILE is set)" : "");
  c.events.clear();
  c.session++;
  c.origin = Clock::now();
  detail::g_enabled.store(true, std::memory_order_release);
}

std::vector<Event> stop() {
  Collector& c = collector();
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    KILN_CHECK(is_enabled(), "profiler::stop: no profiler is running");
    detail::g_enabled.store(false, std::memory_order_relaxed);
    c.session++;
    events.swap(c.events);
  }
  // Inner scopes end (and are appended) before their outer ones; by start time, and the longer
  // first on a tie, a parent comes before its children.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.duration_ns > b.duration_ns;
  });
  return events;
}

std::vector<Event> snapshot() {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mutex);
  KILN_CHECK(is_enabled(), "profiler::snapshot: no profiler is running");
  return c.events;
}

void RecordScope::begin(ScopeKind kind, std::string_view name, std::string_view detail) {
  active_ = true;
  event_.kind = kind;
  event_.name = name;
  event_.detail = detail;
  event_.thread = thread_index();
  session_ = collector().session.load();
  event_.start_ns = now_ns();
}

void RecordScope::end() {
  int64_t end_ns = now_ns();
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!is_enabled() || c.session != session_) return;
  event_.duration_ns = end_ns - event_.start_ns;
  c.events.push_back(std::move(event_));
}

std::string chrome_trace_json(const std::vector<Event>& events) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  int64_t threads = 0;
  for (const Event& e : events)
    threads = std::max(threads, e.thread + 1);
  bool first = true;
  auto separator = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  separator();
  out += R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"kiln"}})";
  for (int64_t t = 0; t < threads; ++t) {
    separator();
    out += fmt::format(
        R"({{"name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":"kiln thread {}"}}}})",
        t, t);
  }
  for (const Event& e : events) {
    separator();
    out += fmt::format(
        R"({{"name":"{}","cat":"{}","ph":"X","pid":1,"tid":{},"ts":{}.{:03},"dur":{}.{:03})",
        json_escaped(e.name), scope_kind_name(e.kind), e.thread, e.start_ns / 1000,
        e.start_ns % 1000, e.duration_ns / 1000, e.duration_ns % 1000);
    if (!e.detail.empty())
      out += fmt::format(R"(,"args":{{"detail":"{}"}})", json_escaped(e.detail));
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

void write_chrome_trace(const std::vector<Event>& events, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(f.good(), "profiler: cannot open '{}' for writing the trace", path);
  f << chrome_trace_json(events);
  f.close();
  KILN_CHECK(f.good(), "profiler: writing the trace to '{}' failed", path);
}

int64_t count(const std::vector<Event>& events, ScopeKind kind) {
  return std::count_if(events.begin(), events.end(),
                       [&](const Event& e) { return e.kind == kind; });
}

}  // namespace kiln::profiler
