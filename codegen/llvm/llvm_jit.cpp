// The JIT behind llvm_backend.h: one ORC LLJIT per process, the O3 pipeline, object emission,
// and the memory and disk caches.
#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/xxhash.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/base/thread_pool.h"
#include "kiln/codegen/disk_cache.h"
#include "kiln/codegen/llvm/llvm_backend.h"
#include "kiln/codegen/llvm/llvm_emitter.h"
#include "kiln/codegen/llvm/llvm_math.h"
#include "kiln/codegen/llvm/llvm_streaming_stores.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"

// ---- the runtime entry points generated code calls (Note [LLVM kernel ABI]) ----
extern "C" {
static void kiln_llvm_parallel_for(void (*body)(void**, int64_t, int64_t), void** args,
                                   int64_t extent, int64_t grain) {
  if (extent <= 0) return;
  if (extent <= grain || kiln::get_num_threads() <= 1 || kiln::in_parallel_region()) {
    body(args, 0, extent);
    return;
  }
  kiln::parallel_for(0, extent, grain, [&](int64_t b, int64_t e) { body(args, b, e); });
}
static int32_t kiln_llvm_ipow_i32(int32_t b, int32_t e) {
  return kiln::math::pow(b, e);
}
static int64_t kiln_llvm_ipow_i64(int64_t b, int64_t e) {
  return kiln::math::pow(b, e);
}
static float kiln_llvm_sinf(float x) {
  return std::sin(x);
}
static float kiln_llvm_cosf(float x) {
  return std::cos(x);
}
}

namespace kiln::codegen {
namespace {

// Bump when the emitter or pipeline changes what a kernel compiles to: it is part of every key,
// so stale cache files are never loaded.
constexpr const char* kCodegenVersion = "kiln-llvm-12";

std::string llvm_error(llvm::Error e) {
  return llvm::toString(std::move(e));
}
template <class T>
T check(llvm::Expected<T> v, std::string_view what) {
  if (!v) KILN_ERROR("llvm backend: {}: {}", what, llvm_error(v.takeError()));
  if constexpr (std::is_reference_v<T>) {
    return *v;
  } else {
    return std::move(*v);
  }
}
void check(llvm::Error e, std::string_view what) {
  if (e) KILN_ERROR("llvm backend: {}: {}", what, llvm_error(std::move(e)));
}

// Note [Vector math]
// exp, expm1, exp2, log, log1p, tanh and erf (and sigmoid and gelu_tanh, built on them),
// gelu_exact and pow, in float32 are the polynomial templates of base/pointwise_math.h, emitted
// as plain vectorizable IR (llvm_math.h), so compiled code and the eager kernels compute them
// identically. sin and cos are too, with a branch to libm beyond their polynomial's range
// (Note [sin and cos by one polynomial]); a loop over them first runs the polynomial alone,
// vectorized, and again with the branch only when an input was beyond that range (Note
// [Reduced-range LLVM loops] in llvm_emitter.cpp). glibc's
// libmvec was the alternative (through the vectorizer's vector-library mapping), but its AVX2 logf
// is 3 ulp from libm's logf at x = 1.24, outside the 2 ulp that
// tests/codegen/llvm_vector_math_test.cpp holds every backend to (gelu_exact it holds to the
// interpreter bit for bit). float64 math stays scalar libm, as the eager kernels call it.

class Jit {
 public:
  static Jit& get() {
    // Never destroyed: kernels may run until the process exits.
    static Jit* jit = new Jit();
    return *jit;
  }

  std::shared_ptr<const LlvmKernel> compile(const kir::Kernel& k, const LlvmCompileOptions& o);
  LlvmCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void clear_memory_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    memory_.clear();
  }
  std::string inject(std::string pattern) {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(pattern, inject_);
    return pattern;
  }
  std::string host() const { return fmt::format("{} ({})", cpu_, features_); }

