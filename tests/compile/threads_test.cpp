// One CompiledFunction called from several threads at once: each thread's results (outputs and
// gradients) must equal the eager results for its own inputs, computed beforehand on the main
// thread. The threads mix two signatures, so that captures and cache hits interleave.
#include <gtest/gtest.h>

#include <thread>

#include "compile/compare.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
namespace ag = kiln::autograd;

struct Case {
  Tensor x;
  std::vector<Tensor> expected;  // output, then the gradients w.r.t. x, w1, w2
};

TEST(CompileThreads, FourThreadsShareOneCompiledFunction) {
  constexpr int kThreads = 4, kCalls = 20;
  kiln::manual_seed(40);
  Tensor w1 = param({6, 8}, 0.4), w2 = param({8, 2}, 0.4);
  CompiledFunction::Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor h = kiln::tanh(kiln::matmul(in[0], w1));
    return std::vector<Tensor>{(kiln::sigmoid(kiln::matmul(h, w2)) * in[0].sum()).sum()};
  };
  auto results = [&](const std::vector<Tensor>& out, const Tensor& x) {
    std::vector<Tensor> r = {out[0].detach()};
    for (const Tensor& g : ag::grad({out[0]}, {x, w1, w2}))
      r.push_back(g);
    return r;
  };

  // Per thread and call: its own inputs, alternating between 3 and 5 rows.
  std::vector<std::vector<Case>> cases(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int c = 0; c < kCalls; ++c) {
      int64_t rows = (t + c) % 2 == 0 ? 3 : 5;
      Tensor x = param({rows, 6});
      cases[t].push_back({x, results(fn({x}), x)});
    }
  }

  CompiledFunction f = kiln::compile(fn);
  std::vector<std::vector<std::vector<Tensor>>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (const Case& c : cases[t])
          got[t].push_back(results(f({c.x}), c.x));
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : threads)
    th.join();

  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(errors[t], "");
    ASSERT_EQ(got[t].size(), cases[t].size());
    for (size_t c = 0; c < got[t].size(); ++c)
      expect_all_close(got[t][c], cases[t][c].expected, kReductionTol, "call " + std::to_string(c));
  }
  kiln::CompileStats st = f.stats();
  EXPECT_EQ(st.compiles, 2);
  EXPECT_EQ(st.cache_hits, kThreads * kCalls - 2);
  EXPECT_EQ(st.eager_calls, 0);
}

}  // namespace
}  // namespace kiln_test
