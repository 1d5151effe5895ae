// The differential fuzz test's CI share: 200 seeded programs (program.h), each run eagerly in
// float64 and float32 and compiled on every CPU backend. scripts/fuzz_differential.sh runs any
// number of seeds for long runs.
#include <gtest/gtest.h>

#include "differential/program.h"

namespace kiln_test::differential {
namespace {

class Differential : public ::testing::TestWithParam<uint64_t> {};

TEST_P(Differential, CompiledAndFloat32AgreeWithFloat64Eager) {
  Program p = generate(GetParam());
  Verdict v = check(p);
  EXPECT_TRUE(v.agree) << v.detail << "\n" << p.str();
}

INSTANTIATE_TEST_SUITE_P(Seeds, Differential, ::testing::Range<uint64_t>(0, 200));

}  // namespace
}  // namespace kiln_test::differential
