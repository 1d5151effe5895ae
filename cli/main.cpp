// The `kiln` command-line tool: the IR workbench (opt, run) and the small eager example that
// the README's first command shows. Each subcommand answers --help.
#include <cstring>
#include <iostream>
#include <string_view>

#include <vector>

#include "commands.h"
#include "kiln/codegen/cuda/nvrtc_info.h"
#include "kiln/kiln.h"

namespace {

int usage(std::ostream& os, int code) {
  os << "usage: kiln <command>\n\n"
        "commands:\n"
        "  opt FILE --passes=a,b   parse text IR, run passes by name, print the result\n"
        "  run FILE --seed N       run text IR on generated inputs, summarize the outputs\n"
        "  demo      train the built-in models eagerly and compiled, side by side\n"
        "  dump MODEL [--stage S] [--dot]   print a built-in model's IR stages\n"
        "  bench     run the benchmark suite and print its markdown table\n"
        "  example   run a small eager example (tensor ops, views, matmul) and print results\n"
        "  version   print the version and the backends this build has\n"
        "  help      show this message\n";
  return code;
}

int run_example() {
  using namespace kiln;
  manual_seed(0);
  Tensor x = randn({4, 3});
  Tensor w = randn({3, 2});
  Tensor b = full({2}, 0.5);
  Tensor y = sigmoid(matmul(x, w) + b);
  std::cout << "x =\n" << x << "\n\nw =\n" << w << "\n\nsigmoid(x @ w + b) =\n" << y << "\n\n";
  Tensor row_mean = y.mean({1}, /*keepdim=*/true);
  std::cout << "row means (keepdim) =\n" << row_mean << "\n\n";
  Tensor v = arange(12).view({3, 4});
  std::cout << "arange(12).view({3, 4}).t() =\n" << v.t() << "\n\n";
  v.select(0, 1).fill_(-1);  // writes through the view into v's storage
  std::cout << "after v.select(0, 1).fill_(-1): v =\n" << v << "\n\n";
  std::cout << "sum over dim 0 = " << v.sum({0}).to_vector<int64_t>().size() << " values, total "
            << v.sum().item<int64_t>() << "\n";
  // The same layer traced into the graph IR, then compiled with its backward.
  std::cout << "\ntrace of sigmoid(x @ w + b), with your source lines:\n"
            << trace([&](const std::vector<Tensor>& in) { return sigmoid(matmul(in[0], w) + b); },
                     {x})
                   .str();
  Tensor wg = w.detach().requires_grad_();
  CompiledFunction step = compile([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sigmoid(matmul(in[0], wg) + b).sum()};
  });
  step({x})[0].backward();
  CompileStats st = step.stats();
  std::cout << "\ncompiled forward + backward: " << st.forward_kernels << " forward and "
            << st.backward_kernels << " backward ops, " << st.saved_bytes
            << " bytes saved for backward; d(sum)/dw =\n"
            << wg.grad() << "\n";
  try {
    (void)add(ones({2, 3}), ones({4}));
  } catch (const Error& e) {
    std::cout << "\nbad input throws kiln::Error: " << e.what() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(std::cerr, 2);
  std::string_view cmd = argv[1];
  try {
    std::vector<std::string> rest(argv + 2, argv + argc);
    if (cmd == "opt") return kiln::cli::opt_command(rest);
    if (cmd == "run") return kiln::cli::run_command(rest);
    if (cmd == "example") return run_example();
    if (cmd == "demo") return kiln::cli::demo_command(rest);
    if (cmd == "dump") return kiln::cli::dump_command(rest);
    if (cmd == "bench") return kiln::cli::bench_command(rest);
    if (cmd == "version") {
      std::cout << "kiln " << KILN_VERSION << " (LLVM backend: " << (KILN_WITH_LLVM ? "on" : "off")
                << ", CUDA backend: " << (KILN_WITH_CUDA ? "on, NVRTC " : "off")
                << kiln::cuda::nvrtc_version() << ", CUDA devices: " << kiln::cuda_device_count()
                << ", threads: " << kiln::get_num_threads() << ")\n";
      return 0;
    }
    if (cmd == "help" || cmd == "--help" || cmd == "-h") return usage(std::cout, 0);
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "kiln: unknown command '" << cmd << "'\n\n";
  return usage(std::cerr, 2);
}
