#include "kiln/codegen/cuda/eager_normalization.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kiln/codegen/cuda/cuda_scalar.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA normalization kernels]
// softmax, log_softmax and layer_norm are row programs (Note [Row programs] in
// runtime/kernels/row_programs.cpp): kernel IR from which their eager CUDA kernel is generated,
// a block per row that reads the row once per pass. The entries written here are faster where
// they apply (contiguous rows of up to 4096 elements, 16-byte aligned): each thread keeps its
// share of the row in registers (Note [Row-cached normalization entries]), so the row is read
// from memory once, not three times. Their arithmetic is the row program's: 16-bit floats are
// computed in float32; softmax subtracts the row's max before exp and multiplies by 1 / sum
// rounded once; log_softmax is x - (max + log(sum)), the shift rounded once; layer_norm takes
// the mean, then the mean of squared deviations (two passes, not E[x^2] - E[x]^2, which
// cancels), rounds both to the compute type, and applies the optional weight and bias after
// normalizing. exp and log are the emitter's (cuda_scalar.h's unary_code), so a float32 exp is
// the same polynomial as on the CPU; the sums differ from the generated kernel's in order only.

namespace {

constexpr int kBlock = 256;
constexpr int kCachedElements = 16;      // per thread of a block-per-row entry
constexpr int kWarpCachedElements = 32;  // per lane of a warp-per-row entry
constexpr int kWarpsPerBlock = kBlock / 32;

// Who holds a row (Note [Row-cached normalization entries]): a block (`thread` its thread,
// `stride` its size) or a warp (its lane, 32); at most `elements` cached elements each.
struct CacheShape {
  const char* thread;
  const char* stride;
  int elements;
  bool warp;
};
constexpr CacheShape kBlockRows{"threadIdx.x", "blockDim.x", kCachedElements, false};
constexpr CacheShape kWarpRows{"lane", "32", kWarpCachedElements, true};

DType compute_of(DType t) {
  return element_size(t) == 2 ? kFloat32 : t;
}

std::string load(const std::string& at, DType t) {
  return convert(from_storage(at, t), t, compute_of(t));
}

std::string store(const std::string& v, DType t) {
  return to_storage(convert(v, compute_of(t), t), t);
}

std::string name_of(DType t) {
  return eager_symbol_part(fmt::format("{}", t));
}

// Note [Row-cached normalization entries]
// The entries of each normalization kernel here hold each thread's share of the row in
// registers: the row is read from memory once, in 16-byte vector loads, instead of once per
// pass, and written back in 16-byte stores. Two shapes:
// - a block per row: thread t owns the 16-byte chunks t, t + blockDim.x, ..., up to
//   kCachedElements elements, so rows of up to kBlock * kCachedElements elements fit;
// - a warp per row, for rows of up to 32 * kWarpCachedElements: lane l owns chunks l, l + 32,
//   ..., the reductions are warp shuffles alone, and a block runs kWarpsPerBlock rows at once
//   with no __syncthreads, which keeps far more loads in flight on short rows.
// The host picks one (eager_normalization_entry) for contiguous rows whose length is a multiple
// of the chunk and whose pointers are 16-byte aligned.

// Elements of `t` in one 16-byte chunk.
int chunk_elements(DType t) {
  return static_cast<int>(16 / element_size(t));
}

// `body` (which may use c, the chunk's number, and j0, its first column) for each 16-byte chunk
// of the row that this thread (or lane) owns and that lies within the row.
std::string for_chunks(const CacheShape& shape, DType t, const std::string& body) {
  return fmt::format(
      "    #pragma unroll\n"
      "    for (int c = 0; c < {chunks}; ++c) {{\n"
      "      const long long j0 = ((long long)c * {stride} + {thread}) * {v};\n"
      "      if (j0 < n) {{\n"
      "{body}"
      "      }}\n"
      "    }}\n",
      fmt::arg("chunks", shape.elements / chunk_elements(t)), fmt::arg("v", chunk_elements(t)),
      fmt::arg("stride", shape.stride), fmt::arg("thread", shape.thread), fmt::arg("body", body));
}

// `per_element` (which may read `k`, the element's cache slot in x, and `j`, its column) for
// every cached element of the row.
std::string for_cached(const CacheShape& shape, DType t, const std::string& per_element) {
  return for_chunks(shape, t,
                    fmt::format("        #pragma unroll\n"
                                "        for (int u = 0; u < {v}; ++u) {{\n"
                                "          const int k = c * {v} + u;\n"
                                "          const long long j = j0 + u;\n"
                                "          (void)j;\n"
                                "          {body}\n"
                                "        }}\n",
                                fmt::arg("v", chunk_elements(t)), fmt::arg("body", per_element)));
}

// Reads the row at `at` into the cache `x` (compute type) with 16-byte loads.
std::string cached_load(const CacheShape& shape, DType t, const std::string& ct) {
  int v = chunk_elements(t);
  return fmt::format("    {} x[{}];\n", ct, shape.elements) +
         for_chunks(shape, t,
                    fmt::format("        __align__(16) {st} chunk[{v}];\n"
                                "        *reinterpret_cast<uint4*>(chunk) = "
                                "*reinterpret_cast<const uint4*>(in + at + j0);\n"
                                "        #pragma unroll\n"
                                "        for (int u = 0; u < {v}; ++u) x[c * {v} + u] = {load};\n",
                                fmt::arg("st", storage_type(t)), fmt::arg("v", v),
                                fmt::arg("load", load("chunk[u]", t))));
}

// Writes `value` (an expression of `v`, the cached element, and `j`, its column) for every
// cached element, with 16-byte stores to the row at `at`.
std::string cached_store(const CacheShape& shape, DType t, const std::string& value) {
  return for_chunks(shape, t,
                    fmt::format("        __align__(16) {st} chunk[{v}];\n"
                                "        #pragma unroll\n"
                                "        for (int u = 0; u < {v}; ++u) {{\n"
                                "          const auto v = x[c * {v} + u];\n"
                                "          const long long j = j0 + u;\n"
                                "          (void)j;\n"
                                "          chunk[u] = {store};\n"
                                "        }}\n"
                                "        *reinterpret_cast<uint4*>(out + at + j0) = "
                                "*reinterpret_cast<const uint4*>(chunk);\n",
                                fmt::arg("st", storage_type(t)), fmt::arg("v", chunk_elements(t)),
                                fmt::arg("store", value)));
}

// The loop over the rows a block (or, for a warp shape, each warp) takes, up to `rows`.
std::string row_loop(const CacheShape& shape, const std::string& rows) {
  if (!shape.warp) {
    return fmt::format(
        "  for (unsigned long long row = blockIdx.x; row < (unsigned long long)({}); row += "
        "gridDim.x) {{\n",
        rows);
  }
  return fmt::format(
      "  const int lane = threadIdx.x & 31;\n"
      "  for (unsigned long long row = (unsigned long long)blockIdx.x * {w} + (threadIdx.x >> 5);\n"
      "       row < (unsigned long long)({r}); row += (unsigned long long)gridDim.x * {w}) {{\n",
      fmt::arg("w", kWarpsPerBlock), fmt::arg("r", rows));
}

// `v` combined over the row's holders: the block's threads or the warp's lanes.
std::string row_reduce(const CacheShape& shape, const std::string& v, const char* functor,
                       const std::string& identity, const std::string& ct) {
  if (shape.warp) return fmt::format("    {} = kiln_warp_reduce({}, {}());\n", v, v, functor);
  return fmt::format("    {} = kiln_block_reduce({}, {}(), ({}){}, scratch);\n", v, v, functor, ct,
                     identity);
}

}  // namespace

