// The CUDA runtime: device tensors through the caching allocator, host <-> device copies staged
// through pinned memory, streams and events. These need a CUDA device and skip without one; the
// errors without a device are checked everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"
#include "kiln/runtime/cuda/cublas_matmul.h"
#include "kiln/runtime/cuda/cuda_allocator.h"
#include "kiln/runtime/cuda/cuda_copy.h"
#include "kiln/runtime/op_table.h"

namespace {

using kiln::Device;
using kiln::Tensor;

TEST(CudaRuntimeWithoutDevice, EveryEntryPointNamesTheReason) {
  if (kiln::cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  auto expect_reason = [](auto&& fn, const char* what) {
    try {
      fn();
      ADD_FAILURE() << what << " succeeded without a CUDA device";
    } catch (const kiln::Error& e) {
      std::string msg = e.what();
      EXPECT_TRUE(msg.find("CUDA") != std::string::npos) << msg;
    }
  };
  expect_reason([] { kiln::cuda_memory_stats(0); }, "cuda_memory_stats");
  expect_reason([] { kiln::cuda::current_stream(0); }, "current_stream");
  expect_reason([] { kiln::cuda::Event e(0); }, "Event");
  expect_reason([] { kiln::empty({4}, Device::cuda(0)); }, "empty on cuda");
  kiln::cuda_empty_cache();  // nothing to release: a no-op, not an error
}

// cuBLAS is loaded by the first CUDA product, not at start-up; loading it needs no device.
TEST(CudaRuntimeWithoutDevice, CublasLoadsOnFirstUseWithoutADevice) {
#if KILN_WITH_CUDA
  EXPECT_EQ(kiln::cuda::cublas_load_error(), "");
#else
  EXPECT_NE(kiln::cuda::cublas_load_error(), "");
#endif
}

TEST(CudaRuntime, RoundTripsKeepEveryValueAndDtype) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor f = kiln::randn({257, 33});
  EXPECT_EQ(f.to(Device::cuda(0)).to(kiln::kCPU).to_vector<float>(), f.to_vector<float>());
  Tensor i = kiln::arange(0, 1000, 1, kiln::kInt64);
  Tensor back = i.to(Device::cuda(0)).to(kiln::kCPU);
  EXPECT_EQ(back.dtype(), kiln::kInt64);
  EXPECT_EQ(back.to_vector<int64_t>(), i.to_vector<int64_t>());
  Tensor h = f.to(kiln::kFloat16);
  EXPECT_EQ(h.to(Device::cuda(0)).to(kiln::kCPU).to(kiln::kFloat32).to_vector<float>(),
            h.to(kiln::kFloat32).to_vector<float>());
  Tensor b = f > 0;
  EXPECT_EQ(b.to(Device::cuda(0)).to_vector<bool>(), b.to_vector<bool>());
  Tensor empty = kiln::zeros({0, 5});
  EXPECT_EQ(empty.to(Device::cuda(0)).to(kiln::kCPU).sizes(), empty.sizes());
}

TEST(CudaRuntime, LargeCopiesCrossTheStagingBufferInPieces) {
  KILN_REQUIRE_CUDA_DEVICE();
  const int64_t n = (int64_t{80} << 20) / 4 + 3;  // 80 MiB + 12 bytes: three staging pieces
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = static_cast<float>(k % 100003) * 0.5f;
  Tensor x = kiln::from_vector(v, {n});
  EXPECT_EQ(x.to(Device::cuda(0)).to_vector<float>(), v);
}

TEST(CudaRuntime, StridedDeviceViewsCopyBackAsTheirView) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::arange(0, 24, 1, kiln::kFloat32).view({2, 3, 4});
  Tensor dev = x.to(Device::cuda(0));
  Tensor tv = dev.transpose(0, 2);  // a view: no kernel runs on the device
  EXPECT_EQ(tv.device(), Device::cuda(0));
  EXPECT_EQ(tv.to(kiln::kCPU).to_vector<float>(),
            x.transpose(0, 2).contiguous().to_vector<float>());
  Tensor sl = dev.select(1, 2);
  EXPECT_EQ(sl.to_vector<float>(), x.select(1, 2).contiguous().to_vector<float>());
  // A strided host source lands contiguous on the device.
  EXPECT_EQ(x.transpose(0, 1).to(Device::cuda(0)).to_vector<float>(),
            x.transpose(0, 1).contiguous().to_vector<float>());
}

