// KILN_LOGS=recompiles,fallbacks: one line per recompile (which input changed and how) and per
// graph break or eager signature (why, and where). set_log_topics enables the same topics as
// the environment variable does.
#include <gtest/gtest.h>

#include "kiln/base/options.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

struct OpaqueSquare : autograd::Function<OpaqueSquare> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0] * 2.0};
  }
};

class CompileLogs : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = set_log_topics({"recompiles", "fallbacks"}); }
  void TearDown() override { set_log_topics(saved_); }
  std::vector<std::string> saved_;
};

TEST_F(CompileLogs, RecompileNamesTheChangedInput) {
  CompiledFunction f =
      compile([](const std::vector<Tensor>& in) { return in[0] * 2.0; }, {.name = "doubler"});
  testing::internal::CaptureStderr();
  f({ones({4, 3})});
  f({ones({4, 3})});
  f({ones({8, 3})});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[kiln:recompiles] doubler: recompiling (signature 2 of at most 8): "
                     "input 0: sizes [4, 3] -> [8, 3]"),
            std::string::npos)
      << err;
  // The first compile and the cache hit say nothing.
  EXPECT_EQ(err.find("signature 1"), std::string::npos) << err;
}

TEST_F(CompileLogs, FallbacksSayWhyAndWhere) {
  CompiledFunction breaks =
      compile([](const std::vector<Tensor>& in) { return OpaqueSquare::apply(in[0].exp()).sum(); },
              {.name = "with_break"});
  CompiledFunction reads =
      compile([](const std::vector<Tensor>& in) { return in[0] * in[0].sum().item<float>(); },
              {.name = "with_item"});
  testing::internal::CaptureStderr();
  breaks({randn({3}).requires_grad_()})[0].backward();
  reads({randn({3})});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[kiln:fallbacks] with_break: graph break: 'OpaqueSquare'"), std::string::npos)
      << err;
  EXPECT_NE(err.find("[kiln:fallbacks] with_item: signature (f32[3]) grad_mode=on runs eagerly"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("item()"), std::string::npos) << err;
  EXPECT_NE(err.find("logs_test.cpp"), std::string::npos) << err;  // the user's line
}

TEST_F(CompileLogs, DisabledTopicsPrintNothing) {
  set_log_topics({});
  CompiledFunction f = compile([](const std::vector<Tensor>& in) { return in[0] + 1.0; });
  testing::internal::CaptureStderr();
  f({ones({2})});
  f({ones({3})});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_THROW(set_log_topics({"no-such-topic"}), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(CompileWarnings, AnEagerSignatureWarnsOnceWithoutLogs) {
  std::vector<std::string> saved = set_log_topics({});
  CompiledFunction f =
      compile([](const std::vector<Tensor>& in) { return in[0] * in[0].sum().item<float>(); },
              {.name = "reads_data"});
  testing::internal::CaptureStderr();
  f({ones({3})});
  f({ones({3})});  // same signature: no second warning
  std::string err = testing::internal::GetCapturedStderr();
  set_log_topics(saved);
  EXPECT_NE(err.find("kiln: warning: reads_data: signature (f32[3]) grad_mode=on runs eagerly"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("logs_test.cpp"), std::string::npos) << err;  // the item() call's line
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln
