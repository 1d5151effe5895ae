#include "kiln/codegen/cuda/eager_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_scalar.h"
#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA flash attention]
// The CUDA kernels of scaled_dot_product_flash_attention compute what the CPU kernels do (Note
// [Flash attention] in runtime/kernels/attention_cpu_kernels.cpp), as simply as they can: one
// block of kEagerAttentionTile threads per (batch entry, tile of 64 queries), a thread per
// query row holding its q row, running max, normalizer and output accumulator in registers
// (arrays of the head-dim bound D, a compile-time constant, zero past E and Ev), while the block
// streams the keys and values through shared memory a chunk at a time. The backward is two
// entries launched in order: the first (block per query tile) forms D = rowsum(dout * out) into
// a workspace and dq; the second (block per tile of 64 keys, a thread per key) streams the
// queries, dout, logsumexp and D and forms dk and dv, so that no two threads add into one
// element and the sums are deterministic. Masked scores are -inf as on the CPU, and fully
// masked rows give 0 with a logsumexp of +inf the same way. Each input is read through its strides
// and per-batch-entry offsets (a device array), so transposed and broadcast inputs need no copy.

namespace {

// The body shared by the three entries: loads with conversion, and the score of (i, j).
const char* const kCommon = R"(
__device__ __forceinline__ @CT@ @SYM@_ld(@ST@ x) { return (@CT@)(@LOAD@); }
__device__ __forceinline__ @CT@ @SYM@_score(@CT@ dot, long long i, long long j, const void* mask,
                                             long long moff, long long mrs, long long mcs,
                                             @CT@ scale, int causal, int mask_kind) {
  @CT@ s = dot * scale;
  if (mask_kind == 1 && ((const unsigned char*)mask)[moff + i * mrs + j * mcs] == 0) s = @NINF@;
  if (mask_kind == 2) s += @SYM@_ld(((const @ST@*)mask)[moff + i * mrs + j * mcs]);
  if (causal && j > i) s = @NINF@;
  return s;
}
// Rows [r0, r0 + n) of a and of b (each through its row and column strides), converted and
// zero-padded to D columns, into shared memory: one chunk of keys and values (or of queries
// and grad_out) staged by the whole block.
__device__ __forceinline__ void @SYM@_stage(@CT@* as, @CT@* bs, const @ST@* a, const @ST@* b,
                                             long long r0, int n, long long ars, long long acs,
                                             long long brs, long long bcs, long long ea,
                                             long long eb) {
  for (int x = threadIdx.x; x < n * @D@; x += blockDim.x) {
    const int c = x / @D@, e = x % @D@;
    as[x] = e < ea ? @SYM@_ld(a[(r0 + c) * ars + e * acs]) : (@CT@)0;
    bs[x] = e < eb ? @SYM@_ld(b[(r0 + c) * brs + e * bcs]) : (@CT@)0;
  }
}
)";