TEST(CudaRuntime, TheCachingAllocatorReusesFreedBlocks) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::cuda_empty_cache();
  auto before = kiln::cuda_memory_stats(0);
  { Tensor a = kiln::empty({1 << 20}, Device::cuda(0)); }
  auto mid = kiln::cuda_memory_stats(0);
  EXPECT_EQ(mid.source_allocations, before.source_allocations + 1);
  EXPECT_EQ(mid.allocated_bytes, before.allocated_bytes);
  { Tensor b = kiln::empty({1 << 20}, Device::cuda(0)); }
  auto after = kiln::cuda_memory_stats(0);
  EXPECT_EQ(after.source_allocations, mid.source_allocations);  // served from the cache
  EXPECT_EQ(after.cache_hits, mid.cache_hits + 1);
  EXPECT_GE(after.peak_allocated_bytes, int64_t{4} << 20);
  kiln::cuda_empty_cache();  // the 4 MiB segment is entirely free and goes back
  EXPECT_LE(kiln::cuda_memory_stats(0).reserved_bytes, after.reserved_bytes - (int64_t{4} << 20));
}

TEST(CudaRuntime, StreamsEventsAndProperties) {
  KILN_REQUIRE_CUDA_DEVICE();
  const auto& props = kiln::cuda::device_properties(0);
  EXPECT_FALSE(props.name.empty());
  EXPECT_GE(props.major, 3);
  EXPECT_GT(props.multiprocessors, 0);
  EXPECT_GT(props.total_memory, 0);

  kiln::cuda::Stream side = kiln::cuda::new_stream(0);
  EXPECT_FALSE(side == kiln::cuda::default_stream(0));
  Tensor x = kiln::randn({1 << 16});
  kiln::cuda::Event start(0, /*timing=*/true), stop(0, /*timing=*/true);
  {
    kiln::cuda::StreamGuard guard(side);
    EXPECT_TRUE(kiln::cuda::current_stream(0) == side);
    start.record(side);
    Tensor y = x.to(Device::cuda(0));  // copies and allocates on `side`
    stop.record(side);
    stop.synchronize();
    EXPECT_TRUE(stop.query());
    EXPECT_GE(start.elapsed_ms(stop), 0.0f);
    EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  }
  EXPECT_TRUE(kiln::cuda::current_stream(0) == kiln::cuda::default_stream(0));
  stop.block(kiln::cuda::default_stream(0));
  kiln::cuda::synchronize(0);
  EXPECT_TRUE(side.query());
}

// Every op the CPU runs has a CUDA kernel too, so a model moved to a GPU never meets an op that
// only runs on the host.
TEST(CudaRuntime, EveryOpWithACpuKernelHasACudaKernel) {
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (op->compute[static_cast<int>(kiln::DispatchKey::CPU)] == nullptr) continue;
    EXPECT_NE(op->compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr)
        << op->name << " has a CPU kernel and no CUDA kernel";
  }
}

TEST(CudaRuntime, MixedDevicesAreErrors) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::ones({4}).to(Device::cuda(0));
  try {
    (void)(x + kiln::ones({4}));
    FAIL() << "an op mixed a CUDA and a CPU tensor";
  } catch (const kiln::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  }
}

TEST(CudaRuntime, AutogradFlowsBackAcrossDeviceCopies) {
  KILN_REQUIRE_CUDA_DEVICE();
  // loss = sum(3 * w_cuda^2) with w on the CPU: dloss/dw = 6 w, on the CPU.
  Tensor w = kiln::arange(0, 5, 1, kiln::TensorOptions(kiln::kFloat32)).requires_grad_();
  Tensor on_gpu = w.to(Device::cuda(0));
  EXPECT_TRUE(on_gpu.requires_grad());
  EXPECT_EQ(on_gpu.grad_fn()->name(), "ToDeviceBackward");
  Tensor loss = kiln::sum(on_gpu * on_gpu * 3.0);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().device(), kiln::kCPU);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{0, 6, 12, 18, 24}));
  // And back: a CUDA leaf moved to the CPU gets its gradient on the device.
  Tensor v = kiln::ones({3}).to(Device::cuda(0)).requires_grad_();
  kiln::sum(v.to(kiln::kCPU) * 2.0).backward();
  EXPECT_EQ(v.grad().device(), Device::cuda(0));
  EXPECT_EQ(v.grad().to(kiln::kCPU).to_vector<float>(), std::vector<float>(3, 2.0f));
  // Without grad mode nothing is recorded.
  kiln::NoGradGuard no_grad;
  EXPECT_FALSE(w.to(Device::cuda(0)).requires_grad());
}

TEST(CudaRuntime, CopiesBetweenTwoDevices) {
  KILN_REQUIRE_CUDA_DEVICE();
  if (kiln::cuda_device_count() < 2) GTEST_SKIP() << "one CUDA device";
  Tensor x = kiln::randn({1000});
  Tensor on1 = x.to(Device::cuda(0)).to(Device::cuda(1));
  EXPECT_EQ(on1.device(), Device::cuda(1));
  EXPECT_EQ(on1.to_vector<float>(), x.to_vector<float>());
}

}  // namespace
