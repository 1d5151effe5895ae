// In-place ops refuse to write into a tensor whose elements share memory (an expanded view):
// the result would depend on the order the kernel happens to visit elements.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

TEST(InPlaceAliasing, WritingIntoAnExpandedTensorThrows) {
  kiln::Tensor base = kiln::zeros({3});
  kiln::Tensor expanded = base.expand({2, 3});
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { expanded.fill_(1); },
                                                 {"fill_", "[2, 3]", "[0, 1]", "memory location"}));
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [&] {
        expanded.copy_(kiln::ones({2, 3}));
      },
      {"copy_", "memory location"}));
  // Nothing was written and the version did not move.
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>({0, 0, 0}));
  EXPECT_EQ(base.version(), 0u);
}

TEST(InPlaceAliasing, ExpandedSizeOneDimsAreFine) {
  // Stride 0 on a size-1 dim aliases nothing.
  kiln::Tensor t = kiln::zeros({3}).expand({1, 3});
  ASSERT_EQ(t.stride(0), 0);
  t.fill_(2);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>({2, 2, 2}));
}

}  // namespace
