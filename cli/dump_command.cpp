// `kiln dump MODEL [--stage S] [--dot]`: compiles a built-in model (frontend/models.h) for one
// training step and prints its IR stages, as CompiledFunction::dump(stage) gives them.
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "kiln/frontend/compile/debug_dump.h"
#include "kiln/kiln.h"

namespace kiln::cli {
namespace {

void dump_usage(std::ostream& os) {
  os << "usage: kiln dump MODEL [--stage STAGE] [--dot] [--backend B] [--seed N]\n\n"
        "Compiles the built-in MODEL's loss (forward and backward), calls it on its first\n"
        "synthetic batch, and prints the IR of one stage, or of every stage without --stage.\n\n"
        "models: "
     << fmt::format("{}", fmt::join(models::model_names(), ", "))
     << "\n\n"
        "stages, in pipeline order:\n"
        "  traced     the forward as the tracer recorded it, with your source lines\n"
        "  joint      forward and backward as traced (the backward by the autograd engine)\n"
        "  forward    the partitioned forward graph, before fusion\n"
        "  backward   the partitioned backward graph, before fusion\n"
        "  fused      forward and backward after the pipeline (fusion groups, lowering)\n"
        "  kernels    the fused groups' kernel IR\n\n"
        "options:\n"
        "  --stage S       print only stage S\n"
        "  --dot           print Graphviz DOT instead of text IR (pipe it to `dot -Tsvg`);\n"
        "                  the kernels stage has no DOT form\n"
        "  --backend B     auto (default), interpreter or llvm\n"
        "  --seed N        seed of the model's parameters and data (default 0)\n"
        "  -h, --help      show this message\n";
}

}  // namespace

int dump_command(const std::vector<std::string>& args) {
  std::string model, stage;
  bool dot = false;
  Backend backend = Backend::Auto;
  uint64_t seed = 0;
  auto bad = [](const std::string& why) {
    std::cerr << "kiln dump: " << why << "\n\n";
    dump_usage(std::cerr);
    return 2;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      dump_usage(std::cout);
      return 0;
    } else if (a == "--dot") {
      dot = true;
    } else if (a == "--stage" && has_value) {
      stage = args[++i];
      const auto& names = compile_detail::stage_names();
      if (std::find(names.begin(), names.end(), stage) == names.end())
        return bad(fmt::format("unknown stage '{}' (one of {})", stage, fmt::join(names, ", ")));
    } else if (a == "--backend" && has_value) {
      std::string b = args[++i];
      if (b == "auto") {
        backend = Backend::Auto;
      } else if (b == "interpreter") {
        backend = Backend::Interpreter;
      } else if (b == "llvm") {
        backend = Backend::LLVM;
      } else {
        return bad("unknown backend '" + b + "' (auto, interpreter or llvm)");
      }
    } else if (a == "--seed" && has_value) {
      try {
        size_t used = 0;
        seed = std::stoull(args[++i], &used);
        if (used != args[i].size()) return bad("--seed needs a non-negative integer");
      } catch (const std::exception&) {
        return bad("--seed needs a non-negative integer");
      }
    } else if (a.rfind("-", 0) == 0) {
      return bad("unexpected argument '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return bad("more than one model ('" + model + "' and '" + a + "')");
    }
  }
  if (model.empty()) return bad("no model given");
  try {
    models::Model m = models::make_model(model, seed);
    CompiledFunction f = compile(m.loss, {.backend = backend, .name = "dump_" + model});
    f(m.batch(0))[0].backward();
    if (!stage.empty()) {
      std::cout << f.dump(stage, dot);
      return 0;
    }
    for (std::string_view s : compile_detail::stage_names()) {
      if (dot && s == "kernels") continue;
      std::cout << (dot ? "// " : "# ") << "==== " << s << " ====\n" << f.dump(s, dot) << "\n";
    }
  } catch (const Error& e) {
    std::cerr << "kiln dump: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
