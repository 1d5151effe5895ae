// The CUDA backend's build and caches (no GPU needed: NVRTC makes cubins for any architecture),
// its launch shapes, Backend::CUDA's resolution, and, on a machine with a CUDA device, compiled
// kernels against the kernel-IR interpreter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kiln/base/cuda/driver.h"
#include "kiln/codegen/cuda/cuda_backend.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#include "kiln/config.h"
#include "kiln/frontend/compile/kernel_codegen.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernel_args.h"
#include "kir_test_util.h"

namespace kiln_test {
namespace {

namespace fs = std::filesystem;
namespace cuda = kiln::codegen::cuda;
using kiln::Tensor;
using kir_test::pointwise_kernel;
using kir_test::ulp_distance;

kiln::kir::Kernel tanh_mul_kernel(int64_t n) {
  return pointwise_kernel(
      "tanh_mul", {kiln::kFloat32, kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
      [](std::span<const kiln::kir::Val> a) { return kiln::kir::tanh(a[0]) * a[1]; });
}

// A fresh cache folder per test, removed afterwards.
class CudaBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
    dir_ = fs::temp_directory_path() /
           ("kiln_cuda_cache_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    options_.cache_dir = dir_.string();
    cuda::cuda_clear_memory_cache();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  cuda::CudaCompileOptions options_;
};

TEST_F(CudaBuild, ChoosesACubinForAKnownArchAndPtxBelowAnUnknownOne) {
  std::vector<int> archs = cuda::nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  for (int arch : {80, 90}) {
    ASSERT_NE(std::find(archs.begin(), archs.end(), arch), archs.end()) << arch;
    cuda::ImageChoice c = cuda::choose_image(arch);
    EXPECT_EQ(c.arch, arch);
    EXPECT_FALSE(c.is_ptx);
  }
  // A device newer than this NVRTC: PTX for the newest architecture it knows, for the driver.
  cuda::ImageChoice newer = cuda::choose_image(archs.back() + 1);
  EXPECT_EQ(newer.arch, archs.back());
  EXPECT_TRUE(newer.is_ptx);
  try {
    cuda::choose_image(archs.front() - 1);
    ADD_FAILURE() << "an architecture below every supported one was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sm_" + std::to_string(archs.front() - 1)),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CudaBuild, BuildsACubinOnceThenHitsMemoryThenDisk) {
  kiln::kir::Kernel k = tanh_mul_kernel(1000);
  cuda::CudaCacheStats s0 = cuda::cuda_cache_stats();
  std::shared_ptr<const cuda::CudaBinary> a = cuda::cuda_build(k, 90, options_);
  EXPECT_EQ(a->arch, 90);
  EXPECT_FALSE(a->is_ptx);
  EXPECT_EQ(a->num_buffers, 3u);  // two inputs and the output: what a launch must pass
  ASSERT_GE(a->image.size(), 4u);
  EXPECT_EQ(a->image.substr(0, 4), std::string("\x7f"
                                               "ELF"))
      << "a cubin is an ELF file";
  ASSERT_EQ(a->source.entries.size(), 1u);
  EXPECT_EQ(a->source.entries[0].mapping, cuda::Mapping::Elementwise);
  EXPECT_EQ(a->source.entries[0].work, 1000);
  cuda::CudaCacheStats s1 = cuda::cuda_cache_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);

  std::shared_ptr<const cuda::CudaBinary> b = cuda::cuda_build(k, 90, options_);
  EXPECT_EQ(b.get(), a.get()) << "the second build is the in-memory binary";
  EXPECT_EQ(cuda::cuda_cache_stats().memory_hits, s1.memory_hits + 1);

  cuda::cuda_clear_memory_cache();  // as a new process
  std::shared_ptr<const cuda::CudaBinary> c = cuda::cuda_build(k, 90, options_);
  cuda::CudaCacheStats s2 = cuda::cuda_cache_stats();
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  EXPECT_EQ(s2.compiles, s1.compiles) << "a disk hit runs no NVRTC";
  EXPECT_EQ(c->image, a->image);
  EXPECT_EQ(c->key, a->key);
  EXPECT_TRUE(fs::exists(dir_ / "cuda"));

  // Another architecture is another key and another compile.
  std::shared_ptr<const cuda::CudaBinary> d = cuda::cuda_build(k, 80, options_);
  EXPECT_NE(d->key, a->key);
  EXPECT_EQ(cuda::cuda_cache_stats().compiles, s2.compiles + 1);
}

TEST_F(CudaBuild, ADamagedCacheFileIsRebuilt) {
  kiln::kir::Kernel k = tanh_mul_kernel(64);
  std::shared_ptr<const cuda::CudaBinary> a = cuda::cuda_build(k, 90, options_);
  fs::path file;
  for (const auto& e : fs::directory_iterator(dir_ / "cuda"))
    file = e.path();
  ASSERT_FALSE(file.empty());
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    f.put('\x55').put('\x66');
  }
  cuda::cuda_clear_memory_cache();
  cuda::CudaCacheStats s0 = cuda::cuda_cache_stats();
  std::shared_ptr<const cuda::CudaBinary> b = cuda::cuda_build(k, 90, options_);
  cuda::CudaCacheStats s1 = cuda::cuda_cache_stats();
  EXPECT_EQ(s1.disk_corrupt, s0.disk_corrupt + 1);
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_EQ(b->image, a->image);
}

TEST_F(CudaBuild, DebugTextHoldsTheSourceAndThePtx) {
  options_.keep_debug_text = true;
  kiln::kir::Kernel k = tanh_mul_kernel(256);
  std::shared_ptr<const cuda::CudaBinary> a = cuda::cuda_build(k, 90, options_);
  ASSERT_EQ(a->debug_files.size(), 2u);
  EXPECT_EQ(a->debug_files[0].first, "tanh_mul.cu");
  EXPECT_EQ(a->debug_files[1].first, "tanh_mul.ptx");
  const std::string& symbol = a->source.entries[0].symbol;
  EXPECT_NE(a->debug_files[0].second.find("__global__"), std::string::npos);
  EXPECT_NE(a->debug_files[0].second.find(symbol), std::string::npos);
  EXPECT_NE(a->debug_files[1].second.find(".entry " + symbol), std::string::npos);
  EXPECT_NE(a->debug_files[1].second.find(".target sm_90"), std::string::npos);
}

TEST(CudaLaunch, GridsFillTheDeviceAndNeverExceedTheWork) {
  cuda::CudaEntry e;
  e.mapping = cuda::Mapping::Elementwise;
  e.block = 256;
  e.grid = 1'000'000;
  // 132 SMs x (2048 / 256) resident blocks.
  EXPECT_EQ(cuda::launch_grid(e, 132), 132 * 8);
  e.grid = 7;
  EXPECT_EQ(cuda::launch_grid(e, 132), 7);
  e.grid = 0;  // no work still launches one block, whose loop runs no iteration
  EXPECT_EQ(cuda::launch_grid(e, 132), 1);
  e.mapping = cuda::Mapping::BlockPerRow;
  e.block = 1024;
  e.grid = 8192;
  EXPECT_EQ(cuda::launch_grid(e, 132), 132 * 2);
  e.mapping = cuda::Mapping::SingleThread;
  e.block = 1;
  EXPECT_EQ(cuda::launch_grid(e, 132), 1);
}

TEST(CudaBackendChoice, AutoPicksCudaForCudaInputsAndCudaNeedsACudaBuild) {
  using kiln::Backend;
  namespace cd = kiln::compile_detail;
  if (!KILN_WITH_CUDA) {
    EXPECT_THROW(cd::resolve_backend(Backend::CUDA), kiln::Error);
    GTEST_SKIP() << "this build has no CUDA backend";
  }
  EXPECT_EQ(cd::resolve_backend(Backend::CUDA), Backend::CUDA);
  EXPECT_EQ(cd::resolve_backend(Backend::Auto, true), Backend::CUDA);
  EXPECT_NE(cd::resolve_backend(Backend::Auto, false), Backend::CUDA);
  EXPECT_EQ(cd::resolve_backend(Backend::Interpreter, true), Backend::Interpreter);
}

// Backend::CUDA on host tensors: the groups live on the CPU, so they compile with LLVM (or run
// in the interpreter without it), and the results are eager's.
TEST(CudaBackendChoice, HostInputsUnderBackendCudaMatchEager) {
  if (!KILN_WITH_CUDA) GTEST_SKIP() << "this build has no CUDA backend";
  auto fn = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{kiln::softmax(kiln::gelu(x[0] * x[1], "tanh"), -1)};
  };
  kiln::CompileOptions o;
  o.backend = kiln::Backend::CUDA;
  kiln::CompiledFunction f = kiln::compile(fn, o);
  Tensor a = kiln::randn({16, 50}), b = kiln::randn({16, 50});
  std::vector<float> got = f({a, b})[0].to_vector<float>();
  std::vector<float> want = fn({a, b})[0].to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6f + 1e-5f * std::fabs(want[i])) << i;
}

