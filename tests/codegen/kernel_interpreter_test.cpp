// The kernel-IR interpreter on hand-built kernels, against straightforward loops in this file:
// a row softmax, strided, transposed and broadcast loads, 16-bit floats, NaN in max/min
// accumulators, integer wraparound and division, and If/else masks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kiln/base/pointwise_math.h"
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
using kir::UnaryOp;

// Every test runs on each executor: the interpreter against loops written here, and the compiled
// backends against the same references.
class KernelExecutor : public testing::TestWithParam<Executor> {};

// Deterministic values in [-4, 4).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) * 8.0f - 4.0f;
  }
  return v;
}

// y[r, :] = softmax(x[r, :]) for an R x C f32 matrix: a parallel loop over rows with a max
// accumulator loop, a sum accumulator loop and a store loop.
kir::Kernel softmax_kernel(int64_t R, int64_t C) {
  kir::Kernel k;
  k.name = "row_softmax";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat32, false, R * C);
  kir::BufferId y = b.buffer("y", kiln::kFloat32, true, R * C);
  kir::VarId r = b.var("r", kiln::kInt64), c0 = b.var("c", kiln::kInt64);
  kir::VarId c1 = b.var("c", kiln::kInt64), c2 = b.var("c", kiln::kInt64);
  kir::VarId mx = b.var("max", kiln::kFloat32), sum = b.var("sum", kiln::kFloat32);
  ExprId row = mul(b, b.var_ref(r), C);
  auto at = [&](kir::VarId c) { return add(b, row, b.var_ref(c)); };
  ExprId e1, e2;
  {
    kir::MathScope scope(b, kiln::kFloat32);
    e1 = kir::exp(kir::Val(b.load(x, at(c1))) - kir::Val(b.var_ref(mx))).id();
    e2 =
        (kir::exp(kir::Val(b.load(x, at(c2))) - kir::Val(b.var_ref(mx))) / kir::Val(b.var_ref(sum)))
            .id();
  }
  k.body.push_back(
      loop(r, R,
           {accumulator(mx, ReduceOp::Max),
            loop(c0, C, {accumulate(mx, ReduceOp::Max, b.load(x, at(c0)))}, LoopKind::Vector),
            accumulator(sum, ReduceOp::Sum),
            loop(c1, C, {accumulate(sum, ReduceOp::Sum, e1)}, LoopKind::Vector),
            loop(c2, C, {store(y, at(c2), e2)}, LoopKind::Vector)},
           LoopKind::Parallel));
  return k;
}

TEST_P(KernelExecutor, RowSoftmaxMatchesADoubleLoop) {
  const int64_t R = 37, C = 300;  // C spans two batches, the second one partial
  std::vector<float> x = values(static_cast<size_t>(R * C), 7);
  Tensor xt = kiln::from_vector(x, {R, C});
  Tensor yt = kiln::empty({R, C});
  run_on(GetParam(), softmax_kernel(R, C), std::vector<Tensor>{xt, yt});
  std::vector<float> y = yt.to_vector<float>();
  for (int64_t r = 0; r < R; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c)
      m = std::max(m, static_cast<double>(x[static_cast<size_t>(r * C + c)]));
    for (int64_t c = 0; c < C; ++c)
      s += std::exp(x[static_cast<size_t>(r * C + c)] - m);
    for (int64_t c = 0; c < C; ++c) {
      double want = std::exp(x[static_cast<size_t>(r * C + c)] - m) / s;
      ASSERT_NEAR(y[static_cast<size_t>(r * C + c)], want, 1e-6 * want + 1e-9)
          << "row " << r << " col " << c;
    }
  }
}

TEST_P(KernelExecutor, ParallelRunsGiveTheSerialResultBitForBit) {
  const int64_t R = 64, C = 513;
  Tensor xt = kiln::from_vector(values(static_cast<size_t>(R * C), 11), {R, C});
  kir::Kernel k = softmax_kernel(R, C);
  int saved = kiln::get_num_threads();
  kiln::set_num_threads(1);
  Tensor serial = kiln::empty({R, C});
  run_on(GetParam(), k, std::vector<Tensor>{xt, serial});
  kiln::set_num_threads(4);
  Tensor parallel = kiln::empty({R, C});
  run_on(GetParam(), k, std::vector<Tensor>{xt, parallel});
  kiln::set_num_threads(saved);
  EXPECT_EQ(serial.to_vector<float>(), parallel.to_vector<float>());
}

