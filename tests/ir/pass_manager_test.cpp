// The pass manager's contract: passes run by name, in order, with verification after each one
// that changed the graph. The passes' own behaviour is covered by the golden files in
// tests/passes/.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/ir/graph.h"
#include "kiln/kiln.h"
#include "kiln/passes/pass_manager.h"
#include "kiln/runtime/op_table.h"

namespace kiln::passes {
namespace {

ir::TensorType f32(Shape sizes) {
  ir::TensorType t;
  t.sizes = std::move(sizes);
  return t;
}

// x -> exp -> (unused) and x -> neg -> output: dce has exactly one node to remove.
std::unique_ptr<ir::Graph> graph_with_dead_exp() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->add_input(f32({3}), "x");
  ir::TensorType t = f32({3});
  NoAttrs none;
  g->create_op(get_op("exp"), std::span(&x, 1), &none, std::span(&t, 1));
  ir::Node* neg = g->create_op(get_op("neg"), std::span(&x, 1), &none, std::span(&t, 1));
  g->add_output(neg->output());
  return g;
}

TEST(PassManager, SplitsPassLists) {
  EXPECT_EQ(split_pass_list("dce,cse"), (std::vector<std::string>{"dce", "cse"}));
  EXPECT_EQ(split_pass_list(",dce,,verify,"), (std::vector<std::string>{"dce", "verify"}));
  EXPECT_TRUE(split_pass_list("").empty());
}

TEST(PassManager, UnknownPassNamesTheRegisteredOnes) {
  auto g = graph_with_dead_exp();
  PassContext ctx;
  try {
    run_passes(*g, {"dce", "fuse-everything"}, ctx);
    FAIL() << "an unknown pass name was accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown pass 'fuse-everything'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("verify, print, dce, cse"), std::string::npos) << msg;
  }
  // Names are checked before any pass runs, so the graph is untouched.
  EXPECT_EQ(g->num_nodes(), 3u);
}

TEST(PassManager, RunsPassesInOrderAndReportsChanges) {
  auto g = graph_with_dead_exp();
  std::ostringstream out;
  PassContext ctx;
  ctx.out = &out;
  std::vector<std::string> changed;
  PassRunOptions options;
  options.after_change = [&](const PassInfo& p, const ir::Graph&) { changed.push_back(p.name); };
  run_passes(*g, {"cse", "print", "dce", "dce", "verify"}, ctx, options);
  EXPECT_EQ(changed, std::vector<std::string>{"dce"});  // the second dce finds nothing
  EXPECT_EQ(g->num_nodes(), 2u);
  // `print` ran before dce removed exp.
  EXPECT_NE(out.str().find("exp("), std::string::npos) << out.str();
}

TEST(PassManager, EveryPassHasASummary) {
  for (const PassInfo& p : all_passes()) {
    EXPECT_FALSE(p.summary.empty()) << p.name;
    EXPECT_EQ(find_pass(p.name), &p);
  }
  EXPECT_EQ(find_pass("nope"), nullptr);
}

}  // namespace
}  // namespace kiln::passes
