// The public error contract: bad input throws kiln::Error (a std::runtime_error) whose message
// names the op and the offending shapes, dtypes, devices or dims, and a failed call leaves
// every tensor it touched unchanged.
#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

#include "kiln/kiln.h"
#include "kiln/runtime/dispatch_key.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::throws_error_containing;

TEST(Errors, KilnErrorIsARuntimeError) {
  static_assert(std::is_base_of_v<std::runtime_error, kiln::Error>);
  bool caught = false;
  try {
    kiln::add(kiln::zeros({2}), kiln::zeros({3}));
  } catch (const std::runtime_error& e) {
    caught = true;
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos);
  }
  EXPECT_TRUE(caught);
}

TEST(ErrorMessages, BroadcastMismatch) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::zeros({2, 3}) + kiln::zeros({4});
      },
      {"add", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::zeros({5, 2}) * kiln::ones({5});
      },
      {"mul", "[5, 2]", "[5]"}));
}

TEST(ErrorMessages, MatrixProductShapes) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::mm(kiln::zeros({2, 3}), kiln::zeros({4, 5}));
      },
      {"mm", "[2, 3]", "[4, 5]"}));
  // matmul is what the user called, with a [4] vector: the message should say so rather than
  // describe the internal mm of [2, 3] and [4, 1].
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::matmul(kiln::zeros({2, 3}), kiln::zeros({4}));
      },
      {"matmul", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::matmul(kiln::zeros({3, 2, 3}), kiln::zeros({4, 5}));
      },
      {"matmul", "[3, 2, 3]", "[4, 5]"}));
}

TEST(ErrorMessages, DimOutOfRange) {
  Tensor x = kiln::zeros({2, 3});
  EXPECT_TRUE(throws_error_containing([&] { kiln::sum(x, {5}); }, {"sum", "5"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mean(x, {-3}); }, {"mean", "-3"}));
  EXPECT_TRUE(throws_error_containing([&] { x.transpose(0, 2); }, {"transpose", "2"}));
  EXPECT_TRUE(throws_error_containing([&] { x.unsqueeze(3); }, {"unsqueeze", "3"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::cat({x, x}, 2); }, {"cat", "2"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::stack({x, x}, 4); }, {"stack", "4"}));
  EXPECT_TRUE(throws_error_containing([&] { x.chunk(2, 2); }, {"chunk", "2"}));
  EXPECT_TRUE(throws_error_containing([&] { x.split(1, -3); }, {"split", "-3"}));
  EXPECT_TRUE(throws_error_containing([&] { x.select(2, 0); }, {"select", "2"}));
  EXPECT_TRUE(throws_error_containing([&] { x.slice(-3, 0, 1); }, {"slice", "-3"}));
}

TEST(ErrorMessages, ImpossibleView) {
  Tensor x = kiln::zeros({2, 3}).t();
  EXPECT_TRUE(throws_error_containing([&] { x.view({-1}); }, {"view", "[3, 2]", "stride"}));
  EXPECT_TRUE(throws_error_containing([&] { x.view({7}); }, {"view", "[7]", "6"}));
}

TEST(ErrorMessages, ImpossibleReshape) {
  Tensor x = kiln::zeros({4, 6});
  EXPECT_TRUE(throws_error_containing([&] { x.reshape({5, 5}); }, {"reshape", "[5, 5]", "24"}));
  EXPECT_TRUE(throws_error_containing([&] { x.t().reshape({-1, -1}); }, {"reshape", "[-1, -1]"}));
}

TEST(ErrorMessages, InvalidExpand) {
  Tensor x = kiln::zeros({3, 1});
  EXPECT_TRUE(throws_error_containing([&] { x.expand({2, 2}); }, {"expand", "[2, 2]", "[3, 1]"}));
  EXPECT_TRUE(throws_error_containing([&] { x.expand({5}); }, {"expand", "[5]", "[3, 1]"}));
}

TEST(ErrorMessages, FromVectorCount) {
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::from_vector<double>({1, 2, 3}, {2, 2});
      },
      {"from_vector", "3", "4", "[2, 2]"}));
}

TEST(ErrorMessages, HostAccessDtype) {
  Tensor x = kiln::zeros({2}, kiln::kInt64);
  EXPECT_TRUE(
      throws_error_containing([&] { x.data_ptr<float>(); }, {"data_ptr", "float32", "int64"}));
  EXPECT_TRUE(throws_error_containing([&] { x.item<int64_t>(); }, {"item", "2"}));
}

TEST(ErrorMessages, CatAndStackShapes) {
  Tensor a = kiln::zeros({2, 3}), b = kiln::zeros({2, 4});
  EXPECT_TRUE(throws_error_containing([&] { kiln::cat({a, b}, 0); }, {"cat", "[2, 3]", "[2, 4]"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::cat({a, kiln::zeros({6})});
      },
      {"cat", "[2, 3]", "[6]"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::cat({}); }, {"cat"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::cat({kiln::full({}, 1.0)}); }, {"cat"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::stack({a, b}); }, {"stack", "[2, 3]", "[2, 4]"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::stack({}); }, {"stack"}));
}

