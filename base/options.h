// Note [Options]
// Every environment variable Kiln reads is parsed here, once, into one struct (DESIGN.md
// principle 8). Code reads options(), never getenv.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// The topics KILN_LOGS may name (DESIGN.md, debugging surface).
inline constexpr std::string_view kLogTopics[] = {"recompiles", "fallbacks", "fusion",
                                                  "kernels",    "trace",     "passes"};

// The most intra-op threads KILN_NUM_THREADS or set_num_threads may ask for: far past any core
// count Kiln runs on, and low enough that a typo (4294967297) is an error, not a wrap to 1.
inline constexpr int kMaxThreads = 1024;

struct Options {
  int num_threads = 1;                  // KILN_NUM_THREADS, default: the machine's core count
  std::string logs;                     // KILN_LOGS as given
  std::vector<std::string> log_topics;  // KILN_LOGS split at commas; "all" turns on every topic
  std::vector<std::string> warnings;    // problems found while parsing, printed once by options()
  std::string debug_dir;                // KILN_DEBUG_DIR: one folder per compiled graph
  std::string cache_dir;                // KILN_CACHE_DIR, default ~/.cache/kiln
  std::string backend;                  // KILN_BACKEND
  std::string profile_path;             // KILN_PROFILE: profile the process, Chrome trace here
  bool update_golden = false;           // KILN_UPDATE_GOLDEN=1: golden tests rewrite their files

  bool log_enabled(std::string_view topic) const;
};

// Parses the variables through `getenv` (tests pass a fake environment). Throws kiln::Error for
// a malformed value; an unknown log topic is a warning, since logging must not stop a program.
Options parse_options(const std::function<const char*(const char*)>& getenv);

// The process's options, parsed from the environment on first use.
const Options& options();

// Writes "[kiln:topic] message" to stderr when the topic is enabled: by KILN_LOGS, or since
// set_log_topics.
void log_line(std::string_view topic, std::string_view message);
bool log_topic_enabled(std::string_view topic);
// Replaces the enabled log topics for the rest of the process (as torch._logging.set_logs
// does), e.g. {"recompiles", "fallbacks"}; {} turns logging off. Unknown topics throw
// kiln::Error. Returns the previously enabled topics, so a caller can restore them.
std::vector<std::string> set_log_topics(std::vector<std::string> topics);

}  // namespace kiln
