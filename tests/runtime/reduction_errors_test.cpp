// Error messages of the reductions: each names the op and the offending dims, shapes or dtypes.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

TEST(ReductionErrors, DimOutOfRangeNamesOpAndRange) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::sum(x, {2}); }, {"sum", "[-2, 1]", "got 2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::amax(x, {-3}); }, {"amax", "got -3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::var(x, {5}); }, {"var", "got 5"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::logsumexp(x, {2}); }, {"logsumexp", "got 2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::prod(x, {9}); }, {"prod", "got 9"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::max(x, 2); }, {"max", "got 2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::min(x, -3); }, {"min", "got -3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::argmax(x, 4); }, {"argmax", "got 4"}));
}

TEST(ReductionErrors, DuplicateDimsNamed) {
  Tensor x = kiln::zeros({2, 3, 4});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::mean(x, {1, -2});
      },
      {"mean", "dim 1 appears multiple times", "[1, -2]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::amin(x, {0, 0}); }, {"amin", "dim 0"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::var(x, {2, -1}); }, {"var", "dim 2"}));
}

TEST(ReductionErrors, EmptyReductionWithoutIdentityThrows) {
  Tensor x = kiln::zeros({2, 0});
  EXPECT_TRUE(throws_error_containing([&] { kiln::amax(x, {1}); },
                                      {"amax", "reduction dim 1", "non-zero size", "[2, 0]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::amin(x); }, {"amin", "non-zero size"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::max(x, 1); }, {"max", "reduction dim 1"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::max(x); }, {"max", "numel() == 0", "[2, 0]"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::argmax(x); }, {"argmax", "numel() == 0"}));
  // Where torch defines the result, no error: prod of nothing is 1, sum 0.
  EXPECT_EQ(kiln::prod(x, {1}).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(kiln::sum(x, {1}).to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(ReductionErrors, DTypesNamed) {
  Tensor i = kiln::zeros({3}, kiln::TensorOptions().dtype(kiln::kInt64));
  EXPECT_TRUE(throws_error_containing([&] { kiln::var(i); }, {"var", "floating point", "int64"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mean(i); }, {"mean", "int64"}));
  Tensor b = kiln::zeros({3}, kiln::TensorOptions().dtype(kiln::kBool));
  EXPECT_TRUE(throws_error_containing([&] { kiln::argmax(b); }, {"argmax", "bool"}));
}

}  // namespace
