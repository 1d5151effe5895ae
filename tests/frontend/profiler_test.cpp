// The profiler (Note [Profiler]): which scopes eager ops, autograd, compiled calls and
// compilation open, how they nest, and the Chrome trace they turn into, parsed by nlohmann::json
// rather than by anything of Kiln's.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
using kiln::profiler::Event;
using kiln::profiler::ScopeKind;

bool contains(const Event& outer, const Event& inner) {
  return outer.thread == inner.thread && outer.start_ns <= inner.start_ns &&
         inner.start_ns + inner.duration_ns <= outer.start_ns + outer.duration_ns &&
         &outer != &inner;
}

const Event* find(const std::vector<Event>& events, ScopeKind kind, const std::string& name) {
  for (const Event& e : events)
    if (e.kind == kind && e.name == name) return &e;
  return nullptr;
}

bool has_child(const std::vector<Event>& events, const Event& outer, ScopeKind kind,
               const std::string& name = "") {
  for (const Event& e : events)
    if (e.kind == kind && (name.empty() || e.name == name) && contains(outer, e)) return true;
  return false;
}

// Runs an eager forward+backward and a compiled one under the profiler.
std::vector<Event> profile_small_program() {
  kiln::manual_seed(1);
  Tensor w = kiln::randn({16, 16}).requires_grad_();
  Tensor x = kiln::randn({8, 16});
  kiln::CompiledFunction f = kiln::compile(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{kiln::tanh(kiln::matmul(in[0], w)).mul(2.0).sum()};
      },
      {.name = "profiled"});
  kiln::profiler::start();
  Tensor eager = (kiln::matmul(x, w) * kiln::matmul(x, w)).sum();
  eager.backward();
  f({x})[0].backward();
  f({x})[0].backward();
  return kiln::profiler::stop();
}

