// `kiln run FILE --seed N`: execute text IR through the interpreter on inputs generated from the
// graph's declared input types, or on recorded ones, and summarize the outputs. A KILN_DEBUG_DIR
// repro (Note [Repro], frontend/compile/repro.h) replays with the inputs recorded beside it and is
// checked against the outputs the compiled code gave.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <numeric>

#include "commands.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/verifier.h"
#include "kiln/kiln.h"

namespace kiln::cli {
namespace {

void run_usage(std::ostream& os) {
  os << "usage: kiln run FILE [--seed N] [--int-high N] [--inputs F] [--expect F] [--generate]\n"
        "                [--print-values]\n\n"
        "Parses and verifies the text IR in FILE ('-' for standard input), makes one input per\n"
        "graph input, runs the graph through the interpreter and prints a summary of each\n"
        "output.\n\n"
        "Recorded inputs: for FILE named X.kir, X.inputs beside it (a KILN_DEBUG_DIR repro writes\n"
        "repro.kir, repro.inputs and repro.outputs) holds the values of the inputs, and X.outputs\n"
        "the outputs to expect; each output is then compared with the expected one and the exit\n"
        "status is 1 when any differs beyond the tolerance (float32: 1e-4 relative + 1e-5\n"
        "absolute; float64: 1e-9 + 1e-12; integers and bool: exact).\n\n"
        "Generated inputs: floating types are standard normal; integer types are uniform in\n"
        "[0, int-high); bool is a fair coin; a 'requires_grad' type makes a leaf that requires\n"
        "grad; a 'meta' type makes a Meta tensor (shapes only). Strided types must be a\n"
        "permutation of a contiguous layout.\n\n"
        "options:\n"
        "  --seed N          seed for the generated inputs and random ops (default 0)\n"
        "  --int-high N      exclusive upper bound of generated integers (default 2, so that\n"
        "                    index inputs stay in range of small dims)\n"
        "  --inputs F        read the inputs from tensor file F (runtime/tensor_file.h)\n"
        "  --expect F        compare the outputs with tensor file F\n"
        "  --generate        generate inputs even when recorded ones are beside FILE\n"
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

// A contiguous tensor laid out so that permuting it gives the declared strides, holding
// `recorded` (same sizes and dtype) when it is defined and generated values otherwise.
Tensor make_input(const ir::TensorType& t, int64_t int_high, size_t index, const Tensor& recorded) {
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
  if (recorded.defined()) {
    KILN_CHECK(recorded.dtype() == t.dtype && recorded.sizes() == t.sizes,
               "kiln run: recorded input {} is {}{} but the graph declares {}", index,
               ir::dtype_short_name(recorded.dtype()), shape_str(recorded.sizes()), t.str());
    base = empty(physical, opts.dtype(t.dtype));
  } else if (is_floating(t.dtype)) {
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
  if (recorded.defined()) x.copy_(recorded.to(t.device));
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

// Compares an output with its expected value; returns a one-line verdict and sets *ok.
std::string compare(const Tensor& out, const Tensor& want, bool* ok) {
  ir::TensorType got_type = ir::TensorType::of(out);
  if (out.dtype() != want.dtype() || out.sizes() != want.sizes()) {
    *ok = false;
    return fmt::format("DIFFERS: expected {}{}, got {}", ir::dtype_short_name(want.dtype()),
                       shape_str(want.sizes()), got_type.str());
  }
  std::vector<double> a = out.detach().to(kCPU).to_vector<double>();
  std::vector<double> b = want.to_vector<double>();
  double rtol = 0, atol = 0;
  if (out.dtype() == kFloat64) {
    rtol = 1e-9, atol = 1e-12;
  } else if (is_floating(out.dtype())) {
    rtol = 1e-4, atol = 1e-5;
  }
  double max_abs = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    double d = std::fabs(a[i] - b[i]);
    if (std::isnan(d)) d = std::numeric_limits<double>::infinity();
    max_abs = std::max(max_abs, d);
    if (d > atol + rtol * std::fabs(b[i])) ++bad;
  }
  *ok = bad == 0;
  if (*ok) return fmt::format("matches the recorded output (max abs diff {:.3g})", max_abs);
  return fmt::format(
      "DIFFERS from the recorded output: {} of {} elements beyond tolerance, max "
      "abs diff {:.3g}",
      bad, a.size(), max_abs);
}

std::string sibling(const std::string& file, const char* extension) {
  if (file == "-" || !file.ends_with(".kir")) return "";
  std::string path = file.substr(0, file.size() - 4) + extension;
  return std::filesystem::exists(path) ? path : "";
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  std::string file;
  int64_t seed = 0;
  int64_t int_high = 2;
  bool print_values = false;
  bool generate = false;
  std::string inputs_file, expect_file;
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
    } else if (a == "--inputs" || a == "--expect") {
      if (i + 1 == args.size()) {
        std::cerr << "kiln run: " << a << " takes a file\n";
        return 2;
      }
      (a == "--inputs" ? inputs_file : expect_file) = args[++i];
    } else if (a == "--generate") {
      generate = true;
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
  if (!generate) {
    if (inputs_file.empty()) inputs_file = sibling(file, ".inputs");
    if (expect_file.empty()) expect_file = sibling(file, ".outputs");
  }
  bool all_match = true;
  try {
    std::shared_ptr<ir::Graph> graph = ir::parse(read_input(file));
    ir::verify(*graph);
    manual_seed(static_cast<uint64_t>(seed));
    std::vector<Tensor> recorded;
    if (!inputs_file.empty()) {
      recorded = load_tensors(inputs_file).tensors;
      KILN_CHECK(recorded.size() == graph->inputs().size(),
                 "{} holds {} tensors but the graph takes {} inputs", inputs_file, recorded.size(),
                 graph->inputs().size());
    }
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < graph->inputs().size(); ++i)
      inputs.push_back(make_input(graph->inputs()[i]->type(), int_high, i,
                                  recorded.empty() ? Tensor() : recorded[i]));
    std::vector<Tensor> outputs = interpret(*graph, inputs);
    std::cout << fmt::format(
        "ran {} ({} inputs, {} nodes, {})\n", file, inputs.size(),
        graph->num_nodes() - inputs.size(),
        inputs_file.empty() ? fmt::format("seed {}", seed) : "inputs from " + inputs_file);
    std::vector<Tensor> expected;
    if (!expect_file.empty()) {
      expected = load_tensors(expect_file).tensors;
      KILN_CHECK(expected.size() == outputs.size(),
                 "{} holds {} tensors but the graph has {} outputs", expect_file, expected.size(),
                 outputs.size());
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      summarize(std::cout, i, outputs[i], print_values);
      if (expected.empty()) continue;
      bool ok = true;
      std::cout << "  " << compare(outputs[i], expected[i], &ok) << "\n";
      all_match = all_match && ok;
    }
    if (!expected.empty()) {
      std::cout << (all_match
                        ? fmt::format("all {} outputs match {}\n", outputs.size(), expect_file)
                        : fmt::format("some outputs differ from {}\n", expect_file));
    }
  } catch (const Error& e) {
    std::cerr << "kiln run: " << file << ": error: " << e.what() << "\n";
    return 1;
  }
  return all_match ? 0 : 1;
}

}  // namespace kiln::cli
