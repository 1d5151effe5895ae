// Where a CUDA kernel could round differently from the CPU's and give a visibly different
// answer, it must not: float products accumulate in double as the CPU's do, integer sums wrap
// alike, layer_norm keeps a float32 weight of a float16 input in float32, and arange rounds
// once. Each needs a CUDA device and skips without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cuda_test_util.h"
#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
using kiln_test::kGpu;

TEST(CudaNumerics, FloatProductsDoNotOverflowWhereTheCpusDoNot) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::from_vector<float>({1e30f, 1e30f, 1e-30f, 1e-30f});
  EXPECT_FLOAT_EQ(kiln::prod(x).item<float>(), 1.0f);  // the CPU's: double throughout
  EXPECT_FLOAT_EQ(kiln::prod(x.to(kGpu)).to(kiln::kCPU).item<float>(), 1.0f);
}

TEST(CudaNumerics, IntegerSumsWrapAsOnTheCpu) {
  KILN_REQUIRE_CUDA_DEVICE();
  int64_t big = std::numeric_limits<int64_t>::max();
  Tensor x = kiln::from_vector<int64_t>({big, big, 3});
  EXPECT_EQ(kiln::sum(x.to(kGpu)).to(kiln::kCPU).item<int64_t>(), kiln::sum(x).item<int64_t>());
}

TEST(CudaNumerics, LayerNormKeepsAFloat32WeightOfAFloat16Input) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::manual_seed(3);
  Tensor x = kiln::randn({8, 300}).to(kiln::kFloat16);
  // Weights that float16 cannot hold: rounding them would move outputs by many float16 ulps.
  Tensor w = kiln::full({300}, 1.0009765625 + 1.0 / 8192);
  Tensor b = kiln::full({300}, 0.00048828125 + 1.0 / 65536);
  std::vector<float> cpu = kiln::layer_norm(x, {300}, w, b).to(kiln::kFloat32).to_vector<float>();
  std::vector<float> gpu = kiln::layer_norm(x.to(kGpu), {300}, w.to(kGpu), b.to(kGpu))
                               .to(kiln::kCPU)
                               .to(kiln::kFloat32)
                               .to_vector<float>();
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    // One float16 ulp: the row statistics are summed in another order.
    ASSERT_LE(std::abs(gpu[i] - cpu[i]),
              std::ldexp(1.0f, std::ilogb(std::max(std::abs(cpu[i]), 1e-4f)) - 10))
        << "element " << i;
  }
}

TEST(CudaNumerics, ArangeWithAnInexactStepEqualsTheCpusBitwise) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::TensorOptions cpu(kiln::kFloat64), gpu(kiln::kFloat64);
  gpu = gpu.device(kGpu);
  std::vector<double> want = kiln::arange(-1, 7, 0.1, cpu).to_vector<double>();
  EXPECT_EQ(kiln::arange(-1, 7, 0.1, gpu).to(kiln::kCPU).to_vector<double>(), want);
}

}  // namespace