// out[i, j] = a[i, j] * 10 + b[j] + c[i], where a is read through strides (a transposed or
// sliced view: the kernel's indices carry them) and b, c broadcast with stride 0.
kir::Kernel strided_kernel(int64_t I, int64_t J, int64_t si, int64_t sj, int64_t a_extent) {
  kir::Kernel k;
  k.name = "strided";
  kir::Builder b(k);
  kir::BufferId a = b.buffer("a", kiln::kFloat32, false, a_extent);
  kir::BufferId bb = b.buffer("b", kiln::kFloat32, false, J);
  kir::BufferId c = b.buffer("c", kiln::kFloat32, false, I);
  kir::BufferId out = b.buffer("out", kiln::kFloat32, true, I * J);
  kir::VarId i = b.var("i", kiln::kInt64), j = b.var("j", kiln::kInt64);
  ExprId iv = b.var_ref(i), jv = b.var_ref(j);
  ExprId value;
  {
    kir::MathScope scope(b, kiln::kFloat32);
    kir::Val av = b.load(a, add(b, mul(b, iv, si), mul(b, jv, sj)));
    value = (av * kir::Val(10) + kir::Val(b.load(bb, jv)) + kir::Val(b.load(c, iv))).id();
  }
  k.body.push_back(
      loop(i, I, {loop(j, J, {store(out, add(b, mul(b, iv, J), jv), value)}, LoopKind::Vector)}));
  return k;
}

TEST_P(KernelExecutor, TransposedSlicedAndBroadcastLoads) {
  const int64_t I = 5, J = 7;
  std::vector<float> base(100);
  for (size_t n = 0; n < base.size(); ++n)
    base[n] = static_cast<float>(n);
  Tensor storage = kiln::from_vector(base, {100});
  std::vector<float> bv = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f};
  std::vector<float> cv = {100, 200, 300, 400, 500};
  Tensor b1 = kiln::from_vector(bv, {J}), c1 = kiln::from_vector(cv, {I});

  // a = storage[3:38].view(7, 5).t(): element (i, j) at 3 + j * 5 + i.
  Tensor a = storage.narrow(0, 3, 35).view({J, I}).t();
  ASSERT_EQ(a.storage_offset(), 3);
  Tensor out = kiln::empty({I, J});
  run_on(GetParam(), strided_kernel(I, J, 1, I, 35), std::vector<Tensor>{a, b1, c1, out});
  std::vector<float> got = out.to_vector<float>();
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      EXPECT_EQ(got[static_cast<size_t>(i * J + j)], static_cast<float>(3 + j * 5 + i) * 10 +
                                                         bv[static_cast<size_t>(j)] +
                                                         cv[static_cast<size_t>(i)])
          << i << ", " << j;

  // a broadcast along i (stride 0): every row reads storage[j].
  Tensor row = storage.narrow(0, 0, J).unsqueeze(0).expand({I, J});
  run_on(GetParam(), strided_kernel(I, J, 0, 1, J), std::vector<Tensor>{row, b1, c1, out});
  got = out.to_vector<float>();
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      EXPECT_EQ(
          got[static_cast<size_t>(i * J + j)],
          static_cast<float>(j) * 10 + bv[static_cast<size_t>(j)] + cv[static_cast<size_t>(i)]);
}

