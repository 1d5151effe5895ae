// kiln::Error and the KILN_CHECK macro: every user-facing failure is an exception whose message
// names the op and the shapes, dtypes or devices involved (DESIGN.md principle 9).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An exception raised by user code in another language (a Python hook or autograd.Function),
// carried through the library unchanged so that the caller in that language gets its own
// exception back, with its type and traceback. The autograd engine, which adds the failing
// Node's name to other errors, passes these through as they are.
class ForeignError : public std::exception {
 public:
  const char* what() const noexcept override { return "an exception raised by user code"; }
};

namespace detail {
[[noreturn]] void throw_error(std::string message);
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, "fmt string", args...): throws kiln::Error with the formatted message when
// cond is false. The arguments are only formatted on failure, so checks are free on hot paths.
#define KILN_CHECK(cond, ...)                                  \
  do {                                                         \
    if (!(cond)) [[unlikely]] {                                \
      ::kiln::detail::throw_error(::fmt::format(__VA_ARGS__)); \
    }                                                          \
  } while (0)

#define KILN_ERROR(...) ::kiln::detail::throw_error(::fmt::format(__VA_ARGS__))
