// The warning channel (libtorch's TORCH_WARN and c10::WarningHandler): a problem that does not
// stop the program goes to the current handler instead of straight to stderr, so that a
// binding can turn it into its language's warnings (the Python package raises a UserWarning
// through Python's `warnings`, which users can filter or make errors) and tests can collect it.
//
// Note [Warning handlers]
// The handler for a call is the calling thread's WarningHandlerGuard when one is active, else
// the process handler (set_warning_handler), else the default one, which writes
// "kiln: warning: MESSAGE" to stderr. A handler may throw (Python's warnings-as-errors does);
// the exception leaves the call that warned, as an error would.
#pragma once

#include <fmt/format.h>

#include <mutex>
#include <string>

namespace kiln {

class WarningHandler {
 public:
  virtual ~WarningHandler() = default;
  virtual void process(const std::string& message);  // the default: one line on stderr
};

// The handler a warning on this thread goes to now.
WarningHandler* warning_handler();
// The process-wide handler; nullptr restores the default. The handler must outlive its use.
void set_warning_handler(WarningHandler* handler);

// Sends this thread's warnings to `handler` while the guard lives (tests, bindings).
class WarningHandlerGuard {
 public:
  explicit WarningHandlerGuard(WarningHandler* handler);
  ~WarningHandlerGuard();
  WarningHandlerGuard(const WarningHandlerGuard&) = delete;
  WarningHandlerGuard& operator=(const WarningHandlerGuard&) = delete;

 private:
  WarningHandler* previous_;
};

void warn(const std::string& message);

}  // namespace kiln

// KILN_WARN("fmt", args...): formats the message and sends it to the current handler.
#define KILN_WARN(...) ::kiln::warn(::fmt::format(__VA_ARGS__))

// KILN_WARN_ONCE: the first call from this source line in the process warns; later ones do not
// (unless the handler threw, in which case the next call tries again, as std::call_once does).
#define KILN_WARN_ONCE(...)                                                \
  do {                                                                     \
    static std::once_flag kiln_warn_once_flag_;                            \
    std::call_once(kiln_warn_once_flag_, [&] { KILN_WARN(__VA_ARGS__); }); \
  } while (0)
