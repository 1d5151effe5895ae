// The LLVM backend against the kernel-IR interpreter (the reference executor) and closed-form
// references: generated code, vectorization, parallel loops, caches and the failure hook.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "codegen/kir_test_util.h"
#include "kiln/config.h"

#if KILN_WITH_LLVM
#include "kiln/base/pointwise_math.h"
#include "kiln/codegen/disk_cache.h"
#include "kiln/codegen/llvm/llvm_backend.h"

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
  kir_test::llvm_run_tensors(*cg::llvm_compile(k, o), k, args);
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
  kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{x, out});
  std::vector<float> got = out.to_vector<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
  ASSERT_EQ(compiled->debug_files.size(), 3u);
  EXPECT_EQ(compiled->debug_files[1].first, "gelu_tanh.opt.ll");
  EXPECT_NE(compiled->debug_files[1].second.find("x float>"), std::string::npos)
      << compiled->debug_files[1].second;
}

// Note [Reduced-range LLVM loops]: sin and cos loops vectorize, and where an input lies beyond the
// polynomial's range (or is inf or NaN) the loop runs again with libm's values, so that both give
// the interpreter's bits.
TEST(LlvmBackend, SinAndCosAreVectorizedAndRerunWithLibmBeyondTheirRange) {
  const int64_t n = 1003;
  for (bool cosine : {false, true}) {
    kir::Kernel k =
        pointwise_kernel(cosine ? "cos_plus" : "sin_plus", {kiln::kFloat32, kiln::kFloat32},
                         kiln::kFloat32, kiln::kFloat32, n, [cosine](std::span<const Val> a) {
                           return (cosine ? m::cos_(a[0]) : m::sin_(a[0])) + a[1];
                         });
    cg::LlvmCompileOptions o = no_disk();
    o.keep_debug_text = true;
    auto compiled = cg::llvm_compile(k, o);
    const std::string& ir = compiled->debug_files[1].second;
    EXPECT_NE(ir.find("x float>"), std::string::npos) << ir;
    // The per-element branch to libm of the second run (llvm_math.h's kSinfSymbol, kCosfSymbol).
    EXPECT_NE(ir.find(cosine ? "kiln_llvm_cosf" : "kiln_llvm_sinf"), std::string::npos) << ir;
    std::vector<float> within = ramp(n, -100.f, 100.f);
    std::vector<float> beyond = within;
    beyond[3] = 1e6f;
    beyond[500] = std::numeric_limits<float>::quiet_NaN();
    beyond[1001] = -std::numeric_limits<float>::infinity();
    beyond[1002] = std::nextafter(kiln::math::kSinCosReducedLimit, 1e9f);
    for (const std::vector<float>* xs : {&within, &beyond}) {
      Tensor x = kiln::from_vector(*xs, {n});
      Tensor y = kiln::from_vector(ramp(n, -1.f, 1.f), {n});
      std::vector<float> want = run_pointwise(k, {x, y}, kiln::kFloat32).to_vector<float>();
      Tensor out = kiln::empty({n});
      kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{x, y, out});
      std::vector<float> got = out.to_vector<float>();
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << (cosine ? "cos" : "sin") << "(" << (*xs)[i] << ") at " << i;
    }
  }
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

// Note [Streaming stores]: an output of 32 MiB is written with non-temporal stores when its
// address (and the thread's range) is aligned, and with plain ones otherwise; the values are the
// same either way.
TEST(LlvmBackend, LargeOutputsStreamWhenAlignedAndEqualAPlainLoopEitherWay) {
  const int64_t n = (int64_t{1} << 23) + 5;  // 32 MiB and a tail
  kir::Kernel k =
      pointwise_kernel("axpb", {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                       [](std::span<const Val> a) { return a[0] * Val(2.0) + Val(1.0); });
  cg::LlvmCompileOptions o = no_disk();
  o.keep_debug_text = true;
  auto compiled = cg::llvm_compile(k, o);
#if defined(__x86_64__)
  EXPECT_NE(compiled->debug_files.at(2).second.find("movntps"), std::string::npos)
      << "no non-temporal store in the assembly";
#endif
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.37f - 100.0f;
  Tensor in = kiln::from_vector(x, {n});
  Tensor aligned = kiln::empty({n});
  Tensor shifted = kiln::empty({n + 1}).slice(0, 1, n + 1);  // 4 bytes past a 64-byte boundary
  ASSERT_EQ(reinterpret_cast<uintptr_t>(aligned.raw_data()) % 64, 0u);
  ASSERT_NE(reinterpret_cast<uintptr_t>(shifted.raw_data()) % 64, 0u);
  for (const Tensor& out : {aligned, shifted}) {
    kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{in, out});
    std::vector<float> got = out.to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[static_cast<size_t>(i)], x[static_cast<size_t>(i)] * 2.0f + 1.0f) << "at " << i;
  }
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