TEST(ErrorMessages, UndefinedTensor) {
  Tensor u;
  EXPECT_TRUE(throws_error_containing([&] { u.sizes(); }, {"undefined"}));
  EXPECT_TRUE(throws_error_containing([&] { u.dim(); }, {"undefined"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::relu(u); }, {"relu", "undefined"}));
  EXPECT_TRUE(
      throws_error_containing([&] { kiln::add(kiln::zeros({1}), u); }, {"add", "undefined"}));
  EXPECT_TRUE(throws_error_containing([&] { u.to_vector<float>(); }, {"undefined"}));
}

TEST(ErrorMessages, DtypeProblemsNameTheDtype) {
  Tensor b = kiln::zeros({2}, kiln::kBool);
  EXPECT_TRUE(throws_error_containing([&] { kiln::relu(b); }, {"relu", "bool"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mean(kiln::zeros({2}, kiln::kInt32)); },
                                      {"mean", "int32"}));
  EXPECT_TRUE(throws_error_containing(
      [] {
        kiln::bmm(kiln::zeros({1, 2, 2}), kiln::zeros({1, 2, 2}, kiln::kFloat64));
      },
      {"bmm", "float32", "float64"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::randn({2}, kiln::kInt32); }, {"randn", "int32"}));
}

TEST(ErrorMessages, DeviceMismatch) {
  EXPECT_TRUE(throws_error_containing(
      [] { kiln::sub(kiln::zeros({2}), kiln::zeros({2}, kiln::kMeta)); }, {"sub", "cpu", "meta"}));
}

TEST(ErrorMessages, BadSizesAndCounts) {
  EXPECT_TRUE(throws_error_containing([] { kiln::empty({-1}); }, {"empty", "[-1]"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::arange(0, 3, 0); }, {"arange", "step"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::zeros({4}).chunk(0); }, {"chunk", "0"}));
  EXPECT_TRUE(throws_error_containing([] { kiln::zeros({4}).split(0); }, {"split", "0"}));
  EXPECT_TRUE(
      throws_error_containing([] { kiln::zeros({4}).narrow(0, 2, 3); }, {"narrow", "2", "3", "4"}));
}

// ---- no corruption after an error ----

TEST(ErrorRecovery, FailedBinaryOpLeavesOperandsUnchanged) {
  Tensor a = kiln::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = kiln::from_vector<float>({1, 2, 3, 4}, {4});
  EXPECT_THROW(kiln::add(a, b), kiln::Error);
  EXPECT_THROW(kiln::mm(a, b.view({4, 1})), kiln::Error);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(a.sizes(), (kiln::Shape{2, 3}));
  EXPECT_EQ(a.version(), 0u);
  // Further ops still work.
  EXPECT_EQ((a + a).to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(kiln::mm(a, kiln::ones({3, 1})).to_vector<float>(), (std::vector<float>{6, 15}));
}

TEST(ErrorRecovery, FailedInPlaceCopyDoesNotWriteOrBumpVersion) {
  Tensor dst = kiln::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  uint32_t v0 = dst.version();
  EXPECT_TRUE(throws_error_containing([&] { dst.copy_(kiln::zeros({4})); }, {"copy_"}));
  EXPECT_TRUE(throws_error_containing([&] { dst.copy_(kiln::zeros({3, 3})); }, {"copy_"}));
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dst.version(), v0);
  dst.copy_(kiln::full({3}, 9.0));
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(6, 9.0f));
  EXPECT_EQ(dst.version(), v0 + 1);
}

TEST(ErrorRecovery, FailedViewsLeaveTheBaseUsable) {
  Tensor x = kiln::arange(6).view({2, 3});
  EXPECT_THROW(x.t().view({6}), kiln::Error);
  EXPECT_THROW(x.expand({4, 4}), kiln::Error);
  EXPECT_THROW(x.select(0, 5), kiln::Error);
  EXPECT_EQ(x.sizes(), (kiln::Shape{2, 3}));
  EXPECT_EQ(x.strides(), (kiln::Shape{3, 1}));
  EXPECT_EQ(x.t().reshape({6}).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(ErrorRecovery, DispatchStateIsRestoredAfterAnError) {
  EXPECT_THROW(kiln::add(kiln::zeros({2}, kiln::requires_grad()), kiln::zeros({3})), kiln::Error);
  EXPECT_THROW(kiln::mean(kiln::zeros({2}, kiln::kInt32)), kiln::Error);
  EXPECT_TRUE(kiln::local_dispatch_keys().included.empty());
  EXPECT_TRUE(kiln::local_dispatch_keys().excluded.empty());
  EXPECT_FALSE(kiln::in_parallel_region());
}

TEST(ErrorRecovery, ErrorInsideAParallelKernelIsRecoverable) {
  // A kiln::Error raised inside a chunk running on a pool worker.
  kiln_test::NumThreadsGuard threads(4);
  EXPECT_THROW(kiln::parallel_for(0, 100000, 1,
                                  [](int64_t b, int64_t) {
                                    if (b > 0) KILN_ERROR("chunk at {} failed", b);
                                  }),
               kiln::Error);
  auto v = (kiln::ones({100000}) * 2.0).to_vector<float>();
  EXPECT_EQ(v, std::vector<float>(100000, 2.0f));
}

}  // namespace
