// The kernel-IR interpreter where batching could reorder effects (Note [Batched innermost
// loops]): aliasing tensors, loop-carried reads through memory and accumulators; and its
// argument checks. References are sequential loops in this file.
#include <gtest/gtest.h>

#include <vector>

#include "kir_test_util.h"
#include "test_util.h"

namespace {

using namespace kir_test;
using kiln::Tensor;
using kiln_test::throws_error_containing;
using kir::BinaryOp;
using kir::ExprId;
using kir::LoopKind;
using kir::ReduceOp;

// out[i * so + oo] = in[i * si + io] * 2 + 1 for i in 0..n, in f32.
kir::Kernel affine_copy(int64_t n, int64_t si, int64_t io, int64_t so, int64_t oo, int64_t extent) {
  kir::Kernel k;
  k.name = "affine_copy";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("in", kiln::kFloat32, false, extent);
  kir::BufferId out = b.buffer("out", kiln::kFloat32, true, extent);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i);
  ExprId x = b.load(in, add(b, b.binary(BinaryOp::Mul, iv, b.iconstant(si)), b.iconstant(io)));
  ExprId y = b.binary(BinaryOp::Add, b.binary(BinaryOp::Mul, x, b.constant(2, kiln::kFloat32)),
                      b.constant(1, kiln::kFloat32));
  k.body.push_back(loop(
      i, n, {store(out, add(b, b.binary(BinaryOp::Mul, iv, b.iconstant(so)), b.iconstant(oo)), y)},
      LoopKind::Vector));
  return k;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t j = 0; j < v.size(); ++j)
    v[j] = static_cast<float>(j % 97);
  return v;
}

// The same kernel run by a plain sequential loop on a copy of the data.
std::vector<float> sequential_affine(std::vector<float> data, int64_t n, int64_t si, int64_t io,
                                     int64_t so, int64_t oo) {
  for (int64_t i = 0; i < n; ++i)
    data[static_cast<size_t>(i * so + oo)] = data[static_cast<size_t>(i * si + io)] * 2 + 1;
  return data;
}

TEST(KernelInterpreterEffects, InPlaceElementwiseOnOneTensor) {
  const int64_t n = 1000;
  Tensor t = kiln::from_vector(iota(n), {n});
  kir::run_kernel(affine_copy(n, 1, 0, 1, 0, n), std::vector<Tensor>{t, t});
  EXPECT_EQ(t.to_vector<float>(), sequential_affine(iota(n), n, 1, 0, 1, 0));
}

TEST(KernelInterpreterEffects, LoopCarriedReadsThroughAliasedTensors) {
  // out[i + 1] = in[i] * 2 + 1 on one storage: each iteration reads the previous one's store.
  const int64_t n = 700;
  Tensor t = kiln::from_vector(iota(n + 1), {n + 1});
  kir::run_kernel(affine_copy(n, 1, 0, 1, 1, n + 1), std::vector<Tensor>{t, t});
  EXPECT_EQ(t.to_vector<float>(), sequential_affine(iota(n + 1), n, 1, 0, 1, 1));

  // The same through two views of one storage, with the output view starting one later.
  Tensor base = kiln::from_vector(iota(n + 2), {n + 2});
  Tensor in = base.narrow(0, 0, n + 1), out = base.narrow(0, 1, n + 1);
  kir::run_kernel(affine_copy(n, 1, 0, 1, 0, n + 1), std::vector<Tensor>{in, out});
  EXPECT_EQ(base.to_vector<float>(), sequential_affine(iota(n + 2), n, 1, 0, 1, 1));

  // Reversed: out[n - 1 - i] = in[i] on one tensor. Iterations past the midpoint read what the
  // first half wrote.
  Tensor r = kiln::from_vector(iota(n), {n});
  kir::run_kernel(affine_copy(n, 1, 0, -1, n - 1, n), std::vector<Tensor>{r, r});
  EXPECT_EQ(r.to_vector<float>(), sequential_affine(iota(n), n, 1, 0, -1, n - 1));
}