// Note [Kernel IR dtypes]: u8, i8 and i16 load widened to i32, compute there and wrap when
// cast back. out = u8(x * 3 - 1) for u8 x; i8(y * 3 - 1) for i8 y; i16(z * z) for i16 z; and
// i8(f) for an f32 f in range. References: closed forms mod 2^bits.
TEST_P(KernelExecutor, SmallIntegersLoadComputeInI32AndWrapOnStore) {
  std::vector<uint8_t> xs = {0, 1, 85, 86, 200, 255};
  std::vector<int8_t> ys = {-128, -1, 0, 42, 43, 127};
  std::vector<int16_t> zs = {-32768, -182, 0, 181, 182, 32767};
  std::vector<float> fs = {-128.9f, -1.5f, 0.0f, 0.99f, 100.5f, 127.0f};
  auto n = static_cast<int64_t>(xs.size());
  kir::Kernel k;
  k.name = "small_ints";
  kir::Builder b(k);
  kir::BufferId bx = b.buffer("x", kiln::kUInt8, false, n);
  kir::BufferId by = b.buffer("y", kiln::kInt8, false, n);
  kir::BufferId bz = b.buffer("z", kiln::kInt16, false, n);
  kir::BufferId bf = b.buffer("f", kiln::kFloat32, false, n);
  kir::BufferId ox = b.buffer("ox", kiln::kUInt8, true, n);
  kir::BufferId oy = b.buffer("oy", kiln::kInt8, true, n);
  kir::BufferId oz = b.buffer("oz", kiln::kInt16, true, n);
  kir::BufferId of = b.buffer("of", kiln::kInt8, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i), vx, vy, vz, vf;
  {
    kir::MathScope scope(b, kiln::kInt32);
    kir::Val x = kir::to_compute(b.load(bx, iv), kiln::kUInt8);
    kir::Val y = kir::to_compute(b.load(by, iv), kiln::kInt8);
    kir::Val z = kir::to_compute(b.load(bz, iv), kiln::kInt16);
    EXPECT_EQ(x.dtype(), kiln::kInt32);
    vx = (x * kir::Val(3) - kir::Val(1)).id();
    vy = (y * kir::Val(3) - kir::Val(1)).id();
    vz = (z * z).id();
    vf = kir::cast(b.load(bf, iv), kiln::kInt8).id();
  }
  k.body.push_back(
      loop(i, n, {store(ox, iv, vx), store(oy, iv, vy), store(oz, iv, vz), store(of, iv, vf)},
           LoopKind::Vector));
  std::vector<Tensor> args = {kiln::from_vector(xs), kiln::from_vector(ys), kiln::from_vector(zs),
                              kiln::from_vector(fs)};
  for (kiln::DType t : {kiln::kUInt8, kiln::kInt8, kiln::kInt16, kiln::kInt8})
    args.push_back(kiln::empty({n}, kiln::TensorOptions().dtype(t)));
  run_on(GetParam(), k, args);
  auto wrap = [](int64_t v, int bits, bool is_signed) {
    int64_t m = int64_t{1} << bits, r = ((v % m) + m) % m;
    return is_signed && r >= m / 2 ? r - m : r;
  };
  auto gx = args[4].to_vector<uint8_t>();
  auto gy = args[5].to_vector<int8_t>();
  auto gz = args[6].to_vector<int16_t>();
  auto gf = args[7].to_vector<int8_t>();
  for (size_t j = 0; j < xs.size(); ++j) {
    EXPECT_EQ(gx[j], wrap(int64_t{xs[j]} * 3 - 1, 8, false)) << j;
    EXPECT_EQ(gy[j], wrap(int64_t{ys[j]} * 3 - 1, 8, true)) << j;
    EXPECT_EQ(gz[j], wrap(int64_t{zs[j]} * zs[j], 16, true)) << j;
    EXPECT_EQ(gf[j], static_cast<int64_t>(std::trunc(fs[j]))) << j;
  }
}

TEST_P(KernelExecutor, HalfAndBFloat16LoadAndStore) {
  // out16 = f16(x * 3), out_bf = bf16(x * 3), wide = f64(x) for x an f16 input, computed in f32.
  std::vector<float> xs = {1.0f, 0.1f, -2.5f, 65504.0f, 1e-7f, 3.14159f};
  std::vector<kiln::Half> hs(xs.begin(), xs.end());
  auto n = static_cast<int64_t>(hs.size());
  kir::Kernel k;
  k.name = "halves";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("x", kiln::kFloat16, false, n);
  kir::BufferId o16 = b.buffer("o16", kiln::kFloat16, true, n);
  kir::BufferId obf = b.buffer("obf", kiln::kBFloat16, true, n);
  kir::BufferId o64 = b.buffer("o64", kiln::kFloat64, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i), tripled, widened;
  {
    kir::MathScope scope(b, kiln::kFloat32);
    kir::Val x = kir::to_compute(b.load(in, iv), kiln::kFloat16);
    tripled = (x * kir::Val(3)).id();
    widened = kir::cast(b.load(in, iv), kiln::kFloat64).id();
  }
  k.body.push_back(loop(i, n,
                        {store(o16, iv, tripled), store(obf, iv, tripled), store(o64, iv, widened)},
                        LoopKind::Vector));
  Tensor x = kiln::from_vector(hs, {n});
  Tensor t16 = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kFloat16));
  Tensor tbf = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kBFloat16));
  Tensor t64 = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kFloat64));
  run_on(GetParam(), k, std::vector<Tensor>{x, t16, tbf, t64});
  auto g16 = t16.to_vector<kiln::Half>();
  auto gbf = tbf.to_vector<kiln::BFloat16>();
  auto g64 = t64.to_vector<double>();
  for (size_t j = 0; j < hs.size(); ++j) {
    float v = static_cast<float>(hs[j]);
    EXPECT_EQ(g16[j].bits, kiln::Half(v * 3.0f).bits) << j;  // 65504 * 3 overflows to inf
    EXPECT_EQ(gbf[j].bits, kiln::BFloat16(v * 3.0f).bits) << j;
    EXPECT_EQ(g64[j], static_cast<double>(v)) << j;
  }
}

