// Autograd on CUDA devices (Note [Device threads], Note [Backward streams]): a backward from CUDA
// gradients runs on its device's worker thread with the caller's state, each Node on the stream
// its forward ran on, and the caller's stream waits for the backward's work. Also the caching
// allocator's record_stream. Each needs a CUDA device and skips without one.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/kiln.h"
#include "kiln/runtime/cuda/cuda_allocator.h"

namespace {

using kiln::Tensor;
using kiln_test::kGpu;

std::vector<float> host(const Tensor& t) {
  return t.to(kiln::kCPU).contiguous().to_vector<float>();
}

TEST(CudaAutograd, BackwardOfCudaTensorsRunsOnTheDeviceThread) {
  KILN_REQUIRE_CUDA_DEVICE();
  std::thread::id caller = std::this_thread::get_id();
  for (kiln::Device d : {kiln::kCPU, kGpu}) {
    Tensor x = kiln::from_vector<float>({1, -2, 3}).to(d).requires_grad_();
    std::thread::id ran_on;
    bool grad_mode = true;
    x.register_hook([&](const Tensor& g) {
      ran_on = std::this_thread::get_id();
      grad_mode = kiln::GradMode::is_enabled();
      return g;
    });
    Tensor loss = kiln::sum(x * x);
    {
      // The caller's thread-local state travels with the backward: here grad mode off, which
      // the hook (run before the Node's own grad-mode switch) must see.
      kiln::NoGradGuard no_grad;
      loss.backward();
    }
    EXPECT_EQ(host(x.grad()), (std::vector<float>{2, -4, 6})) << d.str();
    if (d.is_cuda()) {
      EXPECT_NE(ran_on, caller) << "CUDA backward work on the calling thread";
    } else {
      EXPECT_EQ(ran_on, caller) << "CPU backward work moved off the calling thread";
    }
    EXPECT_FALSE(grad_mode) << "the caller's grad mode did not reach the backward's thread";
  }
}

TEST(CudaAutograd, ErrorsAndCreateGraphCrossTheDeviceThread) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::from_vector<float>({0.5f, 2}).to(kGpu).requires_grad_();
  // Double backward: the first backward builds a graph (create_graph) on the device thread.
  Tensor y = kiln::sum(x * x * x);
  Tensor g = kiln::autograd::grad({y}, {x}, {}, false, /*create_graph=*/true)[0];
  EXPECT_EQ(host(g), (std::vector<float>{0.75f, 12}));  // 3x^2
  Tensor gg = kiln::autograd::grad({kiln::sum(g)}, {x})[0];
  EXPECT_EQ(host(gg), (std::vector<float>{3, 12}));  // 6x
  // An error in a backward Node reaches the caller as a kiln::Error: here the second backward
  // through a Node whose saved tensor the first one freed.
  Tensor z = kiln::sum(x * x);
  z.backward();
  EXPECT_THROW(z.backward(), kiln::Error);
}

TEST(CudaAutograd, CheckpointRecomputesOnTheDeviceThreadWithoutDeadlock) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::from_vector<float>({1, 2, 3}).to(kGpu).requires_grad_();
  auto f = [](const Tensor& t) { return kiln::tanh(t) * t; };
  Tensor y = kiln::checkpoint(f, x);
  kiln::sum(y).backward();  // the checkpoint's backward runs a backward of its own
  Tensor xr = kiln::from_vector<float>({1, 2, 3}).to(kGpu).requires_grad_();
  kiln::sum(f(xr)).backward();
  EXPECT_EQ(host(x.grad()), host(xr.grad()));
}

TEST(CudaAutograd, NodesRunOnTheirForwardStreamAndTheCallerWaitsForThem) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::cuda::Stream side = kiln::cuda::new_stream(0);
  Tensor x = kiln::randn({1 << 20}).to(kGpu).requires_grad_();
  kiln::cuda::synchronize(0);
  Tensor y;
  {
    kiln::cuda::StreamGuard on_side(side);
    y = kiln::sum(kiln::exp(x) * 3);
  }
  kiln::cuda::Stream seen = kiln::cuda::default_stream(0);
  x.register_hook([&](const Tensor& g) {
    seen = kiln::cuda::current_stream(0);
    return g;
  });
  // The caller's current stream is the default one; the backward's Nodes run on `side`, and the
  // copy to the host below (on the default stream) must see their results.
  y.backward();
  EXPECT_TRUE(seen == side) << "a Node ran off its forward stream";
  std::vector<float> got = host(x.grad()), xs = host(x);
  for (size_t i = 0; i < got.size(); i += 4099)
    EXPECT_FLOAT_EQ(got[i], 3 * std::exp(xs[i])) << i;
  // Two gradients into one input, both made on `side`: they are summed on `side` too.
  Tensor w = kiln::randn({1 << 20}).to(kGpu).requires_grad_();
  kiln::cuda::synchronize(0);
  Tensor loss;
  {
    kiln::cuda::StreamGuard on_side(side);
    loss = kiln::sum(w * w);
  }
  loss.backward();
  std::vector<float> gw = host(w.grad()), ws = host(w);
  for (size_t i = 0; i < gw.size(); i += 4099)
    EXPECT_FLOAT_EQ(gw[i], 2 * ws[i]) << i;
}

TEST(CudaAutograd, RecordStreamHoldsMemoryUntilTheOtherStreamsWorkIsDone) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::cuda::Stream side = kiln::cuda::new_stream(0);
  Tensor a = kiln::randn({2048, 2048}).to(kGpu), b = kiln::randn({2048, 2048}).to(kGpu);
  kiln::cuda::synchronize(0);
  void* freed = nullptr;
  Tensor keep;
  {
    Tensor x = kiln::empty({1 << 20}, kGpu);  // on the default stream
    freed = x.impl()->data();
    {
      // Milliseconds of work queued on the side stream, which (in a real program) reads x.
      kiln::cuda::StreamGuard on_side(side);
      for (int i = 0; i < 20; ++i)
        keep = kiln::matmul(a, b);
    }
    kiln::cuda::record_stream(x, side);
  }  // x is freed here, while the side stream is still busy
  Tensor y = kiln::empty({1 << 20}, kGpu);
  EXPECT_NE(y.impl()->data(), freed) << "memory reused while another stream may read it";
  side.synchronize();
  Tensor z = kiln::empty({1 << 20}, kGpu);
  EXPECT_EQ(z.impl()->data(), freed) << "the memory is reusable once that work is done";
  EXPECT_THROW(kiln::cuda::record_stream(kiln::ones({3}), side), kiln::Error);
}

}  // namespace
