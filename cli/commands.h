// The `kiln` tool's subcommands. Each takes the arguments after its name and returns the
// process exit code: 0 on success, 1 on an error it reported, 2 on bad usage.
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

int opt_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
int demo_command(const std::vector<std::string>& args);
int dump_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);

// Reads FILE, or standard input for "-"; throws kiln::Error when it cannot.
std::string read_input(const std::string& path);

}  // namespace kiln::cli
