// The LLVM backend against the kernel-IR interpreter (the reference executor) and closed-form
// references: generated code, vectorization, parallel loops, caches and the failure hook.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codegen/kir_test_util.h"
#include "kiln/config.h"

#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#include "kiln/runtime/pointwise_math.h"

namespace {

using kiln::Tensor;
using kiln::kir::Val;
using kir_test::pointwise_kernel;
using kir_test::run_pointwise;
namespace kir = kiln::kir;
namespace cg = kiln::codegen;
namespace m = kiln::math;

cg::LlvmCompileOptions no_disk() {
  cg::LlvmCompileOptions o;
  o.disk_cache = false;
  return o;
}

Tensor run_llvm(const kir::Kernel& k, const std::vector<Tensor>& ins, kiln::DType out_dtype,
                const cg::LlvmCompileOptions& o = no_disk()) {
  int64_t n = k.buffers.back().extent;
  Tensor out = kiln::empty({n}, kiln::TensorOptions().dtype(out_dtype));
  std::vector<Tensor> args = ins;
  args.push_back(out);
  cg::llvm_run(*cg::llvm_compile(k, o), k, args);
  return out;
}

std::vector<float> ramp(int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return v;
}

TEST(LlvmBackend, GeluTanhIsVectorizedAndMatchesTheInterpreterBitForBit) {
  const int64_t n = 1003;  // not a multiple of the vector width: the tail runs too
  kir::Kernel k = pointwise_kernel("gelu_tanh", {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                                   [](std::span<const Val> a) { return m::gelu_tanh(a[0]); });
  Tensor x = kiln::from_vector(ramp(n, -12.f, 12.f), {n});
  std::vector<float> want = run_pointwise(k, {x}, kiln::kFloat32).to_vector<float>();
  cg::LlvmCompileOptions o = no_disk();
  o.keep_debug_text = true;
  auto compiled = cg::llvm_compile(k, o);
  Tensor out = kiln::empty({n});
  cg::llvm_run(*compiled, k, std::vector<Tensor>{x, out});
  std::vector<float> got = out.to_vector<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
  ASSERT_EQ(compiled->debug_files.size(), 3u);
  EXPECT_EQ(compiled->debug_files[1].first, "gelu_tanh.opt.ll");
  EXPECT_NE(compiled->debug_files[1].second.find("x float>"), std::string::npos)
      << compiled->debug_files[1].second;
}

}  // namespace

namespace {

namespace fs = std::filesystem;

kir::Kernel scaled_exp_kernel(int64_t n) {
  return pointwise_kernel("scaled_exp", {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                          [](std::span<const Val> a) { return m::exp_(a[0]) * Val(2.5); });
}

void expect_scaled_exp(const kir::Kernel& k, const cg::LlvmCompileOptions& o) {
  int64_t n = k.buffers.back().extent;
  Tensor x = kiln::from_vector(ramp(n, -3.f, 3.f), {n});
  std::vector<float> want = run_pointwise(k, {x}, kiln::kFloat32).to_vector<float>();
  std::vector<float> got = run_llvm(k, {x}, kiln::kFloat32, o).to_vector<float>();
  EXPECT_EQ(got, want);
}

TEST(LlvmBackend, MemoryCacheReturnsTheSameKernel) {
  kir::Kernel k = scaled_exp_kernel(77);
  auto a = cg::llvm_compile(k, no_disk());
  int64_t hits = cg::llvm_cache_stats().memory_hits;
  auto b = cg::llvm_compile(k, no_disk());
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(cg::llvm_cache_stats().memory_hits, hits + 1);
  // A different kernel is a different entry.
  EXPECT_NE(cg::llvm_compile(scaled_exp_kernel(78), no_disk())->key(), a->key());
}

// The disk cache as a new process sees it: memory_cache off, so every compile goes to disk.
TEST(LlvmBackend, DiskCacheMissHitAndCorruption) {
  fs::path root = fs::temp_directory_path() / ("kiln_llvm_cache_" + std::to_string(::getpid()));
  fs::remove_all(root);
  cg::LlvmCompileOptions o;
  o.memory_cache = false;
  o.cache_dir = root.string();
  kir::Kernel k = scaled_exp_kernel(301);

  cg::LlvmCacheStats s0 = cg::llvm_cache_stats();
  std::string key = cg::llvm_compile(k, o)->key();  // miss: code generation, then stored
  cg::LlvmCacheStats s1 = cg::llvm_cache_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_EQ(s1.disk_hits, s0.disk_hits);
  fs::path file = root / "llvm" / (key + ".bin");
  ASSERT_TRUE(fs::exists(file));
  auto size = fs::file_size(file);

  expect_scaled_exp(k, o);  // hit: loaded, no code generation
  cg::LlvmCacheStats s2 = cg::llvm_cache_stats();
  EXPECT_EQ(s2.compiles, s1.compiles);
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);

  fs::resize_file(file, size / 2);  // truncated: detected, removed, recompiled, stored again
  expect_scaled_exp(k, o);
  cg::LlvmCacheStats s3 = cg::llvm_cache_stats();
  EXPECT_EQ(s3.disk_corrupt, s2.disk_corrupt + 1);
  EXPECT_EQ(s3.compiles, s2.compiles + 1);
  EXPECT_EQ(fs::file_size(file), size);

  {  // one flipped byte in the object code: the checksum catches it
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 100));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(size - 100));
    f.write(&c, 1);
  }
  expect_scaled_exp(k, o);
  cg::LlvmCacheStats s4 = cg::llvm_cache_stats();
  EXPECT_EQ(s4.disk_corrupt, s3.disk_corrupt + 1);
  EXPECT_EQ(s4.compiles, s3.compiles + 1);

  {  // another file's content under this key: the header's key does not match
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << "KILNCACHE1\n0123456789abcdef0123456789abcdef\n";
  }
  expect_scaled_exp(k, o);
  EXPECT_EQ(cg::llvm_cache_stats().disk_corrupt, s4.disk_corrupt + 1);
  expect_scaled_exp(k, o);  // and the rewritten file is a hit again
  EXPECT_EQ(cg::llvm_cache_stats().disk_hits, s4.disk_hits + 1);
  fs::remove_all(root);
}

TEST(LlvmBackend, InjectedFailureThrowsAndCanBeTurnedOff) {
  kir::Kernel k = scaled_exp_kernel(5);
  k.name = "inject_me";
  std::string previous = cg::llvm_inject_failure("inject_");
  EXPECT_THROW(cg::llvm_compile(k, no_disk()), kiln::Error);
  cg::llvm_inject_failure(previous);
  expect_scaled_exp(k, no_disk());
}

TEST(LlvmBackend, OutputsMayNotAliasOtherArguments) {
  kir::Kernel k = scaled_exp_kernel(16);
  Tensor t = kiln::ones({16});
  auto compiled = cg::llvm_compile(k, no_disk());
  EXPECT_THROW(cg::llvm_run(*compiled, k, std::vector<Tensor>{t, t}), kiln::Error);
  EXPECT_THROW(cg::llvm_run(*compiled, k, std::vector<Tensor>{t, kiln::ones({8})}), kiln::Error);
}

}  // namespace

#endif  // KILN_WITH_LLVM