// ---- on a CUDA device ----

class CudaKernelOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaKernelOnDevice, PointwiseKernelMatchesTheInterpreter) {
  const int64_t n = 100'003;  // not a multiple of the block
  kiln::kir::Kernel k = tanh_mul_kernel(n);
  std::shared_ptr<const cuda::CudaKernel> compiled = cuda::cuda_compile(k, 0);
  Tensor x = kiln::randn({n}) * 3, y = kiln::randn({n});
  Tensor want = kiln::empty({n});
  std::vector<Tensor> host_args = {x, y, want};
  kiln::kir::run_kernel(k, host_args);
  Tensor xd = x.to(kiln::Device::cuda(0)), yd = y.to(kiln::Device::cuda(0));
  Tensor out = kiln::empty({n}, kiln::Device::cuda(0));
  // raw_data() is for host memory; the kernel takes the device pointers.
  std::vector<void*> ptrs = {xd.impl()->data(), yd.impl()->data(), out.impl()->data()};
  compiled->launch(ptrs);
  std::vector<float> got = out.to(kiln::kCPU).to_vector<float>(), ref = want.to_vector<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_LE(ulp_distance(got[static_cast<size_t>(i)], ref[static_cast<size_t>(i)]), 2)
        << "element " << i << ": " << got[static_cast<size_t>(i)] << " vs "
        << ref[static_cast<size_t>(i)];
}