int eager_normalization_entry(DType dtype, int64_t n, const void* in, const void* out) {
  auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
  if (n <= 0 || n % chunk_elements(dtype) != 0 || !aligned(in) || !aligned(out)) return 0;
  if (n <= 32 * kWarpCachedElements) return 2;
  return n <= kBlock * kCachedElements ? 1 : 0;
}

CudaSource eager_softmax_source(DType dtype, bool log) {
  DType c = compute_of(dtype);
  std::string ct(value_type(c)), st(storage_type(dtype));
  std::string base = fmt::format("kiln_eager_{}softmax_{}", log ? "log_" : "", name_of(dtype));
  std::string kname = base.substr(5);
  std::string ninf = identity_literal(kir::ReduceOp::Max, c);
  std::string zero = identity_literal(kir::ReduceOp::Sum, c);
  std::string exp_shifted = unary_code(kname, kir::UnaryOp::Exp, c, "(v - m)", true);
  // log_softmax subtracts one shift, max + log(sum) formed in double and rounded once, as the
  // CPU (and PyTorch) do; softmax multiplies by 1 / sum rounded once, as the CPU does.
  std::string log_s =
      log ? fmt::format("    const {} shift = ({})((double)m + log((double)s));\n", ct, ct)
          : fmt::format("    const {} inv = ({})(1.0 / (double)s);\n", ct, ct);
  CudaSource src;
  src.name = kname;
  // Note [Row-cached normalization entries]: rows at row * n; softmax keeps exp(x - m) in the
  // cache for the final scaling.
  for (const CacheShape& shape : {kBlockRows, kWarpRows}) {
    std::string cached = base + (shape.warp ? "_warp_cached" : "_cached");
    src.code += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({block}) {name}({st}* out, const {st}* "
        "in, const long long rows, const long long n) {{\n"
        "  __shared__ {ct} scratch[32];\n"
        "  (void)scratch;\n"
        "{rows}"
        "    const long long at = (long long)row * n;\n"
        "{load}"
        "    {ct} m = {ninf};\n"
        "{max_loop}"
        "{max_reduce}"
        "    {ct} s = {zero};\n"
        "{sum_loop}"
        "{sum_reduce}"
        "{log_s}"
        "{store_loop}"
        "  }}\n"
        "}}\n",
        fmt::arg("block", kBlock), fmt::arg("name", cached), fmt::arg("st", st), fmt::arg("ct", ct),
        fmt::arg("ninf", ninf), fmt::arg("zero", zero), fmt::arg("rows", row_loop(shape, "rows")),
        fmt::arg("load", cached_load(shape, dtype, ct)),
        fmt::arg("max_loop",
                 for_cached(shape, dtype,
                            fmt::format("const {} v = x[k]; m = {};", ct,
                                        combine_code(kir::ReduceOp::Max, c, "m", "v")))),
        fmt::arg("max_reduce", row_reduce(shape, "m", "KilnMax", ninf, ct)),
        fmt::arg("sum_loop",
                 for_cached(shape, dtype,
                            log ? fmt::format("const {} v = x[k]; s = s + {};", ct, exp_shifted)
                                : fmt::format("const {} v = x[k]; x[k] = {}; s = s + x[k];", ct,
                                              exp_shifted))),
        fmt::arg("sum_reduce", row_reduce(shape, "s", "KilnSum", zero, ct)),
        fmt::arg("log_s", log_s),
        fmt::arg("store_loop",
                 cached_store(shape, dtype, store(log ? "v - shift" : "v * inv", dtype))));
    src.entries.push_back(CudaEntry{cached, Mapping::BlockPerRow, 0, kBlock, 1});
  }
  return src;
}