TEST_P(KernelExecutor, StoresRoundToNearestEvenIn16Bits) {
  // 1 + 2^-11 lies halfway between the f16 neighbours 1 and 1 + 2^-10: it rounds to 1 (even);
  // 1 + 3 * 2^-11 rounds up to 1 + 2^-9. A NaN stays NaN in both formats.
  std::vector<double> xs = {1 + 0x1p-11, 1 + 3 * 0x1p-11, 1 + 0x1p-8, std::nan("")};
  auto n = static_cast<int64_t>(xs.size());
  kir::Kernel k;
  k.name = "round16";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("x", kiln::kFloat64, false, n);
  kir::BufferId o16 = b.buffer("o16", kiln::kFloat16, true, n);
  kir::BufferId obf = b.buffer("obf", kiln::kBFloat16, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i);
  k.body.push_back(loop(i, n, {store(o16, iv, b.load(in, iv)), store(obf, iv, b.load(in, iv))}));
  Tensor t16 = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kFloat16));
  Tensor tbf = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kBFloat16));
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(xs, {n}), t16, tbf});
  auto g16 = t16.to_vector<kiln::Half>();
  auto gbf = tbf.to_vector<kiln::BFloat16>();
  EXPECT_EQ(static_cast<float>(g16[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(g16[1]), 1.0f + 0x1p-9f);
  EXPECT_EQ(static_cast<float>(gbf[2]), 1.0f);  // bf16 keeps 7 fraction bits: 1 + 2^-8 ties to 1
  EXPECT_TRUE(std::isnan(static_cast<float>(g16[3])));
  EXPECT_TRUE(std::isnan(static_cast<float>(gbf[3])));
}

// out[r] = reduce(x[r, :]) with `op`, for rows of length C.
std::vector<float> reduce_rows(Executor e, ReduceOp op, const std::vector<float>& x, int64_t C) {
  auto R = static_cast<int64_t>(x.size()) / C;
  kir::Kernel k;
  k.name = "reduce_rows";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("x", kiln::kFloat32, false, R * C);
  kir::BufferId out = b.buffer("out", kiln::kFloat32, true, R);
  kir::VarId r = b.var("r", kiln::kInt64), c = b.var("c", kiln::kInt64);
  kir::VarId a = b.var("a", kiln::kFloat32);
  ExprId rv = b.var_ref(r);
  k.body.push_back(
      loop(r, R,
           {accumulator(a, op),
            loop(c, C, {accumulate(a, op, b.load(in, add(b, mul(b, rv, C), b.var_ref(c))))},
                 LoopKind::Vector),
            store(out, rv, b.var_ref(a))},
           LoopKind::Parallel));
  Tensor o = kiln::empty({R});
  run_on(e, k, std::vector<Tensor>{kiln::from_vector(x, {R * C}), o});
  return o.to_vector<float>();
}

TEST_P(KernelExecutor, MaxAndMinAccumulatorsPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  // Rows of 4: NaN in the middle, NaN first, NaN last, no NaN, all -inf.
  std::vector<float> x = {1,  nan, 3, 2,  nan, 5, 6,    7,    9,    8,
                          -1, nan, 1, -2, 4,   3, -inf, -inf, -inf, -inf};
  std::vector<float> mx = reduce_rows(GetParam(), ReduceOp::Max, x, 4);
  std::vector<float> mn = reduce_rows(GetParam(), ReduceOp::Min, x, 4);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::isnan(mx[static_cast<size_t>(r)])) << r;
    EXPECT_TRUE(std::isnan(mn[static_cast<size_t>(r)])) << r;
  }
  EXPECT_EQ(mx[3], 4.0f);
  EXPECT_EQ(mn[3], -2.0f);
  EXPECT_EQ(mx[4], -inf);
  EXPECT_EQ(mn[4], -inf);
  // The interpreter sums and multiplies in order, as a sequential loop. Compiled code may split
  // a Vector loop's accumulates over partial accumulators (the loop kind's promise): its result
  // is within the rounding of any order, n eps sum |v| (and the relative analogue for products).
  std::vector<float> y = values(1000, 3);
  float want = 0, want_p = 1;
  double abs_sum = 0;
  for (float v : y) {
    want += v;
    want_p *= v / 4;
    abs_sum += std::abs(v);
  }
  std::vector<float> q = y;
  for (float& v : q)
    v /= 4;
  float got = reduce_rows(GetParam(), ReduceOp::Sum, y, 1000)[0];
  float got_p = reduce_rows(GetParam(), ReduceOp::Prod, q, 1000)[0];
  if (GetParam() == Executor::Interpreter) {
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_p, want_p);
  } else {
    double eps = std::numeric_limits<float>::epsilon();
    EXPECT_NEAR(got, want, 1000 * eps * abs_sum);
    EXPECT_NEAR(got_p, want_p, 1000 * eps * std::abs(want_p));
  }
}

