// Call sites: each public op records the user's std::source_location for the duration of the
// call, and anomaly mode stores it on the autograd Node the op creates. Composite ops and
// Tensor methods report the user's line, not a line inside Kiln; operators report none.
#include <gtest/gtest.h>

#include <string>

#include "kiln/base/call_site.h"
#include "kiln/kiln.h"
#include "kiln/runtime/autograd/anomaly_mode.h"

namespace {

using kiln::Tensor;

// "call_site_test.cpp:<line>", as CallSite::str() writes it (followed by " in <function>").
std::string here(int line) {
  return "call_site_test.cpp:" + std::to_string(line) + " ";
}

// A line in Kiln's own op definitions (frontend/*_ops.cpp, tensor_methods.cpp), which a
// composite op or a method must not report.
bool inside_kiln(const std::string& site) {
  return site.find("_ops.cpp") != std::string::npos ||
         site.find("tensor_methods.cpp") != std::string::npos;
}

std::string call_site_of(const Tensor& t) {
  EXPECT_TRUE(t.grad_fn() != nullptr);
  if (t.grad_fn() == nullptr) return "<no grad_fn>";
  const kiln::autograd::AnomalyMetadata* meta = t.grad_fn()->metadata_if_present();
  EXPECT_TRUE(meta != nullptr);
  return meta == nullptr ? "<no metadata>" : meta->call_site;
}

Tensor leaf(kiln::Shape shape) {
  return kiln::rand(std::move(shape), kiln::requires_grad());
}

TEST(CallSite, FreeFunctionRecordsTheCallersLine) {
  kiln::AnomalyModeGuard anomaly;
  Tensor x = leaf({3});
  // clang-format off
  int line = __LINE__; Tensor y = kiln::exp(x);
  // clang-format on
  std::string site = call_site_of(y);
  EXPECT_NE(site.find(here(line)), std::string::npos) << site;
  EXPECT_NE(site.find("FreeFunctionRecordsTheCallersLine"), std::string::npos) << site;
}

TEST(CallSite, CompositeOpReportsTheUsersLineNotOneInsideKiln) {
  kiln::AnomalyModeGuard anomaly;
  // matmul of a 1-D and a 2-D operand is unsqueeze, mm and squeeze inside Kiln.
  Tensor a = leaf({3});
  Tensor b = leaf({3, 4});
  // clang-format off
  int line = __LINE__; Tensor y = kiln::matmul(a, b);
  // clang-format on
  std::string site = call_site_of(y);
  EXPECT_NE(site.find(here(line)), std::string::npos) << site;
  EXPECT_FALSE(inside_kiln(site)) << site;
  // Every Node the composite created, not only the last one, carries the user's line.
  int nodes = 0;
  for (auto node = y.grad_fn(); node != nullptr && node->metadata_if_present() != nullptr;) {
    EXPECT_NE(node->metadata_if_present()->call_site.find(here(line)), std::string::npos)
        << node->name() << ": " << node->metadata_if_present()->call_site;
    ++nodes;
    std::shared_ptr<kiln::autograd::Node> next;
    for (const kiln::autograd::Edge& e : node->next_edges()) {
      if (e.is_valid() && e.function->metadata_if_present() != nullptr &&
          e.function->num_outputs() > 0) {
        next = e.function;
      }
    }
    node = next;
  }
  EXPECT_GE(nodes, 2);
}

TEST(CallSite, CrossEntropyReportsTheUsersLine) {
  kiln::AnomalyModeGuard anomaly;
  Tensor logits = leaf({2, 5});
  Tensor target = kiln::from_vector<int64_t>({1, 4});
  // clang-format off
  int line = __LINE__; Tensor loss = kiln::cross_entropy(logits, target);
  // clang-format on
  std::string site = call_site_of(loss);
  EXPECT_NE(site.find(here(line)), std::string::npos) << site;
  EXPECT_FALSE(inside_kiln(site)) << site;
  // The log_softmax Node under nll_loss was created inside cross_entropy: same call site.
  ASSERT_FALSE(loss.grad_fn()->next_edges().empty());
  const auto& inner = loss.grad_fn()->next_edges()[0].function;
  ASSERT_TRUE(inner != nullptr);
  ASSERT_TRUE(inner->metadata_if_present() != nullptr);
  EXPECT_NE(inner->metadata_if_present()->call_site.find(here(line)), std::string::npos)
      << inner->metadata_if_present()->call_site;
}

TEST(CallSite, MethodRecordsTheCallersLine) {
  kiln::AnomalyModeGuard anomaly;
  Tensor x = leaf({2, 3});
  // clang-format off
  int line = __LINE__; Tensor s = x.sum();
  int view_line = __LINE__; Tensor r = x.reshape({3, 2});
  // clang-format on
  std::string site = call_site_of(s);
  EXPECT_NE(site.find(here(line)), std::string::npos) << site;
  EXPECT_FALSE(inside_kiln(site)) << site;
  std::string view_site = call_site_of(r);
  EXPECT_NE(view_site.find(here(view_line)), std::string::npos) << view_site;
}

TEST(CallSite, OperatorsReportNoCallSite) {
  kiln::AnomalyModeGuard anomaly;
  Tensor x = leaf({3});
  Tensor y = x * 2.0;
  EXPECT_EQ(call_site_of(y), "");
  Tensor z = 1.0 - x;  // neg and add inside the operator: neither names a line in Kiln
  EXPECT_EQ(call_site_of(z), "");
}

TEST(CallSite, ScopeEndsWithTheCall) {
  EXPECT_FALSE(kiln::current_call_site().known());
  kiln::AnomalyModeGuard anomaly;
  Tensor x = leaf({4});
  Tensor y = kiln::matmul(x, x);
  EXPECT_FALSE(kiln::current_call_site().known());
  Tensor s = y.exp().sum();
  EXPECT_FALSE(kiln::current_call_site().known());
  EXPECT_EQ(kiln::current_call_site().str(), "");
  // A throwing op unwinds its scope too.
  EXPECT_THROW(kiln::mm(x, x), kiln::Error);
  EXPECT_FALSE(kiln::current_call_site().known());
}

TEST(CallSite, OutermostScopeWins) {
  std::source_location outer = std::source_location::current();
  kiln::CallSiteScope scope(outer);
  EXPECT_TRUE(kiln::current_call_site().known());
  EXPECT_EQ(kiln::current_call_site().line, outer.line());
  {
    kiln::CallSiteScope inner(std::source_location::current());
    EXPECT_EQ(kiln::current_call_site().line, outer.line());
  }
  {
    kiln::CallSiteScope unknown(kiln::kUnknownCallSite);
    EXPECT_EQ(kiln::current_call_site().line, outer.line());
  }
  EXPECT_EQ(kiln::current_call_site().line, outer.line());
}

TEST(CallSite, UnknownLocationRecordsNothing) {
  {
    kiln::CallSiteScope unknown(kiln::kUnknownCallSite);
    EXPECT_FALSE(kiln::current_call_site().known());
  }
  EXPECT_FALSE(kiln::current_call_site().known());
}

}  // namespace
