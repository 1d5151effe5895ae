// The LLVM CPU backend: kernel IR -> LLVM IR -> O3 for the host CPU -> machine code in an ORC
// LLJIT (Note [LLVM kernel ABI] in llvm_emitter.h). Compiled kernels are cached in memory by the
// content hash of their kernel IR and target, and their objects on disk under
// $KILN_CACHE_DIR/llvm, so a second process skips code generation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/codegen/compiled_kernel.h"
#include "kiln/kernel_ir/interpreter_plan.h"
#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::codegen {

struct LlvmCompileOptions {
  // Keep the LLVM IR before and after optimization and the assembly (LlvmKernel::debug_files);
  // this always runs code generation, whatever the caches hold.
  bool keep_debug_text = false;
  bool memory_cache = true;
  bool disk_cache = true;
  // The cache root; empty: $KILN_CACHE_DIR (default ~/.cache/kiln). Objects go in <root>/llvm.
  std::string cache_dir;
};

class LlvmKernel final : public CompiledKernel {
 public:
  using EntryFn = void (*)(void**);
  LlvmKernel(std::shared_ptr<const kir::Kernel> kernel, EntryFn fn, std::string key)
      : kernel_(std::move(kernel)), fn_(fn), key_(std::move(key)) {}
  std::string_view backend() const override { return "llvm"; }
  // Throws kiln::Error naming the expression when the kernel divided an integer by zero.
  void launch(std::span<void* const> buffers) const override;
  // A kernel with size parameters takes their values (Note [Size parameters]); unchecked: the
  // caller has bounded the indices (llvm_run does).
  void launch(std::span<void* const> buffers, std::span<const int64_t> sizes) const;
  void launch_sized(std::span<void* const> buffers, std::span<const int64_t> sizes) const override {
    launch(buffers, sizes);
  }

  const std::string& name() const { return kernel_->name; }
  const std::string& key() const { return key_; }  // the content hash, hex
  // (file name, text): <name>.ll (as emitted), <name>.opt.ll (after O3) and <name>.s, when
  // compiled with keep_debug_text.
  std::vector<std::pair<std::string, std::string>> debug_files;

 private:
  std::shared_ptr<const kir::Kernel> kernel_;  // its name and, for errors, its expressions
  EntryFn fn_;
  std::string key_;
};

// Compiles `kernel` (verified first). Throws kiln::Error on any failure, for the caller to fall
// back to the kernel-IR interpreter.
std::shared_ptr<const LlvmKernel> llvm_compile(const kir::Kernel& kernel,
                                               const LlvmCompileOptions& options = {});

// Runs a compiled kernel on its bound buffers (kir::bind_arguments in runtime/kernel_args.h
// binds tensors), after checking that no output shares its allocation with another argument.
// A kernel with size parameters takes their values in `sizes`; the launch then verifies every
// index against them and the buffers' extents, as the interpreter does.
void llvm_run(const LlvmKernel& compiled, const kir::Kernel& kernel,
              std::span<const kir::BoundBuffer> bound, std::span<const int64_t> sizes = {});

struct LlvmCacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t disk_corrupt = 0;  // cache files found damaged, removed and recompiled
  int64_t compiles = 0;      // runs of code generation (LLVM IR, O3, object emission)
};
LlvmCacheStats llvm_cache_stats();

// Forgets the in-memory cache (kernels already handed out stay valid), so that the next compile
// of a kernel reads the disk cache or generates code: what a new process pays. For benchmarks
// of compile time.
void llvm_clear_memory_cache();

// For tests of the fallback path: every later llvm_compile of a kernel whose name contains
// `pattern` throws as an LLVM error would ("" turns injection off). Returns the previous pattern.
std::string llvm_inject_failure(std::string pattern);

// The host the JIT targets, e.g. "znver3 (+avx2,+fma,...)".
std::string llvm_host_description();

}  // namespace kiln::codegen
