#include "kiln/frontend/compile/kernel_codegen.h"

#include <fmt/format.h>

#include <iostream>
#include <mutex>
#include <set>

#include "kiln/codegen/kernel_ir/kernel_ir.h"
#include "kiln/config.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/options.h"
#include "kiln/runtime/profiler.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln::compile_detail {
namespace {

// Warns once per failing kernel (by its kernel-IR text), as DESIGN.md principle 7 asks: the
// result stays right, but the slowdown must be visible.
void report_fallback(const kir::Kernel& k, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::string line = fmt::format(
      "fusion group {} failed to compile ({}); it runs in the kernel-IR interpreter", k.name, why);
  log_line("fallbacks", line);
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(k.str()).second && !log_topic_enabled("fallbacks"))
    std::cerr << "kiln: warning: " << line << "\n";
}

}  // namespace

Backend resolve_backend(Backend requested) {
  if (requested == Backend::Auto) {
    const std::string& env = options().backend;
    if (env == "interpreter") return Backend::Interpreter;
    if (env == "llvm") requested = Backend::LLVM;
    KILN_CHECK(env == "auto" || env == "llvm" || env.empty(),
               "KILN_BACKEND={} is not a backend; use auto, interpreter or llvm", env);
    if (requested == Backend::Auto) return KILN_WITH_LLVM ? Backend::LLVM : Backend::Interpreter;
  }
  switch (requested) {
    case Backend::Interpreter:
      return Backend::Interpreter;
    case Backend::LLVM:
      KILN_CHECK(KILN_WITH_LLVM,
                 "compile: Backend::LLVM needs a Kiln built with KILN_WITH_LLVM=ON; use "
                 "Backend::Interpreter or Backend::Auto");
      return Backend::LLVM;
    case Backend::CUDA:
      KILN_ERROR(
          "compile: the cuda backend has no code generator in this build yet; use "
          "Backend::Interpreter, Backend::LLVM or Backend::Auto");
    case Backend::Auto:
      break;
  }
  return Backend::Interpreter;
}

void compile_kernels(ir::Graph& g, Backend backend, bool keep_debug_text,
                     std::vector<std::pair<std::string, std::string>>* debug_files) {
  if (backend != Backend::LLVM) return;
#if KILN_WITH_LLVM
  codegen::LlvmCompileOptions o;
  o.keep_debug_text = keep_debug_text;
  for (ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup || !n->fusion_group().kernel) continue;
    const kir::Kernel& k = *n->fusion_group().kernel;
    profiler::RecordScope scope(profiler::ScopeKind::Compile, "codegen " + k.name, "llvm");
    try {
      std::shared_ptr<const codegen::LlvmKernel> compiled = codegen::llvm_compile(k, o);
      n->fusion_group().compiled = compiled;
      if (debug_files != nullptr) {
        for (const auto& f : compiled->debug_files)
          debug_files->push_back(f);
      }
    } catch (const std::exception& e) {
      report_fallback(k, e.what());
    }
  }
#else
  (void)g;
  (void)keep_debug_text;
  (void)debug_files;
#endif
}

}  // namespace kiln::compile_detail
