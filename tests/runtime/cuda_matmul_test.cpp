// mm, bmm, matmul and linear on CUDA devices through cuBLAS, against float64 products of the
// same inputs on the CPU, over the operand layouts cuBLAS reads in place (row- or
// column-contiguous) and those it needs a copy for, every floating dtype, batches, broadcasts
// and empty inner dims; and the TF32 switch. The products need a CUDA device and skip without
// one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda_test_util.h"
#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/kiln.h"
#include "kiln/runtime/cuda/cublas_matmul.h"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Tensor;

using kiln_test::kGpu;

// max |got - want| / max(max |want|, 1), in float64 on the CPU.
double relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.sizes(), want.sizes());
  Tensor g = got.to(kiln::kCPU).to(kiln::kFloat64).contiguous();
  Tensor w = want.to(kiln::kFloat64).contiguous();
  std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
  double worst = 0, scale = 1;
  for (size_t i = 0; i < wv.size(); ++i) {
    worst = std::max(worst, std::abs(gv[i] - wv[i]));
    scale = std::max(scale, std::abs(wv[i]));
  }
  return worst / scale;
}

// What a product of K-term dot products of unit normals may lose in each dtype.
double tolerance(DType t) {
  if (t == kiln::kFloat64) return 1e-12;
  if (t == kiln::kFloat32) return 1e-5;
  if (t == kiln::kFloat16) return 4e-3;
  return 3e-2;  // bfloat16
}

TEST(CudaMatmul, Tf32IsOffByDefaultAndCanBeTurnedOn) {
  EXPECT_FALSE(kiln::cuda::allow_tf32());
  kiln::cuda::set_allow_tf32(true);
  EXPECT_TRUE(kiln::cuda::allow_tf32());
  kiln::cuda::set_allow_tf32(false);
  EXPECT_FALSE(kiln::cuda::allow_tf32());
}

TEST(CudaMatmul, EveryLayoutAndDtypeMatchesAFloat64Product) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::manual_seed(7);
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    SCOPED_TRACE(std::string(kiln::dtype_name(t)));
    auto input = [&](kiln::Shape s) { return kiln::randn(std::move(s)).to(t); };
    auto check = [&](const Tensor& got, const Tensor& want, const char* what) {
      EXPECT_EQ(got.dtype(), t) << what;
      EXPECT_EQ(got.device(), kGpu) << what;
      EXPECT_LE(relative_error(got, want), tolerance(t)) << what;
    };
    auto f64 = [](const Tensor& x) { return x.to(kiln::kFloat64); };
    Tensor a = input({37, 129}), b = input({129, 65});
    Tensor want = kiln::mm(f64(a), f64(b));
    check(kiln::mm(a.to(kGpu), b.to(kGpu)), want, "row-contiguous operands");
    // Column-contiguous operands (transposed on the device) are read in place with OP_T.
    Tensor at = a.t().contiguous().to(kGpu).t(), bt = b.t().contiguous().to(kGpu).t();
    check(kiln::mm(at, b.to(kGpu)), want, "a column-contiguous");
    check(kiln::mm(a.to(kGpu), bt), want, "b column-contiguous");
    check(kiln::mm(at, bt), want, "both column-contiguous");
    // Every other column: neither layout, so a contiguous copy.
    Tensor wide = input({37, 258});
    Tensor stepped = wide.to(kGpu).slice(1, 0, 258, 2);
    check(kiln::mm(stepped, b.to(kGpu)), kiln::mm(f64(wide.slice(1, 0, 258, 2)), f64(b)),
          "a sliced with step");
    // Batches, one of them transposed per batch.
    Tensor x = input({3, 17, 40}), y = input({3, 40, 23});
    Tensor bwant = kiln::bmm(f64(x), f64(y));
    check(kiln::bmm(x.to(kGpu), y.to(kGpu)), bwant, "bmm");
    check(kiln::bmm(x.to(kGpu), y.transpose(1, 2).contiguous().to(kGpu).transpose(1, 2)), bwant,
          "bmm, b column-contiguous");
    // matmul's broadcast (through bmm over an expanded operand) and linear's bias.
    Tensor batched = input({2, 3, 37, 129});
    check(kiln::matmul(batched.to(kGpu), b.to(kGpu)), kiln::matmul(f64(batched), f64(b)),
          "matmul broadcast");
    Tensor w = input({65, 129}), bias = input({65});
    check(kiln::linear(a.to(kGpu), w.to(kGpu), bias.to(kGpu)),
          kiln::linear(f64(a), f64(w), f64(bias)), "linear");
    // An empty inner dim: zeros.
    Tensor e = kiln::mm(input({4, 0}).to(kGpu), input({0, 5}).to(kGpu));
    check(e, kiln::zeros({4, 5}, kiln::kFloat64), "k = 0");
  }
}

TEST(CudaMatmul, Tf32ChangesFloat32ProductsOnlyWhenAllowed) {
  KILN_REQUIRE_CUDA_DEVICE();
  if (kiln::cuda::device_properties(0).major < 8)
    GTEST_SKIP() << "TF32 needs compute capability 8.0 or later";
  kiln::manual_seed(11);
  Tensor a = kiln::randn({256, 1024}), b = kiln::randn({1024, 256});
  Tensor want = kiln::mm(a.to(kiln::kFloat64), b.to(kiln::kFloat64));
  Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  double strict = relative_error(kiln::mm(ga, gb), want);
  kiln::cuda::set_allow_tf32(true);
  double fast = relative_error(kiln::mm(ga, gb), want);
  kiln::cuda::set_allow_tf32(false);
  EXPECT_LE(strict, 1e-5);
  // TF32 keeps 10 mantissa bits: its error is orders of magnitude above float32's.
  EXPECT_GT(fast, 10 * strict) << "strict " << strict << ", tf32 " << fast;
  EXPECT_LE(fast, 1e-2);
}

}  // namespace
