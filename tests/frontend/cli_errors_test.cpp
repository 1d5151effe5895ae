// The kiln tool's answers to bad input (issue 34): an error message on stderr and exit status
// 1, never a crash or a misleading message.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace kiln_test {
namespace {

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs `kiln ARGS` in bash after `prefix` (shell settings, environment, a wrapper command).
Result run_kiln_in(const std::string& prefix, const std::string& args) {
  std::string cmd = "bash -c \"" + prefix + " '" KILN_CLI_PATH "' " + args + "\" 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe))
    r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

Result run_kiln(const std::string& args) {
  return run_kiln_in("", args);
}

TEST(CliErrors, OptOnADirectorySaysItIsADirectory) {
  std::string dir = std::filesystem::temp_directory_path().string();
  Result r = run_kiln("opt '" + dir + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("is a directory"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("parse"), std::string::npos) << r.output;
}

TEST(CliErrors, ThreadCountPastTheLimitIsAnError) {
  Result r = run_kiln("version");
  ASSERT_EQ(r.status, 0) << r.output;
  std::string cmd = "KILN_NUM_THREADS=4294967297 '" KILN_CLI_PATH "' version > /dev/null 2>&1";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

// A thread count the system cannot start (here: the address space runs out of stacks) is a
// kiln::Error naming KILN_NUM_THREADS, not an abort or a hang.
TEST(CliErrors, ThreadsTheSystemCannotStartAreAnError) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's runtime reserves more address space than the limit allows";
#else
  Result r = run_kiln_in("ulimit -v 3000000; KILN_NUM_THREADS=1024 timeout 120", "demo --short");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("KILN_NUM_THREADS=1024"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("could not start thread"), std::string::npos) << r.output;
#endif
}

}  // namespace
}  // namespace kiln_test
