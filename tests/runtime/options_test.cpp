// Note [Options]: the environment is parsed in one place; these tests feed it a fake one.
#include <gtest/gtest.h>

#include <map>

#include "kiln/base/options.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

Options parse(std::map<std::string, std::string> env) {
  return parse_options([env](const char* name) -> const char* {
    // The map outlives the call: the lambda holds its own copy.
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Options, DefaultsWithoutEnvironment) {
  Options o = parse({{"HOME", "/home/u"}});
  EXPECT_GE(o.num_threads, 1);
  EXPECT_TRUE(o.log_topics.empty());
  EXPECT_EQ(o.debug_dir, "");
  EXPECT_EQ(o.cache_dir, "/home/u/.cache/kiln");
  EXPECT_EQ(o.backend, "auto");
  EXPECT_EQ(o.profile_path, "");
  EXPECT_TRUE(o.warnings.empty());
}

TEST(Options, LogTopicsAreSplitAndChecked) {
  Options o = parse({{"KILN_LOGS", "recompiles,,fallbacks,bogus"}});
  EXPECT_TRUE(o.log_enabled("recompiles"));
  EXPECT_TRUE(o.log_enabled("fallbacks"));
  EXPECT_FALSE(o.log_enabled("fusion"));
  EXPECT_FALSE(o.log_enabled("bogus"));
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("unknown topic 'bogus'"), std::string::npos) << o.warnings[0];
}

TEST(Options, AllEnablesEveryTopic) {
  Options o = parse({{"KILN_LOGS", "all"}});
  for (std::string_view t : kLogTopics)
    EXPECT_TRUE(o.log_enabled(t)) << t;
}

TEST(Options, DebugDirAndThreads) {
  Options o = parse({{"KILN_DEBUG_DIR", "/tmp/dbg"}, {"KILN_NUM_THREADS", "3"}});
  EXPECT_EQ(o.debug_dir, "/tmp/dbg");
  EXPECT_EQ(o.num_threads, 3);
}

TEST(Options, ProfilePath) {
  EXPECT_EQ(parse({{"KILN_PROFILE", "trace.json"}}).profile_path, "trace.json");
}

TEST(Options, MalformedThreadCountThrows) {
  EXPECT_THROW(parse({{"KILN_NUM_THREADS", "two"}}), Error);
  EXPECT_THROW(parse({{"KILN_NUM_THREADS", "0"}}), Error);
  // 2^32 + 1 used to wrap to one thread; counts past kMaxThreads are refused, not wrapped.
  EXPECT_THROW(parse({{"KILN_NUM_THREADS", "4294967297"}}), Error);
  EXPECT_THROW(parse({{"KILN_NUM_THREADS", "99999999999999999999999"}}), Error);
  EXPECT_THROW(parse({{"KILN_NUM_THREADS", "1025"}}), Error);
  EXPECT_EQ(parse({{"KILN_NUM_THREADS", "1024"}}).num_threads, 1024);
}

}  // namespace
}  // namespace kiln
