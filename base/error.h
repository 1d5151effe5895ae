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
