// `kiln opt FILE --passes=a,b`: parse IR, run passes by name, print the result (in the style of
// mlir-opt). The golden tests in tests/passes/ drive this command.
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "commands.h"
#include "kiln/base/error.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kernel_ir/kernel_parser.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/passes/pass_manager.h"

namespace kiln::cli {
namespace {

void opt_usage(std::ostream& os) {
  os << "usage: kiln opt FILE [--passes=a,b,...] [--sizes=n=V,...] [--print-after-all] "
        "[--no-verify]\n\n"
        "Parses the text IR in FILE ('-' for standard input), verifies it, runs the passes in\n"
        "order and prints the resulting graph to standard output. When FILE holds kernel IR\n"
        "(it starts with 'kernel'), the kernel-IR passes run on each kernel instead.\n\n"
        "options:\n"
        "  --passes=LIST       comma-separated pass names (default: none, which prints the\n"
        "                      parsed graph back)\n"
        "  --sizes=LIST        kernel IR: fix the size parameters first, as NAME=VALUE pairs\n"
        "                      (rows=2,n=4); buffers of extent '?' get the extent their\n"
        "                      indices reach\n"
        "  --print-after-all   print the graph to standard error after each pass that\n"
        "                      changed it\n"
        "  --no-verify         do not verify the input or the graph after each pass\n"
        "  -h, --help          show this message\n\n"
        "passes:\n";
  for (const passes::PassInfo& p : passes::all_passes())
    os << "  " << p.name << std::string(p.name.size() < 20 ? 20 - p.name.size() : 1, ' ')
       << p.summary << "\n";
  os << "\nkernel-IR passes:\n";
  for (const kir::KernelPass& p : kir::kernel_passes())
    os << "  " << p.name << std::string(p.name.size() < 20 ? 20 - p.name.size() : 1, ' ')
       << p.summary << "\n";
}

// "rows=2,n=4" as name -> value.
std::map<std::string, int64_t> parse_sizes(const std::string& list) {
  std::map<std::string, int64_t> out;
  for (const std::string& item : passes::split_pass_list(list)) {
    size_t eq = item.find('=');
    KILN_CHECK(eq != std::string::npos && eq > 0,
               "--sizes: expected NAME=VALUE pairs separated by commas, got '{}'", item);
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    KILN_CHECK(ec == std::errc() && end == value.data() + value.size() && v >= 0,
               "--sizes: size {} must be a non-negative integer, got '{}'", name, value);
    KILN_CHECK(out.emplace(name, v).second, "--sizes: size {} is given twice", name);
  }
  return out;
}

// Kernel-IR text: each kernel parsed, verified, specialized to `sizes` when it has size
// parameters, run through the kernel passes and printed.
void opt_kernels(const std::string& text, const std::vector<std::string>& pass_names, bool verify,
                 bool print_after_all, const std::map<std::string, int64_t>& sizes) {
  std::vector<const kir::KernelPass*> chosen;
  for (const std::string& name : pass_names) {
    const kir::KernelPass* p = kir::find_kernel_pass(name);
    if (p == nullptr) {
      std::string known;
      for (const kir::KernelPass& k : kir::kernel_passes())
        known += (known.empty() ? "" : ", ") + std::string(k.name);
      KILN_ERROR("unknown kernel-IR pass '{}' (kernel-IR passes: {})", name, known);
    }
    chosen.push_back(p);
  }
  std::vector<kir::Kernel> kernels = kir::parse_kernels(text);
  for (const auto& [name, value] : sizes) {
    bool used = false;
    for (const kir::Kernel& k : kernels)
      for (kir::VarId v : k.sizes())
        used = used || k.vars[static_cast<size_t>(v)].name == name;
    KILN_CHECK(used, "--sizes: no kernel has a size %{}", name);
  }
  for (kir::Kernel& k : kernels) {
    if (verify) kir::verify(k);
    if (!sizes.empty() && !k.sizes().empty()) {
      std::vector<int64_t> values;
      for (kir::VarId v : k.sizes()) {
        const std::string& name = k.vars[static_cast<size_t>(v)].name;
        auto it = sizes.find(name);
        KILN_CHECK(it != sizes.end(),
                   "--sizes: kernel {} has size %{}, which --sizes does not give", k.name, name);
        values.push_back(it->second);
      }
      k = kir::specialize_sizes(k, values);
      if (verify) kir::verify(k);
    }

    for (const kir::KernelPass* p : chosen) {
      bool changed = p->run(k);
      if (verify) kir::verify(k);
      if (changed && print_after_all) std::cerr << "// ----- after " << p->name << " -----\n" << k;
    }
    std::cout << k;
  }
}

}  // namespace

std::string read_input(const std::string& path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), "cannot read '{}': it is a directory", path);
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), "cannot open '{}'", path);
  ss << in.rdbuf();
  return ss.str();
}

int opt_command(const std::vector<std::string>& args) {
  std::string file;
  std::vector<std::string> pass_names;
  bool print_after_all = false;
  bool verify = true;
  std::string sizes;
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      opt_usage(std::cout);
      return 0;
    }
    if (a.rfind("--passes=", 0) == 0) {
      std::vector<std::string> more = passes::split_pass_list(a.substr(9));
      pass_names.insert(pass_names.end(), more.begin(), more.end());
    } else if (a.rfind("--sizes=", 0) == 0) {
      sizes += (sizes.empty() ? "" : ",") + a.substr(8);
    } else if (a == "--print-after-all") {
      print_after_all = true;
    } else if (a == "--no-verify") {
      verify = false;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "kiln opt: unknown option '" << a << "'\n\n";
      opt_usage(std::cerr);
      return 2;
    } else if (file.empty()) {
      file = a;
    } else {
      std::cerr << "kiln opt: more than one input file ('" << file << "' and '" << a << "')\n";
      return 2;
    }
  }
  if (file.empty()) {
    std::cerr << "kiln opt: no input file\n\n";
    opt_usage(std::cerr);
    return 2;
  }
  try {
    std::string text = read_input(file);
    if (kir::looks_like_kernel_ir(text)) {
      opt_kernels(text, pass_names, verify, print_after_all, parse_sizes(sizes));
      return 0;
    }
    std::shared_ptr<ir::Graph> graph = ir::parse(text);
    if (verify) ir::verify(*graph);
    passes::PassContext ctx;
    ctx.out = &std::cout;
    passes::PassRunOptions options;
    options.verify_each = verify;
    if (print_after_all) {
      options.after_change = [](const passes::PassInfo& p, const ir::Graph& g) {
        std::cerr << "// ----- after " << p.name << " -----\n" << g.str();
      };
    }
    passes::run_passes(*graph, pass_names, ctx, options);
    std::cout << graph->str();
  } catch (const Error& e) {
    std::cerr << "kiln opt: " << file << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
