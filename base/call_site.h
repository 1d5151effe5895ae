// The user's call site of the op being dispatched. Public op functions take a defaulted
// std::source_location and open a CallSiteScope; the outermost scope wins, so a composite op
// (matmul, cross_entropy) reports the user's line, not the line inside Kiln. Anomaly mode
// records it on each autograd Node, and the tracer on each IR node. Operators (a + b, a * 2.0,
// a += b) cannot take a defaulted parameter, so they pass kUnknownCallSite: an op reached only
// through an operator reports an unknown call site (an empty string), while an operator used
// inside an op that opened a scope reports that op's caller.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>

namespace kiln {

struct CallSite {
  const char* file = nullptr;
  const char* function = nullptr;
  uint32_t line = 0;

  bool known() const { return file != nullptr; }
  std::string str() const;  // "path/file.cpp:12 in fn", or "" when unknown
};

const CallSite& current_call_site();

// A location that records nothing (a default std::source_location has line 0, which no real
// call site has): a CallSiteScope opened with it leaves the thread-local as it is.
inline constexpr std::source_location kUnknownCallSite{};

class CallSiteScope {
 public:
  explicit CallSiteScope(const std::source_location& loc);
  // Another thread's call site (a backward handed to a device thread).
  explicit CallSiteScope(const CallSite& site);
  ~CallSiteScope();
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

 private:
  bool owner_ = false;
};

}  // namespace kiln