 private:
  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    cpu_ = jtmb.getCPU();
    features_ = jtmb.getFeatures().getString();
    auto has = [&](std::string_view f) {
      return ("," + features_ + ",").find(fmt::format(",+{},", f)) != std::string::npos;
    };
    vector_bits_ = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    tm_ = check(jtmb.createTargetMachine(), "creating the target machine");
    jit_ = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
                 "creating the ORC LLJIT");
    // The runtime entry points generated code calls; libm comes from the process's symbols.
    runtime_ = &check(jit_->createJITDylib("kiln_runtime"), "creating the runtime JITDylib");
    auto& es = jit_->getExecutionSession();
    auto sym = [&](const char* name, auto* fn) {
      return std::pair{es.intern(name),
                       llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(fn),
                                                    llvm::JITSymbolFlags::Exported)};
    };
    llvm::orc::SymbolMap runtime_symbols;
    runtime_symbols.insert(sym(llvm_backend::kParallelForSymbol, &kiln_llvm_parallel_for));
    runtime_symbols.insert(sym(llvm_backend::kIpow32Symbol, &kiln_llvm_ipow_i32));
    runtime_symbols.insert(sym(llvm_backend::kIpow64Symbol, &kiln_llvm_ipow_i64));
    runtime_symbols.insert(sym(llvm_backend::kSinfSymbol, &kiln_llvm_sinf));
    runtime_symbols.insert(sym(llvm_backend::kCosfSymbol, &kiln_llvm_cosf));
    check(runtime_->define(llvm::orc::absoluteSymbols(std::move(runtime_symbols))),
          "defining the runtime symbols");
  }

  std::string key_of(const kir::Kernel& k) const {
    std::string id = fmt::format("{}\n{}\n{}\n{}\n{}", kCodegenVersion, LLVM_VERSION_STRING, cpu_,
                                 features_, k.str());
    llvm::XXH128_hash_t h = llvm::xxh3_128bits(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(id.data()), id.size()));
    return fmt::format("{:016x}{:016x}", h.high64, h.low64);
  }

  struct Generated {
    std::string object;
    std::vector<std::pair<std::string, std::string>> debug_files;
  };
  Generated generate(const kir::Kernel& k, const std::string& symbol, bool keep_text);
  void optimize(llvm::Module& m);
  std::string emit(llvm::Module& m, llvm::CodeGenFileType type);
  LlvmKernel::EntryFn load(const std::string& object, const std::string& symbol,
                           const std::string& key);

  std::mutex mu_;  // one compile at a time: the target machine is not thread-safe
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  llvm::orc::JITDylib* runtime_ = nullptr;
  std::string cpu_, features_;
  unsigned vector_bits_ = 128;
  std::unordered_map<std::string, std::shared_ptr<const LlvmKernel>> memory_;
  LlvmCacheStats stats_;
  std::string inject_;
  int64_t dylibs_ = 0;
};

void Jit::optimize(llvm::Module& m) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopInterleaving = true;
  llvm::PassBuilder pb(tm_.get(), pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string Jit::emit(llvm::Module& m, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm_->addPassesToEmitFile(pm, os, nullptr, type))
    KILN_ERROR("llvm backend: the target machine cannot emit this file type");
  pm.run(m);
  return std::string(out.begin(), out.end());
}

Jit::Generated Jit::generate(const kir::Kernel& k, const std::string& symbol, bool keep_text) {
  Generated g;
  llvm::LLVMContext ctx;
  // LLVM reports through the context: the vectorizer warns when a loop hinted vectorize.enable
  // stays scalar. Those notes go to the debug files and the "kernels" log, never to stderr;
  // errors fail the compile (and the group falls back).
  struct Diagnostics {
    std::string text;
    std::string errors;
  } diags;
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* info, void* context) {
        auto* d = static_cast<Diagnostics*>(context);
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
        (info->getSeverity() == llvm::DS_Error ? d->errors : d->text) += msg + "\n";
      },
      &diags, /*RespectFilters=*/true);
  std::unique_ptr<llvm::Module> m = llvm_backend::emit_kernel(k, symbol, ctx, vector_bits_);
  m->setDataLayout(jit_->getDataLayout());
  m->setTargetTriple(jit_->getTargetTriple().str());
  std::string broken;
  llvm::raw_string_ostream err(broken);
  if (llvm::verifyModule(*m, &err))
    KILN_ERROR("llvm backend: kernel {}: the emitted LLVM IR does not verify: {}", k.name, broken);
  auto text = [](const llvm::Module& mod) {
    std::string s;
    llvm::raw_string_ostream os(s);
    mod.print(os, nullptr);
    return s;
  };
  if (keep_text) g.debug_files.emplace_back(k.name + ".ll", text(*m));
  optimize(*m);
  llvm_backend::mark_streaming_stores(*m);
  if (keep_text) {
    g.debug_files.emplace_back(k.name + ".opt.ll", text(*m));
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*m);
    g.debug_files.emplace_back(k.name + ".s", emit(*copy, llvm::CodeGenFileType::AssemblyFile));
  }
  g.object = emit(*m, llvm::CodeGenFileType::ObjectFile);
  if (!diags.errors.empty()) KILN_ERROR("llvm backend: kernel {}: {}", k.name, diags.errors);
  if (!diags.text.empty()) {
    log_line("kernels", fmt::format("llvm: {}: {}", k.name, diags.text));
    if (keep_text) g.debug_files.emplace_back(k.name + ".remarks.txt", diags.text);
  }
  return g;
}