TEST(Profiler, ScopesNestOpsKernelsNodesAndCompilation) {
  std::vector<Event> events = profile_small_program();
  ASSERT_FALSE(events.empty());

  // Eager: each op holds its backend kernel.
  const Event* mm = find(events, ScopeKind::Op, "mm");  // matmul is a composite of mm
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(has_child(events, *mm, ScopeKind::Kernel));
  const Event* mul = find(events, ScopeKind::Op, "mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_TRUE(has_child(events, *mul, ScopeKind::Kernel, "mul"));

  // Autograd: the engine's Nodes, and the ops their derivative formulas call.
  const Event* mul_backward = find(events, ScopeKind::AutogradNode, "MulBackward");
  ASSERT_NE(mul_backward, nullptr);
  EXPECT_TRUE(has_child(events, *mul_backward, ScopeKind::Op));
  const Event* compiled_backward = find(events, ScopeKind::AutogradNode, "CompiledBackward");
  ASSERT_NE(compiled_backward, nullptr);
  EXPECT_TRUE(has_child(events, *compiled_backward, ScopeKind::Kernel));

  // Compilation happens once, with its phases inside it.
  EXPECT_EQ(kiln::profiler::count(events, ScopeKind::Compile) > 0, true);
  int64_t compiles = 0;
  for (const Event& e : events)
    compiles += e.kind == ScopeKind::Compile && e.name == "compile";
  EXPECT_EQ(compiles, 1);
  const Event* compile = find(events, ScopeKind::Compile, "compile");
  ASSERT_NE(compile, nullptr);
  for (const char* phase : {"trace forward", "trace backward", "passes joint", "partition"})
    EXPECT_TRUE(has_child(events, *compile, ScopeKind::Compile, phase)) << phase;

  // Fused kernels of the compiled calls, named by the backend that ran them.
  int64_t fused = 0;
  for (const Event& e : events) {
    if (e.kind != ScopeKind::Kernel || e.name.find("fused") == std::string::npos) continue;
    ++fused;
    EXPECT_EQ(e.detail, KILN_WITH_LLVM ? "llvm" : "interpreter") << e.name;
  }
  EXPECT_GE(fused, 2);  // at least the forward's and the backward's, in each of two calls
  if (KILN_WITH_LLVM) {
    EXPECT_TRUE(has_child(events, *compile, ScopeKind::Compile)) << "codegen scopes";
    bool codegen = false;
    for (const Event& e : events)
      codegen |= e.kind == ScopeKind::Compile && e.name.rfind("codegen ", 0) == 0;
    EXPECT_TRUE(codegen);
  }
}

TEST(Profiler, ChromeTraceIsValidJsonWithNestedScopes) {
  std::vector<Event> events = profile_small_program();
  nlohmann::json trace = nlohmann::json::parse(kiln::profiler::chrome_trace_json(events));
  ASSERT_TRUE(trace.contains("traceEvents"));
  const nlohmann::json& list = trace["traceEvents"];
  ASSERT_TRUE(list.is_array());

  // Per thread, complete events must nest: sorted by start (longer first on ties), each one
  // either lies inside the innermost open one or starts after it ends.
  std::map<int64_t, std::vector<std::pair<double, double>>> by_thread;
  size_t complete = 0;
  std::map<std::string, size_t> categories;
  for (const nlohmann::json& e : list) {
    ASSERT_TRUE(e.contains("ph")) << e.dump();
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X") << e.dump();
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid"})
      ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
    ASSERT_GE(e["dur"].get<double>(), 0.0);
    by_thread[e["tid"].get<int64_t>()].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    categories[e["cat"].get<std::string>()]++;
    ++complete;
  }
  EXPECT_EQ(complete, events.size());
  for (const char* cat : {"op", "kernel", "autograd", "compile"})
    EXPECT_GT(categories[cat], 0u) << cat;

  size_t nested = 0;
  const double slack = 1e-3;  // the trace prints microseconds with three decimals
  for (auto& [tid, spans] : by_thread) {
    std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    for (const auto& [ts, dur] : spans) {
      while (!open_ends.empty() && ts >= open_ends.back() - slack)
        open_ends.pop_back();
      if (!open_ends.empty()) {
        EXPECT_LE(ts + dur, open_ends.back() + slack) << "thread " << tid << " at " << ts;
        ++nested;
      }
      open_ends.push_back(ts + dur);
    }
  }
  EXPECT_GT(nested, 10u);
}

TEST(Profiler, RecordsOnlyWhileRunning) {
  Tensor a = kiln::ones({4});
  (void)(a + a);  // before start: not recorded
  kiln::profiler::start();
  {
    kiln::profiler::RecordFunction region("my region");
    (void)(a * a);
  }
  std::vector<Event> events = kiln::profiler::stop();
  (void)(a - a);  // after stop: not recorded
  EXPECT_EQ(find(events, ScopeKind::Op, "add"), nullptr);
  EXPECT_EQ(find(events, ScopeKind::Op, "sub"), nullptr);
  const Event* region = find(events, ScopeKind::User, "my region");
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(has_child(events, *region, ScopeKind::Op, "mul"));
}

TEST(Profiler, StartTwiceOrStopWithoutStartIsAnError) {
  EXPECT_THROW(kiln::profiler::stop(), kiln::Error);
  kiln::profiler::start();
  try {
    kiln::profiler::start();
    ADD_FAILURE() << "a second start did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  (void)kiln::profiler::stop();
}

TEST(Profiler, AnUnwritablePathNamesIt) {
  try {
    kiln::profiler::write_chrome_trace({}, "/nonexistent-dir/trace.json");
    ADD_FAILURE() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"), std::string::npos);
  }
}

// KILN_PROFILE profiles a whole process: the `kiln example` command, run as a child.
TEST(Profiler, KilnProfileWritesATraceAtExit) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kiln_profile_" + std::to_string(getpid()) + ".json");
  std::filesystem::remove(path);
  std::string cmd =
      "KILN_PROFILE='" + path.string() + "' '" KILN_CLI_PATH "' example > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  nlohmann::json trace = nlohmann::json::parse(f);
  std::map<std::string, size_t> categories;
  for (const nlohmann::json& e : trace["traceEvents"])
    if (e["ph"] == "X") categories[e["cat"].get<std::string>()]++;
  for (const char* cat : {"op", "kernel", "autograd", "compile"})
    EXPECT_GT(categories[cat], 0u) << cat;
  std::filesystem::remove(path);
}

}  // namespace

namespace {

// The KILN_PROFILE check runs while the library loads; a malformed variable beside it must still
// surface as the tool's error message (exit status 1), not end the process while it starts.
TEST(Profiler, AMalformedEnvironmentIsAnErrorNotAnAbortAtLoad) {
  std::string cmd =
      "KILN_PROFILE=/dev/null KILN_NUM_THREADS=abc '" KILN_CLI_PATH "' version > /dev/null 2>&1";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

}  // namespace