// Files that pass the cache's checksum but are not the kernel's object (garbage stored under a
// valid header, another kernel's object) and a FIFO under the kernel's name: each is detected
// before anything runs, evicted, and replaced by a fresh compile, which the next call loads.
TEST(LlvmBackend, DiskCacheRejectsWhatIsNotTheKernelsObject) {
  fs::path root = fs::temp_directory_path() / ("kiln_llvm_cache_bad_" + std::to_string(::getpid()));
  fs::remove_all(root);
  cg::LlvmCompileOptions o;
  o.memory_cache = false;
  o.cache_dir = root.string();
  kir::Kernel k = scaled_exp_kernel(302), other = scaled_exp_kernel(303);
  std::string key = cg::llvm_compile(k, o)->key();
  std::string other_key = cg::llvm_compile(other, o)->key();
  cg::DiskCache disk((root / "llvm").string());
  fs::path file = disk.path(key);
  std::string good = disk.load(key).payload, other_object = disk.load(other_key).payload;
  ASSERT_FALSE(good.empty());

  auto expect_recovered = [&](const char* what) {
    cg::LlvmCacheStats before = cg::llvm_cache_stats();
    expect_scaled_exp(k, o);
    cg::LlvmCacheStats after = cg::llvm_cache_stats();
    EXPECT_EQ(after.disk_corrupt, before.disk_corrupt + 1) << what;
    EXPECT_EQ(after.compiles, before.compiles + 1) << what;
    EXPECT_EQ(disk.load(key).payload, good) << what << ": the file was not replaced";
    expect_scaled_exp(k, o);  // and now a plain hit
    EXPECT_EQ(cg::llvm_cache_stats().disk_hits, after.disk_hits + 1) << what;
  };
  ASSERT_EQ(disk.store(key, std::string(4096, '\xcc')), "");  // int3 bytes, valid checksum
  expect_recovered("garbage under a valid header");
  ASSERT_EQ(disk.store(key, other_object), "");
  expect_recovered("another kernel's object");
  fs::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  expect_recovered("a FIFO");  // must not block on open
  EXPECT_TRUE(fs::is_regular_file(file));
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
  EXPECT_THROW(kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{t, t}), kiln::Error);
  EXPECT_THROW(kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{t, kiln::ones({8})}),
               kiln::Error);
}

// y[r, c] = x[r, c] - max(x[r, :]) and s[r] = sum(x[r, :]) in f64, over R rows of C: a max walk,
// a sum walk and a store walk per row of a parallel loop, like a lowered softmax.
kir::Kernel row_walks_kernel(int64_t R, int64_t C) {
  using namespace kir_test;
  using kir::LoopKind;
  using kir::ReduceOp;
  kir::Kernel k;
  k.name = "row_walks";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat32, false, R * C);
  kir::BufferId y = b.buffer("y", kiln::kFloat32, true, R * C);
  kir::BufferId sum = b.buffer("s", kiln::kFloat64, true, R);
  kir::VarId r = b.var("r", kiln::kInt64), c0 = b.var("c0", kiln::kInt64);
  kir::VarId c1 = b.var("c1", kiln::kInt64), c2 = b.var("c2", kiln::kInt64);
  kir::VarId mx = b.var("mx", kiln::kFloat32), acc = b.var("acc", kiln::kFloat64);
  auto at = [&](kir::VarId c) { return add(b, mul(b, b.var_ref(r), C), b.var_ref(c)); };
  k.body.push_back(
      loop(r, R,
           {accumulator(mx, ReduceOp::Max),
            loop(c0, C, {accumulate(mx, ReduceOp::Max, b.load(x, at(c0)))}, LoopKind::Vector),
            accumulator(acc, ReduceOp::Sum),
            loop(c1, C, {accumulate(acc, ReduceOp::Sum, b.cast(b.load(x, at(c1)), kiln::kFloat64))},
                 LoopKind::Vector),
            store(sum, b.var_ref(r), b.var_ref(acc)),
            loop(c2, C,
                 {store(y, at(c2), b.binary(kir::BinaryOp::Sub, b.load(x, at(c2)), b.var_ref(mx)))},
                 LoopKind::Vector)},
           LoopKind::Parallel));
  return k;
}

