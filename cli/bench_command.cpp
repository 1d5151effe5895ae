// `kiln bench`: runs the benchmark suite binary (bench/suite/suite.h) and prints its results as
// a markdown table; `kiln bench --report FILE.json` only turns saved results into the table.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "kiln/kiln.h"

extern char** environ;

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void bench_usage(std::ostream& os) {
  os << "usage: kiln bench [--smoke] [--filter REGEX] [--json FILE] [--markdown FILE]\n"
        "       kiln bench --report FILE.json [--report FILE.json ...]\n\n"
        "Runs the benchmark suite (ten workloads, each forward+backward eagerly and compiled;\n"
        "bench/suite/) and prints a markdown table of the results: median time per step, the\n"
        "figure against a reference measured in the same run (GB/s as a fraction of a memory\n"
        "copy, or GFLOP/s as a fraction of OpenBLAS sgemm on the same matrix products, or\n"
        "nanoseconds per op), kernels per step, the speedup over eager and the compile times.\n\n"
        "options:\n"
        "  --smoke          one iteration per workload (a check that each runs, not a figure)\n"
        "  --filter REGEX   only the benchmarks whose name matches (e.g. 'layer_norm|mlp')\n"
        "  --json FILE      keep the Google Benchmark JSON in FILE\n"
        "  --markdown FILE  write the table to FILE as well\n"
        "  --suite PATH     the kiln_bench_suite binary (default: $KILN_BENCH_SUITE, or\n"
        "                   bench/kiln_bench_suite beside this program)\n"
        "  --report FILE    print the table of saved JSON files and exit; repeat it to merge\n"
        "                   several, e.g. the suite's with bench/torch_suite.py's (PyTorch\n"
        "                   eager and torch.compile on the same workloads)\n"
        "  -h, --help       show this message\n";
}

std::string find_suite(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("KILN_BENCH_SUITE")) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (fs::path p : {self / "bench" / "kiln_bench_suite", self / "kiln_bench_suite"})
    if (fs::exists(p)) return p.string();
  return "";
}

std::string fixed(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  if (v >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

double counter(const json& b, const char* name) {
  return b.contains(name) && b[name].is_number() ? b[name].get<double>() : -1;
}

}  // namespace

namespace {

json read_results(const std::string& path) {
  std::ifstream in(path);
  KILN_CHECK(in.good(), "kiln bench: cannot open {}", path);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("kiln bench: {} is not JSON: {}", path, e.what()));
  }
  KILN_CHECK(doc.contains("benchmarks") && doc.contains("context") && doc["benchmarks"].is_array(),
             "kiln bench: {} is not Google Benchmark output (no 'benchmarks' and 'context')", path);
  return doc;
}

std::string machine_line(const json& ctx) {
  auto str = [&](const char* key) {
    return ctx.contains(key)
               ? (ctx[key].is_string() ? ctx[key].get<std::string>() : ctx[key].dump())
               : std::string("?");
  };
  // bench/torch_suite.py names its library; the Kiln suite's context has no such key.
  std::string library = ctx.contains("library") ? str("library") : "Kiln";
  std::string line = fmt::format(
      "Machine: {}, {} CPUs at {} MHz, {} on {} threads; run {}{}.\n", str("host_name"),
      str("num_cpus"), str("mhz_per_cpu"), library, str("kiln_threads"), str("date"),
      str("kiln_smoke") == "1" ? " (smoke mode: one iteration each, not a measurement)" : "");
  if (ctx.contains("cpu_model")) line += "CPU: " + str("cpu_model") + ".\n";
  if (ctx.contains("blas")) line += "BLAS: " + str("blas") + ".\n";
  return line;
}

// "BM_mlp_step/eager/real_time" -> "BM_mlp_step".
std::string workload_of(const std::string& name) {
  return name.substr(0, name.find('/'));
}

}  // namespace

