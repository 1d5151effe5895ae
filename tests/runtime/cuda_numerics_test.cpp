// Where a CUDA kernel could round differently from the CPU's and give a visibly different
// answer, it must not: float products accumulate in double as the CPU's do, integer sums wrap
// alike, layer_norm keeps a float32 weight of a float16 input in float32, and arange rounds
// once. Each needs a CUDA device and skips without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
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

// softmax, log_softmax and layer_norm pick one of three kernels by the row length and layout
// (Note [Row-cached normalization entries]): a warp per row up to 1024 elements, a block with
// the row in registers up to 4096, and the kernel generated from the row program (Note [Row
// programs]) beyond, for lengths that are not a multiple of the 16-byte chunk, for a misaligned
// view and for a reduced dim that is not the last. Every one must give the CPU's values to the
// rounding of a sum taken in another order.
TEST(CudaNumerics, EveryNormalizationEntryMatchesTheCpu) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::manual_seed(11);
  for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16}) {
    double eps = t == kiln::kFloat64 ? 0x1p-52 : t == kiln::kFloat16 ? 0x1p-10 : 0x1p-23;
    for (int64_t n : {4, 250, 1000, 1024, 1028, 3000, 4096, 6000, 20000}) {
      for (int64_t offset : {0, 1}) {
        SCOPED_TRACE(std::string(kiln::dtype_name(t)) + " rows of " + std::to_string(n) +
                     ", first element " + std::to_string(offset));
        // offset 1: a view that starts one element into its storage, so not 16-byte aligned.
        Tensor flat = (kiln::randn({3 * n + offset}) * 3).to(t);
        Tensor x = flat.slice(0, offset, offset + 3 * n).view({3, n});
        Tensor w = kiln::randn({n}), b = kiln::randn({n});
        Tensor xg = flat.to(kGpu).slice(0, offset, offset + 3 * n).view({3, n});
        auto check = [&](const Tensor& got, const Tensor& want, const char* what) {
          std::vector<double> g = got.to(kiln::kCPU).to(kiln::kFloat64).to_vector<double>();
          std::vector<double> c = want.to(kiln::kFloat64).to_vector<double>();
          ASSERT_EQ(g.size(), c.size()) << what;
          for (size_t i = 0; i < c.size(); ++i) {
            double tol = eps * (8 + static_cast<double>(n) / 16) * (1 + std::abs(c[i]));
            ASSERT_LE(std::abs(g[i] - c[i]), tol) << what << " element " << i;
          }
        };
        check(kiln::softmax(xg, 1), kiln::softmax(x, 1), "softmax");
        check(kiln::softmax(xg, 0), kiln::softmax(x, 0), "softmax over dim 0");
        check(kiln::log_softmax(xg, 1), kiln::log_softmax(x, 1), "log_softmax");
        check(kiln::layer_norm(xg, {n}, w.to(kGpu), b.to(kGpu)), kiln::layer_norm(x, {n}, w, b),
              "layer_norm");
        check(kiln::layer_norm(xg, {n}), kiln::layer_norm(x, {n}), "layer_norm without affine");
      }
    }
  }
}

// The fused backwards (Note [Fused normalization backward]) run the kernels generated from their
// row programs on every row length and layout: each gradient must be the CPU's to the rounding
// of a row sum taken in another order.
TEST(CudaNumerics, FusedNormalizationBackwardsMatchTheCpu) {
  KILN_REQUIRE_CUDA_DEVICE();
  kiln::manual_seed(12);
  for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16}) {
    double eps = t == kiln::kFloat64 ? 0x1p-52 : t == kiln::kFloat16 ? 0x1p-10 : 0x1p-23;
    for (int64_t n : {1, 4, 250, 1000, 1028, 3000, 20000}) {
      SCOPED_TRACE(std::string(kiln::dtype_name(t)) + " rows of " + std::to_string(n));
      Tensor x = (kiln::randn({3, n}) * 3).to(t);
      Tensor g = kiln::randn({3, n}).to(t);
      Tensor w = kiln::randn({n}).to(t);
      auto grads = [&](const Tensor& xi, const Tensor& gi, const Tensor& wi) {
        std::vector<Tensor> out;
        auto grad_of = [&](const std::function<Tensor(const Tensor&, const Tensor&)>& f) {
          Tensor xr = xi.detach().requires_grad_(), wr = wi.detach().requires_grad_();
          std::vector<Tensor> r = kiln::autograd::grad({f(xr, wr)}, {xr, wr}, {gi}, false, false,
                                                       /*allow_unused=*/true);
          for (const Tensor& d : r)
            if (d.defined()) out.push_back(d.to(kiln::kCPU).to(kiln::kFloat64));
        };
        grad_of([](const Tensor& a, const Tensor&) { return kiln::softmax(a, 1); });
        grad_of([](const Tensor& a, const Tensor&) { return kiln::softmax(a, 0); });
        grad_of([](const Tensor& a, const Tensor&) { return kiln::log_softmax(a, 1); });
        grad_of([&](const Tensor& a, const Tensor& b) {
          return kiln::layer_norm(a, {n}, b, Tensor(), 1e-3);
        });
        grad_of([&](const Tensor& a, const Tensor&) { return kiln::layer_norm(a, {n}); });
        return out;
      };
      std::vector<Tensor> cpu = grads(x, g, w), gpu = grads(x.to(kGpu), g.to(kGpu), w.to(kGpu));
      ASSERT_EQ(gpu.size(), cpu.size());
      for (size_t k = 0; k < cpu.size(); ++k) {
        std::vector<double> a = gpu[k].to_vector<double>(), c = cpu[k].to_vector<double>();
        double largest = 1;
        for (double v : c)
          largest = std::max(largest, std::abs(v));
        for (size_t i = 0; i < c.size(); ++i) {
          // Relative to the row's largest gradient: dx subtracts row sums from each term.
          double tol = eps * (8 + static_cast<double>(n) / 16) * largest * 8;
          ASSERT_LE(std::abs(a[i] - c[i]), tol) << "gradient " << k << " element " << i;
        }
      }
    }
  }
}

}  // namespace
