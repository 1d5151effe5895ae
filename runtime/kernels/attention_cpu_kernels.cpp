// The CPU kernels of scaled_dot_product_flash_attention and its backward: blocked ("flash")
// attention, which never forms the L x S score matrix.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kiln/base/half.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/kernels/attention_attrs.h"
#include "kiln/runtime/kernels/attention_ops.h"
#include "kiln/runtime/kernels/float_loop_clones.h"

namespace kiln {

// Note [Flash attention]
// softmax(scale q k^T + mask) v is computed a tile of kBr queries by kBc keys at a time, with the
// softmax done online (Milakov and Gimelshein; Dao et al.): each query row keeps its running
// maximum m, normalizer l and unnormalized output acc, and a new key tile with row maximum m'
// rescales them by exp(m - m'). Only tiles live in memory (per thread: the query tile, one key
// and value tile, the tile's scores and the accumulators), never the L x S matrix, so memory is
// O((L + S) (E + Ev)) where the composite needs O(L S) per batch entry and head. The forward
// also returns logsumexp = m + log(l) per row, from which the backward recomputes each tile's
// probabilities P = exp(s - logsumexp) instead of saving them, with D = rowsum(dout * out):
//   dv += P^T dout, dP = dout v^T, dS = P (dP - D), dq += scale dS k, dk += scale dS^T q.
// Half types are loaded into float tiles; float32 computes in float and float64 in double.
// Masking follows torch's math path: a masked score is -inf, and a row with every key masked (a
// fully false bool mask row, or -inf everywhere) gives an output of 0 and no gradient, as
// torch's safe softmax there (torch 2.5 and later; plain softmax over -inf would give NaN):
// such a row ends with l = 0, its output is taken as 0, and its logsumexp is +inf, so that the
// backward's P = exp(-inf - inf) = 0. is_causal keeps key j for query i when j <= i (torch's
// top-left tril(ones(L, S))): tiles wholly above the diagonal are skipped. With no key at all
// (S = 0) the output is 0, an empty sum, as torch's matmul of empty operands.
//
// The tile products run on tile_mm below, a register-blocked loop (4 rows by 32 float lanes of
// accumulators) that GCC vectorizes, compiled also for AVX-512 (Note [Multiversioned float
// loops]); calling OpenBLAS per 64 x 64 tile from the pool's threads would contend with its own
// threads, and at these sizes its call overhead is a large part of the work.

namespace {

constexpr int64_t kBr = 64;  // queries per tile
constexpr int64_t kBc = 64;  // keys per tile

// C[m, n] (+)= A[m, k] B[k, n]. A is read through strides (a transposed tile is A with its
// strides swapped), B and C are row-major with leading dims ldb and ldc.
template <class C>
KILN_ALWAYS_INLINE void tile_mm_body(int64_t m, int64_t n, int64_t k, const C* a, int64_t a_rs,
                                     int64_t a_cs, const C* b, int64_t ldb, C* c, int64_t ldc,
                                     bool accumulate) {
  constexpr int kR = 4;
  constexpr int kN = 128 / sizeof(C);  // 32 floats or 16 doubles: two AVX-512 vectors
  int64_t i = 0;
  for (; i + kR <= m; i += kR) {
    int64_t j = 0;
    for (; j + kN <= n; j += kN) {
      C acc[kR][kN];
      for (int r = 0; r < kR; ++r)
        for (int jj = 0; jj < kN; ++jj)
          acc[r][jj] = accumulate ? c[(i + r) * ldc + j + jj] : C(0);
      for (int64_t p = 0; p < k; ++p) {
        const C* brow = b + p * ldb + j;
        for (int r = 0; r < kR; ++r) {
          C av = a[(i + r) * a_rs + p * a_cs];
          for (int jj = 0; jj < kN; ++jj)
            acc[r][jj] += av * brow[jj];
        }
      }
      for (int r = 0; r < kR; ++r)
        for (int jj = 0; jj < kN; ++jj)
          c[(i + r) * ldc + j + jj] = acc[r][jj];
    }
    if (j == n) continue;
    for (int r = 0; r < kR; ++r) {
      C* crow = c + (i + r) * ldc;
      if (!accumulate) std::fill(crow + j, crow + n, C(0));
      for (int64_t p = 0; p < k; ++p) {
        C av = a[(i + r) * a_rs + p * a_cs];
        for (int64_t jj = j; jj < n; ++jj)
          crow[jj] += av * b[p * ldb + jj];
      }
    }
  }
  for (; i < m; ++i) {
    C* crow = c + i * ldc;
    if (!accumulate) std::fill(crow, crow + n, C(0));
    for (int64_t p = 0; p < k; ++p) {
      C av = a[i * a_rs + p * a_cs];
      for (int64_t jj = 0; jj < n; ++jj)
        crow[jj] += av * b[p * ldb + jj];
    }
  }
}

KILN_FLOAT_LOOP_CLONES void tile_mm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                                    int64_t a_cs, const float* b, int64_t ldb, float* c,
                                    int64_t ldc, bool accumulate) {
  tile_mm_body<float>(m, n, k, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

void tile_mm(int64_t m, int64_t n, int64_t k, const double* a, int64_t a_rs, int64_t a_cs,
             const double* b, int64_t ldb, double* c, int64_t ldc, bool accumulate) {
  tile_mm_body<double>(m, n, k, a, a_rs, a_cs, b, ldb, c, ldc, accumulate);
}

// p[j] = exp(s[j] - ref) over a row: float through Kiln's vectorizable exp (Note [Vectorized exp
// and tanh]), double through libm. Returns the sum of the p[j].
KILN_FLOAT_LOOP_CLONES float exp_row(float* s, int64_t n, float ref) {
  // The exps first, in a loop of their own (a float sum in the same loop would keep GCC from
  // vectorizing it), then the sum in 16 lanes.
  for (int64_t j = 0; j < n; ++j)
    s[j] = math::exp(s[j] - ref);
  constexpr int kLanes = 16;
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += s[j + l];
  float sum = 0;
  for (; j < n; ++j)
    sum += s[j];
  for (float v : lanes)
    sum += v;
  return sum;
}

double exp_row(double* s, int64_t n, double ref) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - ref);
    sum += s[j];
  }
  return sum;
}