CudaSource eager_layer_norm_source(DType dtype) {
  DType c = compute_of(dtype);
  std::string ct(value_type(c)), st(storage_type(dtype));
  std::string base = fmt::format("kiln_eager_layer_norm_{}", name_of(dtype));
  std::string zero = identity_literal(kir::ReduceOp::Sum, c);
  CudaSource src;
  src.name = base.substr(5);
  // Note [Row-cached normalization entries].
  std::string affine =
      "(weight ? (bias ? ((v - mean) * rstd) * weight[j] + bias[j] : ((v - mean) * rstd) * "
      "weight[j]) : (bias ? ((v - mean) * rstd) + bias[j] : (v - mean) * rstd))";
  for (const CacheShape& shape : {kBlockRows, kWarpRows}) {
    std::string cached = base + (shape.warp ? "_warp_cached" : "_cached");
    src.code += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({block}) {name}({st}* out, const {st}* "
        "in, const {ct}* weight, const {ct}* bias, const long long rows, const long long n, const "
        "double eps) {{\n"
        "  __shared__ {ct} scratch[32];\n"
        "  (void)scratch;\n"
        "{rows}"
        "    const long long at = (long long)row * n;\n"
        "{load}"
        "    {ct} s = {zero};\n"
        "{sum_loop}"
        "{sum_reduce}"
        "    const {ct} mean = ({ct})((double)s / (double)n);\n"
        "    {ct} m2 = {zero};\n"
        "{m2_loop}"
        "{m2_reduce}"
        "    const {ct} rstd = ({ct})(1.0 / sqrt((double)m2 / (double)n + eps));\n"
        "{store_loop}"
        "  }}\n"
        "}}\n",
        fmt::arg("block", kBlock), fmt::arg("name", cached), fmt::arg("st", st), fmt::arg("ct", ct),
        fmt::arg("zero", zero), fmt::arg("rows", row_loop(shape, "rows")),
        fmt::arg("load", cached_load(shape, dtype, ct)),
        fmt::arg("sum_loop", for_cached(shape, dtype, "s = s + x[k];")),
        fmt::arg("sum_reduce", row_reduce(shape, "s", "KilnSum", zero, ct)),
        fmt::arg("m2_loop",
                 for_cached(shape, dtype,
                            fmt::format("const {} d = x[k] - mean; m2 = m2 + d * d;", ct))),
        fmt::arg("m2_reduce", row_reduce(shape, "m2", "KilnSum", zero, ct)),
        fmt::arg("store_loop", cached_store(shape, dtype, store(affine, dtype))));
    src.entries.push_back(CudaEntry{cached, Mapping::BlockPerRow, 0, kBlock, 1});
  }
  return src;
}

}  // namespace kiln::codegen::cuda