// The markdown table of Google Benchmark JSON files of the suite: Kiln's (kiln_bench_suite) and
// any of bench/torch_suite.py. Rows are grouped by workload in the order they first appear;
// every speedup is against Kiln eager on the same workload.
std::string bench_report(const std::vector<std::string>& paths) {
  KILN_CHECK(!paths.empty(), "kiln bench: no result files to report");
  std::string out;
  std::vector<std::string> order;
  std::map<std::string, std::vector<json>> rows;
  std::map<std::string, double> eager_ms;
  for (const std::string& path : paths) {
    json doc = read_results(path);
    out += machine_line(doc["context"]);
    for (const json& b : doc["benchmarks"]) {
      std::string name = b.value("name", "");
      std::string workload = workload_of(name);
      if (!rows.count(workload)) order.push_back(workload);
      rows[workload].push_back(b);
      if (name.find("/eager") != std::string::npos) eager_ms[workload] = counter(b, "median_ms");
    }
  }
  out +=
      "\n| workload | mode | median ms/step | throughput (vs reference in the same run) | "
      "kernels/step | speedup vs Kiln eager | compile cold / warm ms |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const std::string& workload : order) {
    for (const json& b : rows[workload]) {
      std::string name = b.value("name", "");
      bool eager = name.find("/eager") != std::string::npos;
      std::string label = b.value("label", eager ? "eager" : "compiled");
      double ms = counter(b, "median_ms");
      std::string figure;
      if (counter(b, "copy_frac") >= 0) {
        figure = fmt::format("{} GB/s ({:.2f} of copy at {} GB/s)", fixed(counter(b, "GB/s")),
                             counter(b, "copy_frac"), fixed(counter(b, "copy_GB/s")));
      } else if (counter(b, "sgemm_frac") >= 0) {
        figure = fmt::format("{} GFLOP/s ({:.2f} of sgemm at {})", fixed(counter(b, "GFLOP/s")),
                             counter(b, "sgemm_frac"), fixed(counter(b, "sgemm_GFLOP/s")));
      } else if (counter(b, "ns/op") >= 0) {
        figure = fmt::format("{} ns/op over {} graph ops", fixed(counter(b, "ns/op")),
                             counter(b, "graph_ops"));
      }
      std::string speedup;
      if (!eager && eager_ms.count(workload) && ms > 0)
        speedup = fmt::format("{:.2f}x", eager_ms[workload] / ms);
      std::string compile = counter(b, "compile_cold_ms") >= 0
                                ? fmt::format("{} / {}", fixed(counter(b, "compile_cold_ms")),
                                              fixed(counter(b, "compile_warm_ms")))
                                : "";
      std::string kernels =
          counter(b, "kernels") >= 0 ? fmt::format("{}", counter(b, "kernels")) : "";
      std::string short_name = workload.rfind("BM_", 0) == 0 ? workload.substr(3) : workload;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", short_name, label, fixed(ms),
                         figure, kernels, speedup, compile);
    }
  }
  return out;
}

int bench_command(const std::vector<std::string>& args) {
  std::string suite, filter, json_path, markdown_path;
  std::vector<std::string> reports;
  bool smoke = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      bench_usage(std::cout);
      return 0;
    } else if (a == "--smoke") {
      smoke = true;
    } else if (has_value && a == "--report") {
      reports.push_back(args[++i]);
    } else if (has_value &&
               (a == "--filter" || a == "--json" || a == "--markdown" || a == "--suite")) {
      std::string& dst = a == "--filter"     ? filter
                         : a == "--json"     ? json_path
                         : a == "--markdown" ? markdown_path
                                             : suite;
      dst = args[++i];
    } else {
      std::cerr << "kiln bench: unexpected argument '" << a << "'\n\n";
      bench_usage(std::cerr);
      return 2;
    }
  }
  try {
    if (!reports.empty()) {
      std::cout << bench_report(reports);
      return 0;
    }
    std::string binary = find_suite(suite);
    if (binary.empty()) {
      std::cerr << "kiln bench: cannot find kiln_bench_suite (build with -DKILN_BUILD_BENCH=ON, "
                   "or pass --suite PATH)\n";
      return 1;
    }
    bool keep_json = !json_path.empty();
    if (!keep_json)
      json_path =
          (fs::temp_directory_path() / fmt::format("kiln_bench_{}.json", getpid())).string();
    std::vector<std::string> argv_s = {binary, "--benchmark_out=" + json_path,
                                       "--benchmark_out_format=json"};
    if (smoke) argv_s.push_back("--smoke");
    if (!filter.empty()) argv_s.push_back("--benchmark_filter=" + filter);
    std::vector<char*> argv;
    for (std::string& s : argv_s)
      argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      std::cerr << "kiln bench: cannot run " << binary << "\n";
      return 1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::cerr << "kiln bench: " << binary << " failed\n";
      return 1;
    }
    std::string table = bench_report({json_path});
    std::cout << "\n" << table;
    if (!markdown_path.empty()) std::ofstream(markdown_path) << table;
    if (!keep_json) fs::remove(json_path);
  } catch (const Error& e) {
    std::cerr << "kiln bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