// The optimized IR of a row kernel: the second walk prefetches the next row (Note [Row
// prefetch]), the max reduces with maxnum (Note [NaN flags]), the f32 data summed in f64 runs
// a full register of f32 lanes, and no 1024-trip loop is unrolled away. The results match the
// interpreter: y bit for bit, the f64 sum within its reassociation.
TEST(LlvmBackend, RowKernelsPrefetchTheNextRowAndKeepFullVectors) {
  const int64_t R = 37, C = 1024;
  kir::Kernel k = row_walks_kernel(R, C);
  cg::LlvmCompileOptions o = no_disk();
  o.keep_debug_text = true;
  auto compiled = cg::llvm_compile(k, o);
  const std::string& opt = compiled->debug_files[1].second;
  EXPECT_NE(opt.find("@llvm.prefetch"), std::string::npos) << opt;
  EXPECT_NE(opt.find("@llvm.maxnum.v"), std::string::npos) << opt;
  EXPECT_EQ(opt.find("@llvm.maximum"), std::string::npos) << opt;
  bool avx512 = cg::llvm_host_description().find("+avx512f") != std::string::npos;
  std::string lanes = avx512 ? "<16 x float>" : "<8 x float>";
  EXPECT_NE(opt.find("fpext " + lanes), std::string::npos) << lanes << "\n" << opt;

  std::vector<float> xs = ramp(R * C, -3.f, 5.f);
  xs[static_cast<size_t>(5 * C + 700)] = std::numeric_limits<float>::quiet_NaN();  // row 5
  Tensor x = kiln::from_vector(xs, {R * C});
  Tensor y_ref = kiln::empty({R * C}),
         s_ref = kiln::empty({R}, kiln::TensorOptions().dtype(kiln::kFloat64));
  kir::run_kernel(k, std::vector<Tensor>{x, y_ref, s_ref});
  Tensor y = kiln::empty({R * C}),
         s = kiln::empty({R}, kiln::TensorOptions().dtype(kiln::kFloat64));
  kir_test::llvm_run_tensors(*compiled, k, std::vector<Tensor>{x, y, s});
  std::vector<float> got = y.to_vector<float>(), want = y_ref.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    if (i / C == 5) {
      ASSERT_TRUE(std::isnan(got[i])) << "at " << i;  // x - NaN
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
  }
  std::vector<double> sg = s.to_vector<double>(), sw = s_ref.to_vector<double>();
  for (int64_t r = 0; r < R; ++r) {
    if (r == 5) continue;
    EXPECT_NEAR(sg[static_cast<size_t>(r)], sw[static_cast<size_t>(r)],
                1e-12 * static_cast<double>(C) * 5)
        << r;
  }
}

// A second process finds the object the first one wrote and links it without generating code.
// The child is forked before this process compiles the kernel, so this process's memory cache
// cannot serve it.
TEST(LlvmBackend, DiskCacheServesASecondProcess) {
  namespace fs = std::filesystem;
  fs::path root =
      fs::temp_directory_path() / ("kiln_llvm_second_process_" + std::to_string(getpid()));
  fs::remove_all(root);
  cg::LlvmCompileOptions o;
  o.cache_dir = root.string();
  kir::Kernel k = scaled_exp_kernel(77);
  k.name = "second_process";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The first process: compile (a miss: code generation, then the file is written).
    bool ok = true;
    try {
      int64_t compiles = cg::llvm_cache_stats().compiles;
      cg::llvm_compile(k, o);
      ok = cg::llvm_cache_stats().compiles == compiles + 1;
    } catch (...) {
      ok = false;
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  cg::LlvmCacheStats before = cg::llvm_cache_stats();
  expect_scaled_exp(k, o);
  cg::LlvmCacheStats after = cg::llvm_cache_stats();
  EXPECT_EQ(after.disk_hits, before.disk_hits + 1);
  EXPECT_EQ(after.compiles, before.compiles);  // no code generation in this process
  fs::remove_all(root);
}

}  // namespace

#endif  // KILN_WITH_LLVM