// offs holds the batch entries' element offsets of (q, k, v, mask); st the row and column
// strides of the same four.
const char* const kForward = R"(
extern "C" __global__ void __launch_bounds__(64) @SYM@_forward(
    @ST@* out, @CT@* lse, const @ST@* q, const @ST@* k, const @ST@* v, const void* mask,
    const long long* offs, const long long* st, const long long batch, const long long L,
    const long long S, const long long E, const long long Ev, const @CT@ scale, const int causal,
    const int mask_kind) {
  __shared__ @CT@ ks[@CK@ * @D@];
  __shared__ @CT@ vs[@CK@ * @D@];
  const long long tiles = (L + 63) / 64;
  for (long long t = blockIdx.x; t < batch * tiles; t += gridDim.x) {
    const long long b = t / tiles, r0 = (t % tiles) * 64, i = r0 + threadIdx.x;
    const bool active = i < L;
    const @ST@* qb = q + offs[b];
    const @ST@* kb = k + offs[batch + b];
    const @ST@* vb = v + offs[2 * batch + b];
    const long long moff = mask_kind != 0 ? offs[3 * batch + b] : 0;
    @CT@ qr[@D@], acc[@D@];
    for (int e = 0; e < @D@; ++e) {
      qr[e] = active && e < E ? @SYM@_ld(qb[i * st[0] + e * st[1]]) : (@CT@)0;
      acc[e] = 0;
    }
    @CT@ m = @NINF@, l = 0;
    const long long kend = causal ? (S < r0 + 64 ? S : r0 + 64) : S;
    for (long long j0 = 0; j0 < kend; j0 += @CK@) {
      const int cn = (int)(kend - j0 < @CK@ ? kend - j0 : @CK@);
      __syncthreads();
      @SYM@_stage(ks, vs, kb, vb, j0, cn, st[2], st[3], st[4], st[5], E, Ev);
      __syncthreads();
      if (!active) continue;
      for (int c = 0; c < cn; ++c) {
        @CT@ dot = 0;
        for (int e = 0; e < @D@; ++e) dot += qr[e] * ks[c * @D@ + e];
        const @CT@ s = @SYM@_score(dot, i, j0 + c, mask, moff, st[6], st[7], scale, causal, mask_kind);
        if (s == @NINF@) continue;  // weight 0
        if (s > m) {
          const @CT@ alpha = exp(m - s);
          l *= alpha;
          for (int e = 0; e < @D@; ++e) acc[e] *= alpha;
          m = s;
        }
        const @CT@ p = exp(s - m);
        l += p;
        for (int e = 0; e < @D@; ++e) acc[e] += p * vs[c * @D@ + e];
      }
    }
    if (!active) continue;
    const @CT@ inv = l == 0 ? (@CT@)0 : (@CT@)1 / l;  // every key masked, or none: 0
    for (int e = 0; e < @D@; ++e)
      if (e < Ev) out[(b * L + i) * Ev + e] = @STORE@;
    lse[b * L + i] = l == 0 ? @INF@ : m + log(l);
  }
}
)";

// The two backward entries' shared parameters, and their batch entry's grad_out, q, k and v.
const char* const kBackwardParams =
    R"(@ST@* dq, @ST@* dk, @ST@* dv, @CT@* dsum, const @ST@* g, const @ST@* q, const @ST@* k,
    const @ST@* v, const @ST@* o, const @CT@* lse, const void* mask, const long long* offs,
    const long long* st, const long long batch, const long long L, const long long S,
    const long long E, const long long Ev, const @CT@ scale, const int causal,
    const int mask_kind)";
const char* const kBackwardInputs = R"(    const @ST@* gb = g + offs[b];
    const @ST@* qb = q + offs[batch + b];
    const @ST@* kb = k + offs[2 * batch + b];
    const @ST@* vb = v + offs[3 * batch + b];
)";

