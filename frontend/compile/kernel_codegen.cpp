#include "kiln/frontend/compile/kernel_codegen.h"

#include <fmt/format.h>

#include <iostream>
#include <mutex>
#include <set>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/base/profiler.h"
#include "kiln/base/warning.h"
#include "kiln/codegen/cuda/cuda_backend.h"
#include "kiln/config.h"
#include "kiln/kernel_ir/kernel_ir.h"
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
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu);
    first = warned.insert(k.str()).second;
  }
  if (first && !log_topic_enabled("fallbacks")) KILN_WARN("{}", line);
}

}  // namespace

Backend resolve_backend(Backend requested, bool any_cuda_input) {
  if (requested == Backend::Auto) {
    const std::string& env = options().backend;
    if (env == "interpreter") return Backend::Interpreter;
    if (env == "llvm") requested = Backend::LLVM;
    if (env == "cuda") requested = Backend::CUDA;
    KILN_CHECK(env == "auto" || env == "llvm" || env == "cuda" || env.empty(),
               "KILN_BACKEND={} is not a backend; use auto, interpreter, llvm or cuda", env);
    if (requested == Backend::Auto && any_cuda_input && KILN_WITH_CUDA) return Backend::CUDA;
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
      KILN_CHECK(KILN_WITH_CUDA,
                 "compile: Backend::CUDA needs a Kiln built with KILN_WITH_CUDA=ON (the CUDA "
                 "toolkit in /usr/local/cuda); use Backend::Interpreter, Backend::LLVM or "
                 "Backend::Auto");
      return Backend::CUDA;
    case Backend::Auto:
      break;
  }
  return Backend::Interpreter;
}

namespace {

// The CUDA device a fusion group's outputs live on, or -1 for a host group.
int cuda_device_of(const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (v->type().device.is_cuda()) return v->type().device.index;
  return -1;
}

void compile_cuda_group(ir::Node& n, int device, bool keep_debug_text,
                        std::vector<std::pair<std::string, std::string>>* debug_files) {
  const kir::Kernel& k = *n.fusion_group().kernel;
  profiler::RecordScope scope(profiler::ScopeKind::Compile, "codegen " + k.name, "cuda");
  codegen::cuda::CudaCompileOptions o;
  o.keep_debug_text = keep_debug_text;
  try {
    std::shared_ptr<const codegen::cuda::CudaKernel> compiled =
        codegen::cuda::cuda_compile(k, device, o);
    n.fusion_group().compiled = compiled;
    if (debug_files != nullptr) {
      for (const auto& f : compiled->binary().debug_files)
        debug_files->push_back(f);
    }
  } catch (const std::exception& e) {
    KILN_ERROR(
        "compile: fusion group {} on cuda:{} failed to compile, and a CUDA group has no "
        "interpreter to fall back to: {}",
        k.name, device, e.what());
  }
}

void compile_llvm_group(ir::Node& n, bool keep_debug_text,
                        std::vector<std::pair<std::string, std::string>>* debug_files) {
#if KILN_WITH_LLVM
  const kir::Kernel& k = *n.fusion_group().kernel;
  codegen::LlvmCompileOptions o;
  o.keep_debug_text = keep_debug_text;
  profiler::RecordScope scope(profiler::ScopeKind::Compile, "codegen " + k.name, "llvm");
  try {
    std::shared_ptr<const codegen::LlvmKernel> compiled = codegen::llvm_compile(k, o);
    n.fusion_group().compiled = compiled;
    if (debug_files != nullptr) {
      for (const auto& f : compiled->debug_files)
        debug_files->push_back(f);
    }
  } catch (const std::exception& e) {
    report_fallback(k, e.what());
  }
#else
  (void)n;
  (void)keep_debug_text;
  (void)debug_files;
#endif
}

}  // namespace

void compile_kernels(ir::Graph& g, Backend backend, bool keep_debug_text,
                     std::vector<std::pair<std::string, std::string>>* debug_files) {
  if (backend != Backend::LLVM && backend != Backend::CUDA) return;
  for (ir::Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup || !n->fusion_group().kernel) continue;
    int device = cuda_device_of(*n);
    if (device >= 0) {
      KILN_CHECK(backend == Backend::CUDA,
                 "compile: fusion group {} computes on cuda:{}, which Backend::{} cannot run; "
                 "use Backend::CUDA or Backend::Auto",
                 n->fusion_group().kernel->name, device, backend_name(backend));
      compile_cuda_group(*n, device, keep_debug_text, debug_files);
    } else {
      compile_llvm_group(*n, keep_debug_text, debug_files);
    }
  }
}

}  // namespace kiln::compile_detail
