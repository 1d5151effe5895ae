#include <gtest/gtest.h>

#include "kiln/kiln.h"

TEST(Smoke, AddWorks) {
  auto a = kiln::ones({3});
  auto b = kiln::full({3}, 2.0);
  EXPECT_EQ((a + b).to_vector<float>(), std::vector<float>({3, 3, 3}));
}