// offs: (grad_out, q, k, v, out, mask) per batch entry; st: their row and column strides.
// dsum is a [batch, L] workspace that the first entry writes and the second reads.
const char* const kBackward = R"(
extern "C" __global__ void __launch_bounds__(64) @SYM@_backward_dq(
    @BACKWARD_PARAMS@) {
  __shared__ @CT@ ks[@CK@ * @D@];
  __shared__ @CT@ vs[@CK@ * @D@];
  const long long tiles = (L + 63) / 64;
  for (long long t = blockIdx.x; t < batch * tiles; t += gridDim.x) {
    const long long b = t / tiles, r0 = (t % tiles) * 64, i = r0 + threadIdx.x;
    const bool active = i < L;
@BACKWARD_INPUTS@
    const @ST@* ob = o + offs[4 * batch + b];
    const long long moff = mask_kind != 0 ? offs[5 * batch + b] : 0;
    @CT@ qr[@D@], gr[@D@], acc[@D@];
    @CT@ d = 0;
    for (int e = 0; e < @D@; ++e) {
      qr[e] = active && e < E ? @SYM@_ld(qb[i * st[2] + e * st[3]]) : (@CT@)0;
      gr[e] = active && e < Ev ? @SYM@_ld(gb[i * st[0] + e * st[1]]) : (@CT@)0;
      if (active && e < Ev) d += gr[e] * @SYM@_ld(ob[i * st[8] + e * st[9]]);
      acc[e] = 0;
    }
    const @CT@ li = active ? lse[b * L + i] : (@CT@)0;
    if (active) dsum[b * L + i] = d;
    const long long kend = causal ? (S < r0 + 64 ? S : r0 + 64) : S;
    for (long long j0 = 0; j0 < kend; j0 += @CK@) {
      const int cn = (int)(kend - j0 < @CK@ ? kend - j0 : @CK@);
      __syncthreads();
      @SYM@_stage(ks, vs, kb, vb, j0, cn, st[4], st[5], st[6], st[7], E, Ev);
      __syncthreads();
      if (!active) continue;
      for (int c = 0; c < cn; ++c) {
        @CT@ dot = 0, dp = 0;
        for (int e = 0; e < @D@; ++e) {
          dot += qr[e] * ks[c * @D@ + e];
          dp += gr[e] * vs[c * @D@ + e];
        }
        const @CT@ s = @SYM@_score(dot, i, j0 + c, mask, moff, st[10], st[11], scale, causal, mask_kind);
        const @CT@ ds = exp(s - li) * (dp - d);
        for (int e = 0; e < @D@; ++e) acc[e] += ds * ks[c * @D@ + e];
      }
    }
    if (!active) continue;
    for (int e = 0; e < @D@; ++e)
      if (e < E) dq[(b * L + i) * E + e] = @STORE_DQ@;
  }
}

extern "C" __global__ void __launch_bounds__(64) @SYM@_backward_dkdv(
    @BACKWARD_PARAMS@) {
  __shared__ @CT@ qs[@CK@ * @D@];
  __shared__ @CT@ gs[@CK@ * @D@];
  __shared__ @CT@ ls[@CK@];
  __shared__ @CT@ dl[@CK@];
  const long long tiles = (S + 63) / 64;
  for (long long t = blockIdx.x; t < batch * tiles; t += gridDim.x) {
    const long long b = t / tiles, c0 = (t % tiles) * 64, j = c0 + threadIdx.x;
    const bool active = j < S;
@BACKWARD_INPUTS@
    const long long moff = mask_kind != 0 ? offs[5 * batch + b] : 0;
    @CT@ kr[@D@], vr[@D@], dka[@D@], dva[@D@];
    for (int e = 0; e < @D@; ++e) {
      kr[e] = active && e < E ? @SYM@_ld(kb[j * st[4] + e * st[5]]) : (@CT@)0;
      vr[e] = active && e < Ev ? @SYM@_ld(vb[j * st[6] + e * st[7]]) : (@CT@)0;
      dka[e] = 0;
      dva[e] = 0;
    }
    // Causal: queries before the tile's first key see none of its keys.
    for (long long i0 = causal ? c0 : 0; i0 < L; i0 += @CK@) {
      const int cn = (int)(L - i0 < @CK@ ? L - i0 : @CK@);
      __syncthreads();
      @SYM@_stage(qs, gs, qb, gb, i0, cn, st[2], st[3], st[0], st[1], E, Ev);
      for (int c = threadIdx.x; c < cn; c += 64) {
        ls[c] = lse[b * L + i0 + c];
        dl[c] = dsum[b * L + i0 + c];
      }
      __syncthreads();
      if (!active) continue;
      for (int c = 0; c < cn; ++c) {
        @CT@ dot = 0, dp = 0;
        for (int e = 0; e < @D@; ++e) {
          dot += qs[c * @D@ + e] * kr[e];
          dp += gs[c * @D@ + e] * vr[e];
        }
        const @CT@ s = @SYM@_score(dot, i0 + c, j, mask, moff, st[10], st[11], scale, causal, mask_kind);
        const @CT@ p = exp(s - ls[c]);
        const @CT@ ds = p * (dp - dl[c]);
        for (int e = 0; e < @D@; ++e) {
          dva[e] += p * gs[c * @D@ + e];
          dka[e] += ds * qs[c * @D@ + e];
        }
      }
    }
    if (!active) continue;
    for (int e = 0; e < @D@; ++e) {
      if (e < E) dk[(b * S + j) * E + e] = @STORE_DK@;
      if (e < Ev) dv[(b * S + j) * Ev + e] = @STORE_DV@;
    }
  }
}
)";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string attention_code(const char* body, DType dtype, int head_dim, const std::string& sym) {
  KILN_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kFloat16 || dtype == kBFloat16,
             "cuda attention kernel: dtype {} is not float32, float64, float16 or bfloat16", dtype);
  DType compute = dtype == kFloat64 ? kFloat64 : kFloat32;
  std::string ct(value_type(compute)), st(storage_type(dtype));
  std::string code = std::string(kCommon) + body;
  replace_all(code, "@BACKWARD_PARAMS@", kBackwardParams);
  replace_all(code, "@BACKWARD_INPUTS@\n", kBackwardInputs);
  replace_all(code, "@STORE@", to_storage("acc[e] * inv", dtype));
  replace_all(code, "@STORE_DQ@", to_storage("acc[e] * scale", dtype));
  replace_all(code, "@STORE_DK@", to_storage("dka[e] * scale", dtype));
  replace_all(code, "@STORE_DV@", to_storage("dva[e]", dtype));
  replace_all(code, "@LOAD@", from_storage("x", dtype));
  // Loops over the head dim unroll fully where the arrays fit in registers (D <= 64); larger
  // bounds spill them to local memory anyway, and full unrolling there multiplies NVRTC's time.
  replace_all(code, "for (int e = 0; e < @D@; ++e)",
              fmt::format("\n#pragma unroll {}\n    for (int e = 0; e < @D@; ++e)",
                          head_dim <= 64 ? head_dim : 4));
  replace_all(code, "@NINF@", identity_literal(kir::ReduceOp::Max, compute));  // -inf
  replace_all(code, "@INF@", identity_literal(kir::ReduceOp::Min, compute));   // +inf
  replace_all(code, "@SYM@", sym);
  replace_all(code, "@CT@", ct);
  replace_all(code, "@ST@", st);
  replace_all(code, "@D@", std::to_string(head_dim));
  replace_all(code, "@CK@", std::to_string(eager_attention_chunk(head_dim)));
  return code;
}