TEST(KernelInterpreterEffects, ReductionThroughMemory) {
  // out[0] = out[0] + x[i] for every i: the store and load share the index 0.
  const int64_t n = 600;
  kir::Kernel k;
  k.name = "memory_sum";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat32, false, n);
  kir::BufferId out = b.buffer("out", kiln::kFloat32, true, 1);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId zero = b.iconstant(0);
  ExprId v = b.binary(BinaryOp::Add, b.load(out, zero), b.load(x, b.var_ref(i)));
  k.body.push_back(loop(i, n, {store(out, zero, v)}));
  std::vector<float> xs = iota(n);
  Tensor o = kiln::zeros({1});
  kir::run_kernel(k, std::vector<Tensor>{kiln::from_vector(xs, {n}), o});
  float want = 0;
  for (float f : xs)
    want += f;
  EXPECT_EQ(o.to_vector<float>()[0], want);
}

TEST(KernelInterpreterEffects, PrefixSumReadsTheAccumulatorItUpdates) {
  const int64_t n = 520;
  kir::Kernel k;
  k.name = "cumsum";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat64, false, n);
  kir::BufferId out = b.buffer("out", kiln::kFloat64, true, n);
  kir::VarId i = b.var("i", kiln::kInt64), s = b.var("s", kiln::kFloat64);
  ExprId iv = b.var_ref(i);
  k.body = {accumulator(s, ReduceOp::Sum),
            loop(i, n, {accumulate(s, ReduceOp::Sum, b.load(x, iv)), store(out, iv, b.var_ref(s))},
                 LoopKind::Vector)};
  std::vector<double> xs(static_cast<size_t>(n));
  for (size_t j = 0; j < xs.size(); ++j)
    xs[j] = 0.1 * static_cast<double>(j);
  Tensor o = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kFloat64));
  kir::run_kernel(k, std::vector<Tensor>{kiln::from_vector(xs, {n}), o});
  std::vector<double> got = o.to_vector<double>();
  double acc = 0;
  for (size_t j = 0; j < xs.size(); ++j) {
    acc += xs[j];
    ASSERT_EQ(got[j], acc) << j;
  }
}

// ---- argument checks ----

TEST(KernelInterpreterEffects, RejectsArgumentsThatDoNotFit) {
  kir::Kernel k = affine_copy(8, 1, 0, 1, 0, 8);
  Tensor x = kiln::ones({8}), y = kiln::empty({8});
  EXPECT_TRUE(throws_error_containing([&] { kir::run_kernel(k, std::vector<Tensor>{x}); },
                                      {"kernel affine_copy takes 2 buffers, got 1 tensors"}));
  Tensor d = kiln::ones({8}, kiln::TensorOptions().dtype(kiln::kFloat64));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kir::run_kernel(k, std::vector<Tensor>{d, y});
      },
      {"kernel affine_copy: buffer %in is f32, but argument 0 is f64"}));
  // A view of 6 elements starting 4 before the end of a 10-element storage addresses 4.
  Tensor small = kiln::ones({10}).narrow(0, 6, 4);
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kir::run_kernel(k, std::vector<Tensor>{x, small});
      },
      {"kernel affine_copy: buffer %out has extent 8, but argument 1 (f32 [4], storage offset "
       "6) has only 4 elements from its first"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kir::run_kernel(k, std::vector<Tensor>{Tensor(), y});
      },
      {"argument 0 for buffer %in is an undefined tensor"}));
  // A tensor whose own shape is smaller but whose storage holds the extent is fine: the kernel's
  // indices, not the tensor's strides, say what it reads.
  Tensor head = kiln::from_vector(iota(8), {8}).narrow(0, 0, 2);
  EXPECT_NO_THROW(kir::run_kernel(k, std::vector<Tensor>{head, y}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15}));
}

TEST(KernelInterpreterEffects, VerifiesBeforeRunning) {
  // An index one past the end is rejected before any memory is touched.
  kir::Kernel k = affine_copy(8, 1, 1, 1, 0, 8);
  Tensor x = kiln::ones({8}), y = kiln::zeros({8});
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kir::run_kernel(k, std::vector<Tensor>{x, y});
      },
      {"kernel-IR verifier: kernel affine_copy",
       "ranges over [1, 8], outside the buffer's extent 8"}));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(8, 0.0f));
}

}  // namespace