// Rows long enough that compiled code runs them in vector lanes with several partial maxima
// (Note [NaN flags]): a NaN anywhere, in the first or last lane of a vector, in the body or the
// scalar tail, still makes the row's max and min NaN; rows without one match a plain loop.
TEST_P(KernelExecutor, MaxAndMinPropagateNaNFromAnyLaneOfALongRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t C = 1001;  // 62 vectors of 16 and a tail of 9
  const std::vector<int64_t> nan_at = {0, 15, 16, 63, 64, 500, 991, 992, 1000};
  std::vector<float> base = values(static_cast<size_t>(C), 11);
  std::vector<float> x;
  for (int64_t p : nan_at) {
    std::vector<float> row = base;
    row[static_cast<size_t>(p)] = nan;
    x.insert(x.end(), row.begin(), row.end());
  }
  x.insert(x.end(), base.begin(), base.end());
  std::vector<float> mx = reduce_rows(GetParam(), ReduceOp::Max, x, C);
  std::vector<float> mn = reduce_rows(GetParam(), ReduceOp::Min, x, C);
  for (size_t r = 0; r < nan_at.size(); ++r) {
    EXPECT_TRUE(std::isnan(mx[r])) << "NaN at " << nan_at[r];
    EXPECT_TRUE(std::isnan(mn[r])) << "NaN at " << nan_at[r];
  }
  float want_max = -INFINITY, want_min = INFINITY;
  for (float v : base) {
    want_max = v > want_max ? v : want_max;
    want_min = v < want_min ? v : want_min;
  }
  EXPECT_EQ(mx.back(), want_max);
  EXPECT_EQ(mn.back(), want_min);
}

// out[i] = op(a[i], b[i]) on i32 or i64 operands.
template <class T>
std::vector<T> int_binary(Executor e, BinaryOp op, const std::vector<T>& a,
                          const std::vector<T>& bv) {
  kiln::DType t = kiln::dtype_of<T>;
  auto n = static_cast<int64_t>(a.size());
  kir::Kernel k;
  k.name = "int_binary";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("a", t, false, n), y = b.buffer("b", t, false, n);
  kir::BufferId out = b.buffer("out", t, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i);
  k.body.push_back(
      loop(i, n, {store(out, iv, b.binary(op, b.load(x, iv), b.load(y, iv)))}, LoopKind::Vector));
  Tensor o = kiln::empty({n}, kiln::TensorOptions().dtype(t));
  run_on(e, k, std::vector<Tensor>{kiln::from_vector(a, {n}), kiln::from_vector(bv, {n}), o});
  return o.to_vector<T>();
}

TEST_P(KernelExecutor, IntegerArithmeticWraps) {
  const int32_t kMax = INT32_MAX, kMin = INT32_MIN;
  EXPECT_EQ(int_binary<int32_t>(GetParam(), BinaryOp::Add, {kMax, kMin, 5}, {1, -1, -7}),
            (std::vector<int32_t>{kMin, kMax, -2}));
  EXPECT_EQ(int_binary<int32_t>(GetParam(), BinaryOp::Sub, {kMin, 0}, {1, kMin}),
            (std::vector<int32_t>{kMax, kMin}));
  EXPECT_EQ(int_binary<int32_t>(GetParam(), BinaryOp::Mul, {65536, -3}, {65536, 7}),
            (std::vector<int32_t>{0, -21}));
  EXPECT_EQ(int_binary<int64_t>(GetParam(), BinaryOp::Mul, {INT64_MAX, 1LL << 62}, {2, 4}),
            (std::vector<int64_t>{-2, 0}));
  // Truncating division; MIN / -1 wraps to MIN with remainder 0.
  EXPECT_EQ(int_binary<int32_t>(GetParam(), BinaryOp::Div, {-7, 7, -7, kMin}, {2, -2, -2, -1}),
            (std::vector<int32_t>{-3, -3, 3, kMin}));
  EXPECT_EQ(int_binary<int32_t>(GetParam(), BinaryOp::Rem, {-7, 7, -7, kMin}, {2, -2, -2, -1}),
            (std::vector<int32_t>{-1, 1, -1, 0}));
  EXPECT_EQ(int_binary<int64_t>(GetParam(), BinaryOp::Pow, {2, 3, -2, 5, 2}, {62, 3, 3, -1, 64}),
            (std::vector<int64_t>{1LL << 62, 27, -8, 0, 0}));
}

