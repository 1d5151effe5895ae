#include "kiln/base/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "kiln/base/error.h"

namespace kiln {
namespace {

using Getenv = std::function<const char*(const char*)>;

std::string env_or(const Getenv& getenv, const char* name, std::string fallback) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::vector<std::string> split_topics(const std::string& list, std::vector<std::string>* warnings) {
  std::vector<std::string> topics;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string t = list.substr(start, end - start);
    start = end + 1;
    if (t.empty()) continue;
    if (t == "all") {
      topics.assign(std::begin(kLogTopics), std::end(kLogTopics));
      continue;
    }
    if (std::find(std::begin(kLogTopics), std::end(kLogTopics), t) == std::end(kLogTopics)) {
      std::string known;
      for (std::string_view k : kLogTopics)
        known += (known.empty() ? "" : ", ") + std::string(k);
      warnings->push_back("KILN_LOGS: unknown topic '" + t + "' (topics: " + known + ", all)");
      continue;
    }
    topics.push_back(t);
  }
  return topics;
}

}  // namespace

bool Options::log_enabled(std::string_view topic) const {
  return std::find(log_topics.begin(), log_topics.end(), topic) != log_topics.end();
}

Options parse_options(const Getenv& getenv) {
  Options o;
  o.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string threads = env_or(getenv, "KILN_NUM_THREADS", "");
  if (!threads.empty()) {
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(threads.c_str(), &end, 10);
    KILN_CHECK(end != threads.c_str() && *end == '\0' && errno == 0 && n >= 1 && n <= kMaxThreads,
               "KILN_NUM_THREADS must be an integer from 1 to {}, got '{}'", kMaxThreads, threads);
    o.num_threads = static_cast<int>(n);
  }
  o.logs = env_or(getenv, "KILN_LOGS", "");
  o.log_topics = split_topics(o.logs, &o.warnings);
  o.debug_dir = env_or(getenv, "KILN_DEBUG_DIR", "");
  std::string home = env_or(getenv, "HOME", "/tmp");
  o.cache_dir = env_or(getenv, "KILN_CACHE_DIR", home + "/.cache/kiln");
  o.backend = env_or(getenv, "KILN_BACKEND", "auto");
  o.profile_path = env_or(getenv, "KILN_PROFILE", "");
  std::string update = env_or(getenv, "KILN_UPDATE_GOLDEN", "0");
  KILN_CHECK(update == "0" || update == "1", "KILN_UPDATE_GOLDEN must be 0 or 1, got '{}'", update);
  o.update_golden = update == "1";
  return o;
}

const Options& options() {
  static const Options o = [] {
    Options parsed = parse_options([](const char* name) { return std::getenv(name); });
    for (const std::string& w : parsed.warnings)
      std::cerr << "kiln: warning: " << w << "\n";
    return parsed;
  }();
  return o;
}

namespace {

struct ActiveLogTopics {
  std::mutex mu;
  std::vector<std::string> topics = options().log_topics;
};

ActiveLogTopics& active_log_topics() {
  static ActiveLogTopics active;
  return active;
}

}  // namespace

bool log_topic_enabled(std::string_view topic) {
  ActiveLogTopics& a = active_log_topics();
  std::lock_guard<std::mutex> lock(a.mu);
  return std::find(a.topics.begin(), a.topics.end(), topic) != a.topics.end();
}

std::vector<std::string> set_log_topics(std::vector<std::string> topics) {
  for (const std::string& t : topics) {
    KILN_CHECK(std::find(std::begin(kLogTopics), std::end(kLogTopics), t) != std::end(kLogTopics),
               "set_log_topics: unknown topic '{}'", t);
  }
  ActiveLogTopics& a = active_log_topics();
  std::lock_guard<std::mutex> lock(a.mu);
  std::swap(a.topics, topics);
  return topics;
}

void log_line(std::string_view topic, std::string_view message) {
  if (!log_topic_enabled(topic)) return;
  // One write per line, so lines from several threads do not interleave mid-line.
  std::string line = "[kiln:" + std::string(topic) + "] " + std::string(message) + "\n";
  std::cerr << line << std::flush;
}

}  // namespace kiln