// Why `object` cannot be the kernel `symbol` for this process, or "" when it can: a disk cache
// file can pass its checksum and still hold something else (written by another tool, or damaged
// before it was summed). Code bytes are not checked; the structure and the entry symbol are.
std::string object_problem(const std::string& object, const std::string& symbol) {
  auto parsed = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, symbol));
  if (!parsed) return "not an object file: " + llvm_error(parsed.takeError());
  const llvm::object::ObjectFile& obj = **parsed;
  if (obj.getArch() != llvm::Triple(llvm::sys::getProcessTriple()).getArch())
    return fmt::format("an object for {}, not this machine",
                       llvm::Triple::getArchTypeName(obj.getArch()).str());
  for (const llvm::object::SymbolRef& sym : obj.symbols()) {
    llvm::Expected<llvm::StringRef> name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name != symbol) continue;
    llvm::Expected<llvm::object::SymbolRef::Type> type = sym.getType();
    if (type && *type == llvm::object::SymbolRef::ST_Function) return "";
    if (!type) llvm::consumeError(type.takeError());
  }
  return fmt::format("the object does not define the function {}", symbol);
}

// Each object goes into its own JITDylib, so that the same kernel can be loaded again (a test
// bypassing the memory cache) without a duplicate-symbol error.
LlvmKernel::EntryFn Jit::load(const std::string& object, const std::string& symbol,
                              const std::string& key) {
  std::string name = fmt::format("kiln_{}_{}", key, dylibs_++);
  llvm::orc::JITDylib& jd = check(jit_->createJITDylib(name), "creating a JITDylib");
  jd.addToLinkOrder(*runtime_);
  check(jit_->addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(object, name)),
        "adding the object to the JIT");
  llvm::orc::ExecutorAddr addr = check(jit_->lookup(jd, symbol), "linking the kernel");
  return addr.toPtr<LlvmKernel::EntryFn>();
}

std::shared_ptr<const LlvmKernel> Jit::compile(const kir::Kernel& k, const LlvmCompileOptions& o) {
  kir::verify(k);
  std::string key = key_of(k);
  std::lock_guard<std::mutex> lock(mu_);
  if (!inject_.empty() && k.name.find(inject_) != std::string::npos)
    KILN_ERROR("llvm backend: kernel {}: injected failure (llvm_inject_failure(\"{}\"))", k.name,
               inject_);
  if (o.memory_cache && !o.keep_debug_text) {
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  std::string symbol = "kiln_" + key;
  std::string root = o.cache_dir.empty() ? options().cache_dir : o.cache_dir;
  DiskCache disk((std::filesystem::path(root) / "llvm").string());
  std::string object;
  std::vector<std::pair<std::string, std::string>> debug_files;
  LlvmKernel::EntryFn entry = nullptr;
  if (o.disk_cache && !o.keep_debug_text) {
    DiskCache::Lookup found = disk.load(key);
    if (found.status == DiskCache::Status::Hit) {
      // A file that passed its checksum but is not this kernel's object, or fails to link, is
      // evicted and recompiled, so the next run does not meet it again.
      std::string problem = object_problem(found.payload, symbol);
      if (problem.empty()) {
        try {
          entry = load(found.payload, symbol, key);
        } catch (const Error& e) {
          problem = e.what();
        }
      }
      if (problem.empty()) {
        ++stats_.disk_hits;
        object = std::move(found.payload);
        log_line("kernels",
                 fmt::format("llvm: {} loaded from the disk cache ({})", k.name, disk.path(key)));
      } else {
        found.status = DiskCache::Status::Corrupt;
        found.problem = disk.path(key) + ": " + problem;
        disk.evict(key);
      }
    }
    if (found.status == DiskCache::Status::Corrupt) {
      ++stats_.disk_corrupt;
      log_line("kernels",
               fmt::format("llvm: damaged cache file, recompiling {}: {}", k.name, found.problem));
    }
  }
  if (object.empty()) {
    auto start = std::chrono::steady_clock::now();
    Generated g = generate(k, symbol, o.keep_debug_text);
    ++stats_.compiles;
    object = std::move(g.object);
    debug_files = std::move(g.debug_files);
    if (o.disk_cache) {
      std::string problem = disk.store(key, object);
      if (!problem.empty()) log_line("kernels", "llvm: not cached on disk: " + problem);
    }
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
    log_line("kernels", fmt::format("llvm: compiled {} in {:.1f} ms ({} bytes of object code)",
                                    k.name, ms.count(), object.size()));
  }
  if (entry == nullptr) entry = load(object, symbol, key);
  auto kernel = std::make_shared<LlvmKernel>(std::make_shared<const kir::Kernel>(k), entry, key);
  kernel->debug_files = std::move(debug_files);
  if (o.memory_cache) memory_.emplace(key, kernel);
  return kernel;
}

}  // namespace