TEST_P(KernelExecutor, IntegerNegAbsAndSumAccumulatorWrap) {
  std::vector<int32_t> x = {INT32_MIN, -5, INT32_MAX, 7};
  auto n = static_cast<int64_t>(x.size());
  kir::Kernel k;
  k.name = "neg_abs";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("x", kiln::kInt32, false, n);
  kir::BufferId neg = b.buffer("neg", kiln::kInt32, true, n);
  kir::BufferId abs = b.buffer("abs", kiln::kInt32, true, n);
  kir::BufferId sum = b.buffer("sum", kiln::kInt32, true, 1);
  kir::VarId i = b.var("i", kiln::kInt64), s = b.var("s", kiln::kInt32);
  ExprId iv = b.var_ref(i), xv = b.load(in, iv);
  k.body = {accumulator(s, ReduceOp::Sum),
            loop(i, n,
                 {store(neg, iv, b.unary(UnaryOp::Neg, xv)),
                  store(abs, iv, b.unary(UnaryOp::Abs, xv)), accumulate(s, ReduceOp::Sum, xv)},
                 LoopKind::Vector),
            store(sum, b.iconstant(0), b.var_ref(s))};
  Tensor tn = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kInt32));
  Tensor ta = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kInt32));
  Tensor ts = kiln::empty({1}, kiln::TensorOptions().dtype(kiln::kInt32));
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(x, {n}), tn, ta, ts});
  EXPECT_EQ(tn.to_vector<int32_t>(), (std::vector<int32_t>{INT32_MIN, 5, -INT32_MAX, -7}));
  EXPECT_EQ(ta.to_vector<int32_t>(), (std::vector<int32_t>{INT32_MIN, 5, INT32_MAX, 7}));
  // INT32_MIN - 5 + INT32_MAX + 7 = 1 with wraparound.
  EXPECT_EQ(ts.to_vector<int32_t>(), (std::vector<int32_t>{1}));
}

TEST_P(KernelExecutor, CastsFollowStaticCast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {2.9f, -2.9f, 3e9f, -3e9f, nan, INFINITY, 0.0f, -0.5f};
  auto n = static_cast<int64_t>(x.size());
  kir::Kernel k;
  k.name = "casts";
  kir::Builder b(k);
  kir::BufferId in = b.buffer("x", kiln::kFloat32, false, n);
  kir::BufferId i32 = b.buffer("i32", kiln::kInt32, true, n);
  kir::BufferId i64 = b.buffer("i64", kiln::kInt64, true, n);
  kir::BufferId b8 = b.buffer("b8", kiln::kBool, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i), xv = b.load(in, iv);
  k.body.push_back(loop(i, n,
                        {store(i32, iv, b.cast(xv, kiln::kInt32)),
                         store(i64, iv, b.cast(xv, kiln::kInt64)), store(b8, iv, xv)},
                        LoopKind::Vector));
  Tensor t32 = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kInt32));
  Tensor t64 = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kInt64));
  Tensor tb = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kBool));
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(x, {n}), t32, t64, tb});
  // Out of range and NaN give the minimum (x86's cvtt result), not undefined behaviour.
  EXPECT_EQ(t32.to_vector<int32_t>(),
            (std::vector<int32_t>{2, -2, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 0, 0}));
  EXPECT_EQ(t64.to_vector<int64_t>(),
            (std::vector<int64_t>{2, -2, 3000000000LL, -3000000000LL, INT64_MIN, INT64_MIN, 0, 0}));
  EXPECT_EQ(tb.to_vector<bool>(),
            (std::vector<bool>{true, true, true, true, true, true, false, true}));
}

