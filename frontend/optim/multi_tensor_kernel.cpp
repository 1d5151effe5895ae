#include "kiln/frontend/optim/multi_tensor_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/base/profiler.h"
#include "kiln/base/thread_pool.h"
#include "kiln/base/warning.h"
#include "kiln/config.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace kiln::optim::detail {

kir::Kernel multi_tensor_kernel_ir(const std::string& name, DType dtype, int states, int scalars,
                                   const KernelBody& body) {
  kir::Kernel k;
  k.name = fmt::format("{}_{}", name, dtype_short_name(dtype));
  kir::Builder b(k);
  std::vector<kir::BufferId> tensors;
  tensors.push_back(b.buffer("param", dtype, true, kir::kRuntimeExtent));
  tensors.push_back(b.buffer("grad", dtype, false, kir::kRuntimeExtent));
  for (int s = 0; s < states; ++s)
    tensors.push_back(b.buffer(fmt::format("state{}", s), dtype, true, kir::kRuntimeExtent));
  kir::BufferId table = b.buffer("scalars", dtype, false, scalars);
  kir::VarId n = b.size("n");
  kir::VarId i = b.var("i", kInt64);

  DType compute = kir::compute_dtype(dtype);
  kir::MathScope scope(b, compute);
  std::vector<kir::Val> values, row;
  for (kir::BufferId t : tensors)
    values.push_back(cast(kir::Val(b.load(t, b.var_ref(i))), compute));
  for (int s = 0; s < scalars; ++s)
    row.push_back(cast(kir::Val(b.load(table, b.iconstant(s))), compute));
  std::vector<kir::Val> results = body(values, row);
  KILN_CHECK(results.size() == static_cast<size_t>(states) + 1,
             "multi-tensor kernel {}: the update gave {} values for {} tensors", k.name,
             results.size(), states + 1);

  // Every result is bound before the first store: a store must not change what a later
  // result's loads read (the param is read by the states' updates under weight decay).
  std::vector<kir::Stmt> statements;
  std::vector<kir::VarId> bound;
  for (size_t r = 0; r < results.size(); ++r) {
    bound.push_back(b.var(fmt::format("new{}", r), compute));
    statements.push_back(kir::stmt::let(bound.back(), results[r].id()));
  }
  for (size_t r = 0; r < results.size(); ++r) {
    kir::BufferId target = tensors[r == 0 ? 0 : r + 1];
    statements.push_back(
        kir::stmt::store(target, b.var_ref(i), cast(kir::Val(b.var_ref(bound[r])), dtype).id()));
  }
  k.body.push_back(kir::stmt::sized_loop(i, n, std::move(statements), kir::LoopKind::Vector));
  return k;
}

std::shared_ptr<const MultiTensorKernel> MultiTensorKernel::compile(const std::string& name,
                                                                    DType dtype, int states,
                                                                    int scalars,
                                                                    const KernelBody& body) {
  auto kernel = std::make_shared<const kir::Kernel>(
      multi_tensor_kernel_ir(name, dtype, states, scalars, body));
  // KILN_DEBUG_DIR/optim/ gets the kernel IR and, once compiled, its LLVM IR and assembly.
  const std::string& debug_root = options().debug_dir;
  std::filesystem::path debug_dir =
      debug_root.empty() ? std::filesystem::path() : std::filesystem::path(debug_root) / "optim";
  auto write = [&](const std::string& file, const std::string& text) {
    std::filesystem::create_directories(debug_dir);
    std::ofstream(debug_dir / file) << text;
  };
  if (!debug_root.empty()) write(kernel->name + ".kir", kernel->str());
#if KILN_WITH_LLVM
  profiler::RecordScope scope(profiler::ScopeKind::Compile, "codegen " + kernel->name, "llvm");
  try {
    codegen::LlvmCompileOptions o;
    o.keep_debug_text = !debug_root.empty();
    std::shared_ptr<const codegen::LlvmKernel> compiled = codegen::llvm_compile(*kernel, o);
    for (const auto& [file, text] : compiled->debug_files)
      write(file, text);
    return std::shared_ptr<const MultiTensorKernel>(
        new MultiTensorKernel(kernel, std::move(compiled), dtype));
  } catch (const std::exception& e) {
    static std::mutex mu;
    static std::set<std::string> warned;
    std::string line =
        fmt::format("optimizer kernel {} failed to compile ({}); the step runs as tensor ops",
                    kernel->name, e.what());
    log_line("fallbacks", line);
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu);
      first = warned.insert(kernel->name).second;
    }
    if (first && !log_topic_enabled("fallbacks")) KILN_WARN("{}", line);
    return nullptr;
  }
#else
  return nullptr;
#endif
}

void MultiTensorKernel::run(std::span<const Row> rows) const {
  profiler::RecordScope scope(profiler::ScopeKind::Kernel, kernel_->name, "llvm");
  struct Chunk {
    size_t row;
    int64_t begin, length;
  };
  std::vector<Chunk> chunks;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t begin = 0; begin < rows[r].numel; begin += kChunkElements)
      chunks.push_back({r, begin, std::min(kChunkElements, rows[r].numel - begin)});
  }
  const size_t buffers = kernel_->buffers.size();
  const auto itemsize = static_cast<int64_t>(element_size(dtype_));
  parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t first, int64_t last) {
    std::vector<void*> args(buffers);
    for (int64_t c = first; c < last; ++c) {
      const Chunk& chunk = chunks[static_cast<size_t>(c)];
      const Row& row = rows[chunk.row];
      for (size_t j = 0; j + 1 < buffers; ++j)
        args[j] = static_cast<char*>(row.buffers[j]) + chunk.begin * itemsize;
      args[buffers - 1] = const_cast<void*>(row.scalars);
      int64_t n = chunk.length;
      compiled_->launch_sized(args, {&n, 1});
    }
  });
}

}  // namespace kiln::optim::detail