std::string symbol(DType dtype, int head_dim, const char* dir) {
  return fmt::format("kiln_eager_attention_{}_{}_d{}", dir, eager_symbol_part(dtype_name(dtype)),
                     head_dim);
}

}  // namespace

int eager_attention_head_dim(int64_t e, int64_t ev) {
  int64_t need = std::max(e, ev);
  for (int d : {32, 64, 128, 256})
    if (need <= d) return d;
  return 0;
}

int eager_attention_chunk(int head_dim) {
  return 2048 / head_dim;  // 2 x chunk x D values of shared memory: 16 KiB of float
}

CudaSource eager_attention_forward_source(DType dtype, int head_dim) {
  std::string sym = symbol(dtype, head_dim, "fwd");
  CudaSource src;
  src.name = sym.substr(5);
  src.code = attention_code(kForward, dtype, head_dim, sym);
  src.entries.push_back(
      CudaEntry{sym + "_forward", Mapping::BlockPerRow, 0, kEagerAttentionTile, 1});
  return src;
}

CudaSource eager_attention_backward_source(DType dtype, int head_dim) {
  std::string sym = symbol(dtype, head_dim, "bwd");
  CudaSource src;
  src.name = sym.substr(5);
  src.code = attention_code(kBackward, dtype, head_dim, sym);
  src.entries.push_back(
      CudaEntry{sym + "_backward_dq", Mapping::BlockPerRow, 0, kEagerAttentionTile, 1});
  src.entries.push_back(
      CudaEntry{sym + "_backward_dkdv", Mapping::BlockPerRow, 0, kEagerAttentionTile, 1});
  return src;
}

}  // namespace kiln::codegen::cuda