void LlvmKernel::launch(std::span<void* const> buffers) const {
  launch(buffers, {});
}

void LlvmKernel::launch(std::span<void* const> buffers, std::span<const int64_t> sizes) const {
  KILN_CHECK(sizes.size() == kernel_->sizes().size(),
             "llvm backend: kernel {}: launched with {} sizes, takes {}", name(), sizes.size(),
             kernel_->sizes().size());
  KILN_CHECK(buffers.size() == kernel_->buffers.size(),
             "llvm backend: kernel {}: launched with {} buffers, takes {}", name(), buffers.size(),
             kernel_->buffers.size());
  int32_t status = 0;
  // The argument block on the stack: launches are the hot path, kernels rarely have more than
  // FusionOptions::max_kernel_args (32) buffers.
  constexpr size_t kOnStack = 64;
  std::array<void*, kOnStack + 2> small{};
  std::vector<void*> large;
  void** args = small.data();
  if (buffers.size() > kOnStack) {
    large.resize(buffers.size() + 2);
    args = large.data();
  }
  std::copy(buffers.begin(), buffers.end(), args);
  args[buffers.size()] = &status;
  args[buffers.size() + 1] = const_cast<int64_t*>(sizes.data());
  fn_(args);
  if (status != 0) {
    auto id = static_cast<kir::ExprId>(status - 1);
    KILN_ERROR(
        "llvm backend: kernel {}: integer division by zero in `{}`", name(),
        id < static_cast<kir::ExprId>(kernel_->exprs.size()) ? kir::expr_str(*kernel_, id) : "?");
  }
}

std::shared_ptr<const LlvmKernel> llvm_compile(const kir::Kernel& kernel,
                                               const LlvmCompileOptions& options) {
  return Jit::get().compile(kernel, options);
}

void llvm_run(const LlvmKernel& compiled, const kir::Kernel& kernel,
              std::span<const kir::BoundBuffer> bound, std::span<const int64_t> sizes) {
  KILN_CHECK(bound.size() == kernel.buffers.size(),
             "llvm backend: kernel {} takes {} buffers, got {}", kernel.name, kernel.buffers.size(),
             bound.size());
  if (!kernel.sizes().empty() || !sizes.empty()) {
    // Note [Size parameters]: the launch's sizes and the bound buffers' extents bound every
    // index, as the interpreter checks them.
    std::vector<int64_t> extents;
    for (size_t i = 0; i < bound.size(); ++i)
      if (kernel.buffers[i].extent == kir::kRuntimeExtent) extents.push_back(bound[i].extent);
    kir::verify(kir::specialize_sizes(kernel, sizes, extents));
  }
  // The generated code assumes its buffers do not alias (noalias): an output sharing storage
  // with any other argument would be read and written in an order the kernel IR does not fix.
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!kernel.buffers[i].output || bound[i].extent == 0) continue;
    for (size_t j = 0; j < bound.size(); ++j) {
      KILN_CHECK(j == i || bound[j].extent == 0 || bound[i].owner == nullptr ||
                     bound[i].owner != bound[j].owner,
                 "llvm backend: kernel {}: output %{} shares storage with argument {} (%{}); "
                 "compiled kernels need outputs that overlap nothing",
                 kernel.name, kernel.buffers[i].name, j, kernel.buffers[j].name);
    }
  }
  std::vector<void*> ptrs;
  for (const kir::BoundBuffer& b : bound)
    ptrs.push_back(b.data);
  compiled.launch(ptrs, sizes);
}

LlvmCacheStats llvm_cache_stats() {
  return Jit::get().stats();
}

void llvm_clear_memory_cache() {
  Jit::get().clear_memory_cache();
}

std::string llvm_inject_failure(std::string pattern) {
  return Jit::get().inject(std::move(pattern));
}

std::string llvm_host_description() {
  return Jit::get().host();
}

}  // namespace kiln::codegen