// One input as the kernels read it: its batch entries' offsets and the strides of its last two
// dims, in elements of its dtype.
template <class T>
struct Operand {
  const T* data = nullptr;
  std::vector<int64_t> batch;
  int64_t rs = 0, cs = 0;

  Operand(const Tensor& t, int64_t batch_dims)
      : data(static_cast<const T*>(t.impl()->data())),
        batch(attention_batch_offsets(t, batch_dims)),
        rs(t.stride(t.dim() - 2)),
        cs(t.stride(t.dim() - 1)) {}
  const T* at(int64_t b, int64_t row) const {
    return data + batch[static_cast<size_t>(b)] + row * rs;
  }
};

// x in the compute type: half types through float.
template <class C, class T>
C to_compute(T x) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<C>(x);
  } else {
    return static_cast<C>(static_cast<float>(x));
  }
}

// rows x cols of `src` (row stride rs, column stride cs) into dst in the compute type, row-major
// with leading dim ld, or transposed (dst[c * ld + r]).
template <class C, class T>
void load_tile(const T* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols, C* dst, int64_t ld,
               bool transposed) {
  // The forward loads a key and a value tile per query tile, as much data as its products read:
  // rows with unit column stride (the usual layouts) get a loop the compiler vectorizes.
  int64_t dr = transposed ? 1 : ld, dc = transposed ? ld : 1;
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * rs;
    C* d = dst + r * dr;
    if (cs == 1 && dc == 1) {
      for (int64_t c = 0; c < cols; ++c)
        d[c] = to_compute<C>(s[c]);
    } else if (cs == 1) {
      for (int64_t c = 0; c < cols; ++c)
        d[c * dc] = to_compute<C>(s[c]);
    } else {
      for (int64_t c = 0; c < cols; ++c)
        d[c * dc] = to_compute<C>(s[c * cs]);
    }
  }
}

// What turns a tile of q k^T into scores: the scale, causality and the mask (bool, or T added).
template <class T>
struct Scorer {
  double scale = 1;
  bool causal = false;
  const bool* bool_mask = nullptr;
  const T* add_mask = nullptr;
  std::vector<int64_t> mask_batch;
  int64_t mrs = 0, mcs = 0;

  Scorer(const AttentionAttrs& a, int64_t e, const Tensor* mask, int64_t batch_dims)
      : scale(a.scale_for(e)), causal(a.is_causal) {
    if (mask == nullptr) return;
    if (mask->dtype() == kBool) {
      bool_mask = static_cast<const bool*>(mask->impl()->data());
    } else {
      add_mask = static_cast<const T*>(mask->impl()->data());
    }
    mask_batch = attention_batch_offsets(*mask, batch_dims);
    mrs = mask->stride(mask->dim() - 2);
    mcs = mask->stride(mask->dim() - 1);
  }

  // s[r * ld + c] for query row0 + r and key col0 + c becomes its score.
  template <class C>
  void apply(C* s, int64_t ld, int64_t b, int64_t row0, int64_t rows, int64_t col0,
             int64_t cols) const {
    constexpr C kNegInf = -std::numeric_limits<C>::infinity();
    auto sc = static_cast<C>(scale);
    int64_t mb = mask_batch.empty() ? 0 : mask_batch[static_cast<size_t>(b)];
    for (int64_t r = 0; r < rows; ++r) {
      C* row = s + r * ld;
      for (int64_t c = 0; c < cols; ++c)
        row[c] *= sc;
      int64_t i = row0 + r;
      if (bool_mask != nullptr) {
        const bool* m = bool_mask + mb + i * mrs + col0 * mcs;
        for (int64_t c = 0; c < cols; ++c)
          if (!m[c * mcs]) row[c] = kNegInf;
      } else if (add_mask != nullptr) {
        const T* m = add_mask + mb + i * mrs + col0 * mcs;
        for (int64_t c = 0; c < cols; ++c)
          row[c] += to_compute<C>(m[c * mcs]);
      }
      if (causal) {
        for (int64_t c = std::max<int64_t>(0, i + 1 - col0); c < cols; ++c)
          row[c] = kNegInf;
      }
    }
  }
};

template <class T>
using ComputeOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
void flash_forward(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                   const AttentionAttrs& a) {
  using C = ComputeOf<T>;
  const Tensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
  AttentionSizes z = attention_sizes(q, k, v);
  int64_t nb = q.dim() - 2;
  Operand<T> oq(q, nb), ok(k, nb), ov(v, nb);
  Scorer<T> scorer(a, z.E, a.has_mask ? &inputs[3] : nullptr, nb);
  T* out = static_cast<T*>(outputs[0].impl()->data());
  C* lse = static_cast<C*>(outputs[1].impl()->data());
  const int64_t L = z.L, S = z.S, E = z.E, Ev = z.Ev;
  int64_t tiles = (L + kBr - 1) / kBr;
  parallel_for(0, z.batch * tiles, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qt(static_cast<size_t>(kBr * E)), kt(static_cast<size_t>(E * kBc));
    std::vector<C> vt(static_cast<size_t>(kBc * Ev)), s(static_cast<size_t>(kBr * kBc));
    std::vector<C> acc(static_cast<size_t>(kBr * Ev)), m(kBr), l(kBr);
    for (int64_t task = begin; task < end; ++task) {
      int64_t b = task / tiles, r0 = (task % tiles) * kBr, rn = std::min(kBr, L - r0);
      load_tile(oq.at(b, r0), oq.rs, oq.cs, rn, E, qt.data(), E, false);
      std::fill(m.begin(), m.end(), -std::numeric_limits<C>::infinity());
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      int64_t kend = a.is_causal ? std::min(S, r0 + rn) : S;
      for (int64_t c0 = 0; c0 < kend; c0 += kBc) {
        int64_t cn = std::min(kBc, kend - c0);
        load_tile(ok.at(b, c0), ok.rs, ok.cs, cn, E, kt.data(), kBc, true);
        load_tile(ov.at(b, c0), ov.rs, ov.cs, cn, Ev, vt.data(), Ev, false);
        tile_mm(rn, cn, E, qt.data(), E, 1, kt.data(), kBc, s.data(), kBc, false);
        scorer.apply(s.data(), kBc, b, r0, rn, c0, cn);
        for (int64_t r = 0; r < rn; ++r) {
          C* row = s.data() + r * kBc;
          C mx = m[r];
          for (int64_t c = 0; c < cn; ++c)
            mx = std::max(mx, row[c]);
          // A row masked so far has m = -inf: its terms are exp(-inf) = 0 with any finite ref.
          C ref = mx == -std::numeric_limits<C>::infinity() ? C(0) : mx;
          C alpha = m[r] == mx ? C(1) : static_cast<C>(std::exp(m[r] - ref));
          l[r] = l[r] * alpha + exp_row(row, cn, ref);
          m[r] = mx;
          if (alpha != C(1)) {
            C* ar = acc.data() + r * Ev;
            for (int64_t e = 0; e < Ev; ++e)
              ar[e] *= alpha;
          }
        }
        tile_mm(rn, Ev, cn, s.data(), kBc, 1, vt.data(), Ev, acc.data(), Ev, true);
      }
      T* orow = out + (b * L + r0) * Ev;
      C* lrow = lse + b * L + r0;
      for (int64_t r = 0; r < rn; ++r) {
        // l = 0: every key masked, or S = 0 (Note [Flash attention]).
        bool none = l[r] == C(0);
        C inv = none ? C(0) : C(1) / l[r];
        for (int64_t e = 0; e < Ev; ++e)
          orow[r * Ev + e] = static_cast<T>(acc[static_cast<size_t>(r * Ev + e)] * inv);
        lrow[r] = none ? std::numeric_limits<C>::infinity() : m[r] + std::log(l[r]);
      }
    }
  });
}

template <class T>
void flash_backward(std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                    const AttentionAttrs& a) {
  using C = ComputeOf<T>;
  const Tensor &q = inputs[1], &k = inputs[2], &v = inputs[3];
  AttentionSizes z = attention_sizes(q, k, v);
  int64_t nb = q.dim() - 2;
  Operand<T> og(inputs[0], nb), oq(q, nb), ok(k, nb), ov(v, nb), oo(inputs[4], nb);
  Scorer<T> scorer(a, z.E, a.has_mask ? &inputs[6] : nullptr, nb);
  Tensor lse_c = inputs[5].contiguous();
  const C* lse = static_cast<const C*>(lse_c.impl()->data());
  T* dq = static_cast<T*>(outputs[0].impl()->data());
  T* dk = static_cast<T*>(outputs[1].impl()->data());
  T* dv = static_cast<T*>(outputs[2].impl()->data());
  const int64_t L = z.L, S = z.S, E = z.E, Ev = z.Ev;
  auto sc = static_cast<C>(a.scale_for(E));
  // One task per batch entry: dq sums over every key tile, so it stays in one thread's
  // accumulator (O(L E)), with no atomics and a fixed summation order.
  parallel_for(0, z.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> qc(static_cast<size_t>(L * E)), gc(static_cast<size_t>(L * Ev));
    std::vector<C> dqc(static_cast<size_t>(L * E)), dsum(static_cast<size_t>(L));
    std::vector<C> kc(static_cast<size_t>(kBc * E)), kt(static_cast<size_t>(E * kBc));
    std::vector<C> vt(static_cast<size_t>(Ev * kBc)), p(static_cast<size_t>(kBr * kBc));
    std::vector<C> dp(static_cast<size_t>(kBr * kBc));
    std::vector<C> dkc(static_cast<size_t>(kBc * E)), dvc(static_cast<size_t>(kBc * Ev));
    std::vector<C> orow(static_cast<size_t>(Ev));
    for (int64_t b = begin; b < end; ++b) {
      load_tile(oq.at(b, 0), oq.rs, oq.cs, L, E, qc.data(), E, false);
      load_tile(og.at(b, 0), og.rs, og.cs, L, Ev, gc.data(), Ev, false);
      for (int64_t i = 0; i < L; ++i) {
        load_tile(oo.at(b, i), oo.rs, oo.cs, 1, Ev, orow.data(), Ev, false);
        C d = 0;
        for (int64_t e = 0; e < Ev; ++e)
          d += orow[static_cast<size_t>(e)] * gc[static_cast<size_t>(i * Ev + e)];
        dsum[static_cast<size_t>(i)] = d;
      }
      std::fill(dqc.begin(), dqc.end(), C(0));
      for (int64_t c0 = 0; c0 < S; c0 += kBc) {
        int64_t cn = std::min(kBc, S - c0);
        load_tile(ok.at(b, c0), ok.rs, ok.cs, cn, E, kc.data(), E, false);
        load_tile(ok.at(b, c0), ok.rs, ok.cs, cn, E, kt.data(), kBc, true);
        load_tile(ov.at(b, c0), ov.rs, ov.cs, cn, Ev, vt.data(), kBc, true);
        std::fill(dkc.begin(), dkc.end(), C(0));
        std::fill(dvc.begin(), dvc.end(), C(0));
        // Causal: query tiles wholly above the diagonal (every row i < c0) see none of these keys.
        int64_t first = a.is_causal ? (c0 / kBr) * kBr : 0;
        for (int64_t r0 = first; r0 < L; r0 += kBr) {
          int64_t rn = std::min(kBr, L - r0);
          const C* qi = qc.data() + r0 * E;
          const C* gi = gc.data() + r0 * Ev;
          tile_mm(rn, cn, E, qi, E, 1, kt.data(), kBc, p.data(), kBc, false);
          scorer.apply(p.data(), kBc, b, r0, rn, c0, cn);
          for (int64_t r = 0; r < rn; ++r)
            exp_row(p.data() + r * kBc, cn, lse[b * L + r0 + r]);
          tile_mm(cn, Ev, rn, p.data(), 1, kBc, gi, Ev, dvc.data(), Ev, true);    // P^T dout
          tile_mm(rn, cn, Ev, gi, Ev, 1, vt.data(), kBc, dp.data(), kBc, false);  // dout v^T
          for (int64_t r = 0; r < rn; ++r) {
            C d = dsum[static_cast<size_t>(r0 + r)];
            C* pr = p.data() + r * kBc;
            const C* dpr = dp.data() + r * kBc;
            for (int64_t c = 0; c < cn; ++c)
              pr[c] = pr[c] * (dpr[c] - d);  // dS, in place of P
          }
          tile_mm(rn, E, cn, p.data(), kBc, 1, kc.data(), E, dqc.data() + r0 * E, E, true);
          tile_mm(cn, E, rn, p.data(), 1, kBc, qi, E, dkc.data(), E, true);
        }
        T* dkb = dk + (b * S + c0) * E;
        T* dvb = dv + (b * S + c0) * Ev;
        for (int64_t x = 0; x < cn * E; ++x)
          dkb[x] = static_cast<T>(dkc[static_cast<size_t>(x)] * sc);
        for (int64_t x = 0; x < cn * Ev; ++x)
          dvb[x] = static_cast<T>(dvc[static_cast<size_t>(x)]);
      }
      T* dqb = dq + b * L * E;
      for (int64_t x = 0; x < L * E; ++x)
        dqb[x] = static_cast<T>(dqc[static_cast<size_t>(x)] * sc);
    }
  });
}

template <class Body>
void with_attention_type(DType t, Body&& body) {
  switch (t) {
    case kFloat64:
      body.template operator()<double>();
      break;
    case kFloat16:
      body.template operator()<Half>();
      break;
    case kBFloat16:
      body.template operator()<BFloat16>();
      break;
    default:
      body.template operator()<float>();
  }
}

}  // namespace

void flash_attention_cpu(const OpDef&, std::span<const Tensor> outputs,
                         std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  if (outputs[0].numel() == 0 && outputs[1].numel() == 0) return;
  with_attention_type(inputs[0].dtype(), [&]<class T>() { flash_forward<T>(outputs, inputs, a); });
}

void flash_attention_backward_cpu(const OpDef&, std::span<const Tensor> outputs,
                                  std::span<const Tensor> inputs, const void* attrs) {
  // Every element of the outputs is written: key tiles that no query reaches get 0.
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  with_attention_type(inputs[1].dtype(), [&]<class T>() { flash_backward<T>(outputs, inputs, a); });
}

}  // namespace kiln
