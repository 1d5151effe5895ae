// `kiln run FILE --seed N`: execute text IR through the interpreter on inputs generated from the
// graph's declared input types, and summarize the outputs. With KILN_DEBUG_DIR repros this
// replays a compiled graph outside the program that produced it.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <numeric>

#include "commands.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::cli {
namespace {

void run_usage(std::ostream& os) {
  os << "usage: kiln run FILE [--seed N] [--int-high N] [--print-values]\n\n"
        "Parses and verifies the text IR in FILE ('-' for standard input), generates one\n"
        "input per graph input from its declared type, runs the graph through the\n"
        "interpreter and prints a summary of each output.\n\n"
        "Generated inputs: floating types are standard normal; integer types are uniform in\n"
        "[0, int-high); bool is a fair coin; a 'requires_grad' type makes a leaf that requires\n"
        "grad; a 'meta' type makes a Meta tensor (shapes only). Strided types must be a\n"
        "permutation of a contiguous layout.\n\n"
        "options:\n"
        "  --seed N          seed for the generated inputs and random ops (default 0)\n"
        "  --int-high N      exclusive upper bound of generated integers (default 2, so that\n"
        "                    index inputs stay in range of small dims)\n"
        "  --print-values    print every output tensor in full\n"
        "  -h, --help        show this message\n";
}

bool parse_int(const std::string& s, int64_t* out) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used != s.size()) return false;
    *out = v;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// A contiguous tensor laid out so that permuting it gives the declared strides.
Tensor make_input(const ir::TensorType& t, int64_t int_high, size_t index) {
  Shape order(t.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  Shape strides = t.effective_strides();
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  Shape physical;
  for (int64_t d : order)
    physical.push_back(t.sizes[d]);
  TensorOptions opts = TensorOptions().device(t.device);
  Tensor base;
  if (is_floating(t.dtype)) {
    base = randn(physical, opts.dtype(t.dtype));
  } else if (t.dtype == kBool) {
    base = rand(physical, opts).lt(0.5);
  } else {
    base = rand(physical, opts).mul(static_cast<double>(int_high)).to(t.dtype);
  }
  Shape inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    inverse[order[i]] = static_cast<int64_t>(i);
  Tensor x = base.permute(inverse).detach();
  KILN_CHECK(ir::TensorType::of(x).strides == t.strides,
             "kiln run: cannot generate input {} of type {}: its strides are not a permutation "
             "of a contiguous layout",
             index, t.str());
  if (t.requires_grad) x.requires_grad_(true);
  return x;
}

void summarize(std::ostream& os, size_t i, const Tensor& t, bool print_values) {
  ir::TensorType type = ir::TensorType::of(t);
  os << fmt::format("output {}: {}", i, type.str());
  if (t.device().is_meta() || t.numel() == 0) {
    os << "\n";
    return;
  }
  std::vector<double> v = t.detach().to(kCPU).to_vector<double>();
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  double sum = std::accumulate(v.begin(), v.end(), 0.0);
  os << fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}  sum {:.6g}\n", *mn, *mx,
                    sum / static_cast<double>(v.size()), sum);
  if (print_values) os << t.detach() << "\n";
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  std::string file;
  int64_t seed = 0;
  int64_t int_high = 2;
  bool print_values = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](int64_t* out) {
      std::string v;
      if (a.find('=') != std::string::npos) {
        v = a.substr(a.find('=') + 1);
      } else if (i + 1 < args.size()) {
        v = args[++i];
      }
      return parse_int(v, out);
    };
    if (a == "-h" || a == "--help") {
      run_usage(std::cout);
      return 0;
    }
    if (a.rfind("--seed", 0) == 0) {
      if (!value(&seed)) {
        std::cerr << "kiln run: --seed takes an integer\n";
        return 2;
      }
    } else if (a.rfind("--int-high", 0) == 0) {
      if (!value(&int_high) || int_high < 1) {
        std::cerr << "kiln run: --int-high takes a positive integer\n";
        return 2;
      }
    } else if (a == "--print-values") {
      print_values = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "kiln run: unknown option '" << a << "'\n\n";
      run_usage(std::cerr);
      return 2;
    } else if (file.empty()) {
      file = a;
    } else {
      std::cerr << "kiln run: more than one input file ('" << file << "' and '" << a << "')\n";
      return 2;
    }
  }
  if (file.empty()) {
    std::cerr << "kiln run: no input file\n\n";
    run_usage(std::cerr);
    return 2;
  }
  try {
    std::shared_ptr<ir::Graph> graph = ir::parse(read_input(file));
    ir::verify(*graph);
    manual_seed(static_cast<uint64_t>(seed));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < graph->inputs().size(); ++i)
      inputs.push_back(make_input(graph->inputs()[i]->type(), int_high, i));
    std::vector<Tensor> outputs = interpret(*graph, inputs);
    std::cout << fmt::format("ran {} ({} inputs, {} nodes, seed {})\n", file, inputs.size(),
                             graph->num_nodes() - inputs.size(), seed);
    for (size_t i = 0; i < outputs.size(); ++i)
      summarize(std::cout, i, outputs[i], print_values);
  } catch (const Error& e) {
    std::cerr << "kiln run: " << file << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
