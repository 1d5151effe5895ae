// rand, randn, dropout and arange on CUDA devices against the CPU kernels with the same
// generator state (Note [Random streams]): uniform draws and dropout masks bitwise, normal draws
// to the rounding of the devices' double log/cos/sqrt, arange exactly. The draws need a CUDA
// device and skip without one (eager_random's kernels compile to PTX in the OpInfo tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "kiln/kiln.h"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Tensor;

using kiln_test::kGpu;

std::vector<double> values(const Tensor& t) {
  return t.to(kiln::kCPU).to(kiln::kFloat64).contiguous().to_vector<double>();
}

TEST(CudaRandom, UniformDrawsEqualTheCpusBitwise) {
  KILN_REQUIRE_CUDA_DEVICE();
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    kiln::manual_seed(1234);
    Tensor cpu = kiln::rand({1001, 3}, kiln::TensorOptions(t));
    kiln::manual_seed(1234);
    Tensor gpu = kiln::rand({1001, 3}, kiln::TensorOptions(t).device(kGpu));
    EXPECT_EQ(gpu.device(), kGpu);
    EXPECT_EQ(values(gpu), values(cpu)) << kiln::dtype_name(t);
    // The generator advanced alike: a CPU draw after each agrees too.
    kiln::manual_seed(1234);
    (void)kiln::rand({1001, 3}, kiln::TensorOptions(t));
    std::vector<double> after_cpu = values(kiln::rand({5}, kiln::TensorOptions(t)));
    kiln::manual_seed(1234);
    (void)kiln::rand({1001, 3}, kiln::TensorOptions(t).device(kGpu));
    std::vector<double> after_gpu = values(kiln::rand({5}, kiln::TensorOptions(t)));
    EXPECT_EQ(after_gpu, after_cpu) << kiln::dtype_name(t) << ": the offsets diverged";
  }
}

TEST(CudaRandom, NormalDrawsEqualTheCpusToDoubleRounding) {
  KILN_REQUIRE_CUDA_DEVICE();
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16}) {
    kiln::manual_seed(99);
    std::vector<double> cpu = values(kiln::randn({4097}, kiln::TensorOptions(t)));
    kiln::manual_seed(99);
    std::vector<double> gpu = values(kiln::randn({4097}, kiln::TensorOptions(t).device(kGpu)));
    ASSERT_EQ(gpu.size(), cpu.size());
    int bits = t == kiln::kFloat64 ? 52 : t == kiln::kFloat16 ? 10 : 23;
    for (size_t i = 0; i < cpu.size(); ++i) {
      // A few double ulps before rounding to the dtype: at most one ulp of the dtype after.
      double ulp = std::ldexp(1.0, std::ilogb(std::max(std::abs(cpu[i]), 1e-300)) - bits);
      ASSERT_LE(std::abs(gpu[i] - cpu[i]), (t == kiln::kFloat64 ? 8 : 1) * ulp)
          << kiln::dtype_name(t) << " element " << i << ": cuda " << gpu[i] << ", cpu " << cpu[i];
    }
  }
}

TEST(CudaRandom, DropoutKeepsTheSameElementsAsTheCpu) {
  KILN_REQUIRE_CUDA_DEVICE();
  Tensor x = kiln::randn({64, 129}).t();  // non-contiguous: element i is row-major over x
  for (double p : {0.0, 0.1, 0.5, 1.0}) {
    kiln::manual_seed(5);
    std::vector<double> cpu = values(kiln::dropout(x, p, true));
    kiln::manual_seed(5);
    std::vector<double> gpu = values(kiln::dropout(x.to(kGpu), p, true));
    EXPECT_EQ(gpu, cpu) << "p = " << p;
  }
}

TEST(CudaRandom, ArangeEqualsTheCpus) {
  KILN_REQUIRE_CUDA_DEVICE();
  EXPECT_EQ(values(kiln::arange(0, 1000, 3, kiln::TensorOptions(kiln::kInt64).device(kGpu))),
            values(kiln::arange(0, 1000, 3, kiln::TensorOptions(kiln::kInt64))));
  EXPECT_EQ(values(kiln::arange(-2, 3, 0.25, kiln::TensorOptions(kiln::kFloat32).device(kGpu))),
            values(kiln::arange(-2, 3, 0.25, kiln::TensorOptions(kiln::kFloat32))));
}

}  // namespace
