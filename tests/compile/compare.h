// Comparisons of compiled results against eager results, shared by the compile suite. Eager
// code is the reference here: its ops are checked against loop references in the opinfo suite.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln_test {

// Tolerances relative to the eager value (plus the same amount absolute, for values near 0).
inline constexpr double kPointwiseTol = 1e-5;
inline constexpr double kReductionTol = 1e-4;

inline ::testing::AssertionResult close(const kiln::Tensor& got, const kiln::Tensor& want,
                                        double rtol) {
  if (!got.defined() || !want.defined()) {
    if (got.defined() == want.defined()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "compiled " << (got.defined() ? "defined" : "undefined") << ", eager "
           << (want.defined() ? "defined" : "undefined");
  }
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    return ::testing::AssertionFailure()
           << "compiled " << kiln::dtype_name(got.dtype()) << kiln::shape_str(got.sizes())
           << ", eager " << kiln::dtype_name(want.dtype()) << kiln::shape_str(want.sizes());
  }
  std::vector<double> x = got.detach().to_vector<double>(), y = want.detach().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) > rtol * (1 + std::abs(y[i]))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": compiled " << x[i] << ", eager " << y[i];
    }
  }
  return ::testing::AssertionSuccess();
}

inline void expect_all_close(const std::vector<kiln::Tensor>& got,
                             const std::vector<kiln::Tensor>& want, double rtol,
                             const std::string& what = "tensor") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(close(got[i], want[i], rtol)) << what << " " << i;
}

// A leaf with standard normal values (from the global generator) that requires grad.
inline kiln::Tensor param(kiln::Shape sizes, double scale = 1.0) {
  kiln::Tensor t = kiln::randn(std::move(sizes)) * scale;
  return t.requires_grad_();
}

}  // namespace kiln_test