TEST_P(KernelExecutor, IfElseRunsUnderLaneMasks) {
  // out[i] = i % 3 == 0 ? (i % 2 == 0 ? 1000 + i : 2000 + i) : x[i] / (i % 3), in i64, for
  // i in 0..600 (three batches). The division by i % 3 only runs where it is nonzero.
  const int64_t n = 600;
  kir::Kernel k;
  k.name = "masks";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kInt64, false, n);
  kir::BufferId out = b.buffer("out", kiln::kInt64, true, n);
  kir::VarId i = b.var("i", kiln::kInt64), t = b.var("t", kiln::kInt64);
  ExprId iv = b.var_ref(i);
  ExprId m3 = b.binary(BinaryOp::Rem, iv, b.iconstant(3));
  ExprId zero = b.iconstant(0);
  ExprId even = b.binary(BinaryOp::Eq, b.binary(BinaryOp::Rem, iv, b.iconstant(2)), zero);
  k.body.push_back(
      loop(i, n,
           {if_(b.binary(BinaryOp::Eq, m3, zero),
                {if_(even, {store(out, iv, add(b, iv, b.iconstant(1000)))},
                     {let(t, add(b, iv, b.iconstant(2000))), store(out, iv, b.var_ref(t))})},
                {store(out, iv, b.binary(BinaryOp::Div, b.load(x, iv), m3))})},
           LoopKind::Vector));
  std::vector<int64_t> xs(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    xs[static_cast<size_t>(j)] = 7 * j - 1000;
  Tensor o = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kInt64));
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(xs, {n}), o});
  std::vector<int64_t> got = o.to_vector<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    int64_t want =
        j % 3 == 0 ? (j % 2 == 0 ? 1000 + j : 2000 + j) : xs[static_cast<size_t>(j)] / (j % 3);
    ASSERT_EQ(got[static_cast<size_t>(j)], want) << j;
  }
}

TEST_P(KernelExecutor, IntegerDivisionByZeroThrows) {
  Executor e = GetParam();
  EXPECT_TRUE(throws_error_containing(
      [e] {
        int_binary<int32_t>(e, BinaryOp::Div, {1, 2, 3}, {1, 0, 1});
      },
      {"kernel int_binary: integer division by zero in `load %a[%i] / load %b[%i]`"}));
  EXPECT_TRUE(throws_error_containing([e] { int_binary<int64_t>(e, BinaryOp::Rem, {1}, {0}); },
                                      {"integer division by zero"}));
}

TEST_P(KernelExecutor, PerLaneAccumulatorsAndOuterLets) {
  // For each (r, c): acc = sum over k < 3 of x[r, c] * k + bias(r), with the accumulator
  // declared inside the vector loop (one per lane) and bias a let of the outer loop.
  const int64_t R = 3, C = 300;
  kir::Kernel k;
  k.name = "lanes";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat64, false, R * C);
  kir::BufferId out = b.buffer("out", kiln::kFloat64, true, R * C);
  kir::VarId r = b.var("r", kiln::kInt64), c = b.var("c", kiln::kInt64);
  kir::VarId bias = b.var("bias", kiln::kFloat64), a = b.var("a", kiln::kFloat64);
  ExprId idx = add(b, mul(b, b.var_ref(r), C), b.var_ref(c));
  ExprId xv = b.load(x, idx);
  ExprId bias_value = b.cast(b.var_ref(r), kiln::kFloat64);
  std::vector<kir::Stmt> body = {accumulator(a, ReduceOp::Sum)};
  for (int kk = 0; kk < 3; ++kk)
    body.push_back(
        accumulate(a, ReduceOp::Sum, b.binary(BinaryOp::Mul, xv, b.constant(kk, kiln::kFloat64))));
  body.push_back(store(out, idx, b.binary(BinaryOp::Add, b.var_ref(a), b.var_ref(bias))));
  k.body.push_back(
      loop(r, R, {let(bias, bias_value), loop(c, C, std::move(body), LoopKind::Vector)}));
  std::vector<double> xs(static_cast<size_t>(R * C));
  for (size_t j = 0; j < xs.size(); ++j)
    xs[j] = 0.25 * static_cast<double>(j);
  Tensor o = kiln::empty({R * C}, kiln::TensorOptions().dtype(kiln::kFloat64));
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(xs, {R * C}), o});
  std::vector<double> got = o.to_vector<double>();
  for (int64_t rr = 0; rr < R; ++rr)
    for (int64_t cc = 0; cc < C; ++cc) {
      double v = xs[static_cast<size_t>(rr * C + cc)];
      ASSERT_EQ(got[static_cast<size_t>(rr * C + cc)], 0.0 + v * 0 + v * 1 + v * 2 + rr);
    }
}

