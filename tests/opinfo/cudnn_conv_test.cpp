// cuDNN convolutions without a GPU (Note [cuDNN loaded on first use]): the library loads with
// every entry point Kiln calls, a missing library is a clean "cuDNN not found", and the
// descriptors Kiln builds give cuDNN the output sizes of Kiln's own shape rule on every
// convolution sample. (cuda_eager_opinfo_test.cpp compares the CUDA results with the CPU's where
// there is a GPU.)
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"
#include "kiln/runtime/cuda/cudnn_conv.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace {

TEST(CudnnConv, MissingLibraryIsCudnnNotFound) {
  kiln::cuda::CudnnLibrary lib = kiln::cuda::load_cudnn_from("/nonexistent/libcudnn.so.9");
  EXPECT_NE(lib.error.find("cuDNN not found"), std::string::npos) << lib.error;
  EXPECT_EQ(lib.version, 0u);
}

TEST(CudnnConv, CudaKernelsAreRegistered) {
  for (const char* name : {"convolution", "convolution_backward"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    bool with_cuda = kiln::cuda::cudnn_library().error.find("no CUDA backend") == std::string::npos;
    EXPECT_EQ(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)] != nullptr, with_cuda) << name;
  }
}

TEST(CudnnConv, DescriptorsGiveTheShapeRulesSizes) {
  const kiln::cuda::CudnnLibrary& lib = kiln::cuda::cudnn_library();
  if (!lib.error.empty()) GTEST_SKIP() << lib.error;
  EXPECT_GE(lib.version, 90000u) << lib.path;
  struct Case {
    kiln::Shape input, weight;
    kiln::ConvAttrs attrs;
  };
  using A = kiln::ConvAttrs;
  const std::vector<Case> cases = {
      {{32, 64, 56, 56}, {64, 64, 3, 3}, A{{1}, {1}, {1}, false, {0}, 1}},
      {{32, 64, 56, 56}, {128, 64, 3, 3}, A{{2}, {1}, {1}, false, {0}, 1}},
      {{2, 4, 7, 6}, {6, 2, 3, 3}, A{{2, 1}, {1, 0}, {1, 2}, false, {0}, 2}},
      {{2, 4, 9}, {6, 2, 3}, A{{2}, {2}, {2}, false, {0}, 2}},
      {{2, 4, 5, 4}, {4, 3, 3, 3}, A{{2}, {1}, {1}, true, {1}, 1}},
      {{1, 4, 3, 3}, {4, 2, 2, 2}, A{{1}, {0}, {2}, true, {0}, 2}},
  };
  const kiln::OpDef& op = kiln::get_op("convolution");
  for (const Case& c : cases) {
    SCOPED_TRACE(kiln::shape_str(c.input) + " " + kiln::shape_str(c.weight));
    kiln::ConvGeometry g = kiln::conv_geometry(op, c.input, c.weight, nullptr, c.attrs);
    // cuDNN computes the columns grid from the image (the input, or a transposed one's output).
    kiln::Shape want{g.n, g.column_channels(), g.columns(0), g.columns(1)};
    for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16})
      EXPECT_EQ(kiln::cuda::cudnn_columns_sizes(g, t), want);
  }
}

TEST(CudnnConv, BenchmarkIsOffByDefaultAsTorchs) {
  EXPECT_FALSE(kiln::cuda::cudnn_benchmark());
  kiln::cuda::set_cudnn_benchmark(true);
  EXPECT_TRUE(kiln::cuda::cudnn_benchmark());
  kiln::cuda::set_cudnn_benchmark(false);
}

// The algorithms cuDNN times (set_cudnn_benchmark) give the CPU's results too, forward and both
// gradients, with a bias (its gradient is a sum over the device's grad_output).
TEST(CudnnConv, TimedAlgorithmsMatchTheCpuOnDevice) {
  if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  kiln::manual_seed(11);
  kiln::Tensor x = kiln::randn({4, 6, 13, 11}), w = kiln::randn({8, 3, 3, 3});
  kiln::Tensor b = kiln::randn({8}), g = kiln::randn({4, 8, 7, 6});
  auto run = [&](kiln::Device d) {
    kiln::Tensor xd = x.to(d).requires_grad_(), wd = w.to(d).requires_grad_();
    kiln::Tensor bd = b.to(d).requires_grad_();
    kiln::Tensor y = kiln::conv2d(xd, wd, bd, {2}, {1}, {1}, 2);
    std::vector<kiln::Tensor> grads = kiln::autograd::grad({y}, {xd, wd, bd}, {g.to(d)});
    std::vector<kiln::Tensor> out{y.detach().to(kiln::kCPU)};
    for (const kiln::Tensor& t : grads)
      out.push_back(t.to(kiln::kCPU));
    return out;
  };
  std::vector<kiln::Tensor> want = run(kiln::kCPU);
  kiln::cuda::set_cudnn_benchmark(true);
  std::vector<kiln::Tensor> got = run(kiln::Device::cuda(0));
  kiln::cuda::set_cudnn_benchmark(false);
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<float> gv = got[i].to_vector<float>(), wv = want[i].to_vector<float>();
    ASSERT_EQ(gv.size(), wv.size()) << "tensor " << i;
    for (size_t j = 0; j < gv.size(); ++j)
      ASSERT_NEAR(gv[j], wv[j], 1e-3 * (1 + std::abs(wv[j]))) << "tensor " << i << " at " << j;
  }
}

}  // namespace