// The vector walk (Note [CUDA vector accesses]) needs 16-byte aligned pointers; a view that
// starts one element in takes the scalar walk, and both give the interpreter's values.
TEST_F(CudaKernelOnDevice, AlignedAndMisalignedPointersGiveTheSameValues) {
  const int64_t n = 4096;
  kiln::kir::Kernel k = tanh_mul_kernel(n);
  ASSERT_NE(cuda::emit_cuda(k).code.find("uint4"), std::string::npos);
  std::shared_ptr<const cuda::CudaKernel> compiled = cuda::cuda_compile(k, 0);
  Tensor x = kiln::randn({n + 1}) * 3, y = kiln::randn({n + 1});
  Tensor xd = x.to(kiln::Device::cuda(0)), yd = y.to(kiln::Device::cuda(0));
  for (int64_t start : {0, 1}) {
    SCOPED_TRACE("first element " + std::to_string(start));
    Tensor xs = x.slice(0, start, start + n).contiguous(), ys = y.slice(0, start, start + n);
    Tensor want = kiln::empty({n});
    std::vector<Tensor> host_args = {xs, ys.contiguous(), want};
    kiln::kir::run_kernel(k, host_args);
    Tensor out = kiln::empty({n + 1}, kiln::Device::cuda(0));
    std::vector<void*> ptrs = {xd.slice(0, start, start + n).impl()->data(),
                               yd.slice(0, start, start + n).impl()->data(),
                               out.slice(0, start, start + n).impl()->data()};
    compiled->launch(ptrs);
    std::vector<float> got = out.slice(0, start, start + n).to(kiln::kCPU).to_vector<float>();
    std::vector<float> ref = want.to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(ulp_distance(got[static_cast<size_t>(i)], ref[static_cast<size_t>(i)]), 2)
          << "element " << i;
  }
}

}  // namespace
}  // namespace kiln_test