TEST_P(KernelExecutor, BoolBuffers) {
  std::vector<bool> m = {true, false, true, true, false};
  std::vector<float> x = {1, 2, 3, 4, 5};
  auto n = static_cast<int64_t>(m.size());
  // masked_fill(x, m, -1), and !m.
  kir::Kernel k;
  k.name = "bools";
  kir::Builder b(k);
  kir::BufferId xb = b.buffer("x", kiln::kFloat32, false, n);
  kir::BufferId mb = b.buffer("m", kiln::kBool, false, n);
  kir::BufferId o = b.buffer("o", kiln::kFloat32, true, n);
  kir::BufferId nm = b.buffer("nm", kiln::kBool, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i);
  ExprId filled, negated;
  {
    kir::MathScope scope(b, kiln::kFloat32);
    kir::Val mask = b.load(mb, iv);
    filled = kiln::math::masked_fill(kir::Val(b.load(xb, iv)), mask, kir::Val(-1)).id();
    negated = kiln::math::logical_not(mask).id();
  }
  k.body.push_back(loop(i, n, {store(o, iv, filled), store(nm, iv, negated)}));
  Tensor to = kiln::empty({n}), tn = kiln::empty({n}, kiln::TensorOptions().dtype(kiln::kBool));
  run_on(GetParam(), k,
         std::vector<Tensor>{kiln::from_vector(x, {n}), kiln::from_vector(m, {n}), to, tn});
  EXPECT_EQ(to.to_vector<float>(), (std::vector<float>{-1, 2, -1, -1, 5}));
  EXPECT_EQ(tn.to_vector<bool>(), (std::vector<bool>{false, true, false, false, true}));
}

}  // namespace

namespace {

// Lanes computed under an If's mask hold placeholders where the mask is off; an expression
// reused after the If must be computed again for every lane.
TEST_P(KernelExecutor, MaskedResultsAreNotReusedOutsideTheirBranch) {
  const int64_t n = 10;
  kir::Kernel k;
  k.name = "remask";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kInt64, false, n);
  kir::BufferId d = b.buffer("d", kiln::kInt64, false, n);
  kir::BufferId o = b.buffer("o", kiln::kInt64, true, n);
  kir::BufferId o2 = b.buffer("o2", kiln::kInt64, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  ExprId iv = b.var_ref(i), dv = b.load(d, iv);
  ExprId q = b.binary(BinaryOp::Div, b.load(x, iv), dv);
  ExprId nonzero = b.binary(BinaryOp::Ne, dv, b.iconstant(0));
  k.body.push_back(
      loop(i, n, {if_(nonzero, {store(o, iv, q)}), store(o2, iv, q)}, LoopKind::Vector));
  std::vector<int64_t> xs(n, 12), ds = {1, 2, 3, 4, 0, 6, 1, 2, 3, 4};
  Tensor to = kiln::zeros({n}, kiln::TensorOptions().dtype(kiln::kInt64));
  Tensor to2 = kiln::zeros({n}, kiln::TensorOptions().dtype(kiln::kInt64));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        run_on(
            GetParam(), k,
            std::vector<Tensor>{kiln::from_vector(xs, {n}), kiln::from_vector(ds, {n}), to, to2});
      },
      {"kernel remask: integer division by zero in `load %x[%i] / load %d[%i]`"}));
}

TEST_P(KernelExecutor, MaskedAccumulateCountsOnlyActiveLanes) {
  // count = number of x[i] > 0, and sum of those x[i], over 1000 elements (four batches).
  const int64_t n = 1000;
  std::vector<float> xs = values(static_cast<size_t>(n), 5);
  kir::Kernel k;
  k.name = "count";
  kir::Builder b(k);
  kir::BufferId x = b.buffer("x", kiln::kFloat32, false, n);
  kir::BufferId o = b.buffer("o", kiln::kInt64, true, 1);
  kir::BufferId s = b.buffer("s", kiln::kFloat32, true, 1);
  kir::VarId i = b.var("i", kiln::kInt64), c = b.var("c", kiln::kInt64);
  kir::VarId a = b.var("a", kiln::kFloat32);
  ExprId xv = b.load(x, b.var_ref(i));
  ExprId positive = b.binary(BinaryOp::Lt, b.constant(0, kiln::kFloat32), xv);
  k.body = {accumulator(c, ReduceOp::Sum), accumulator(a, ReduceOp::Sum),
            loop(i, n,
                 {if_(positive, {accumulate(c, ReduceOp::Sum, b.iconstant(1)),
                                 accumulate(a, ReduceOp::Sum, xv)})},
                 LoopKind::Vector),
            store(o, b.iconstant(0), b.var_ref(c)), store(s, b.iconstant(0), b.var_ref(a))};
  Tensor to = kiln::empty({1}, kiln::TensorOptions().dtype(kiln::kInt64)), ts = kiln::empty({1});
  run_on(GetParam(), k, std::vector<Tensor>{kiln::from_vector(xs, {n}), to, ts});
  int64_t count = 0;
  float sum = 0;
  for (float v : xs) {
    if (v > 0) {
      ++count;
      sum += v;
    }
  }
  EXPECT_EQ(to.to_vector<int64_t>()[0], count);
  EXPECT_EQ(ts.to_vector<float>()[0], sum);
}

INSTANTIATE_TEST_SUITE_P(Executors, KernelExecutor, testing::ValuesIn(executors()), executor_name);

}  // namespace
