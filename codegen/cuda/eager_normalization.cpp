#include "kiln/codegen/cuda/eager_normalization.h"

#include <fmt/format.h>

#include <limits>
#include <string>

#include "kiln/codegen/cuda/cuda_scalar.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA normalization kernels]
// softmax, log_softmax and layer_norm reduce along a row and then write every element of it, so
// each is one kernel with a block per row: the block reduces (the preamble's kiln_block_reduce,
// as the fused kernels' row reductions), every thread gets the result, and the same threads
// write their elements. They follow the CPU kernels' arithmetic (nn_ops.cpp): 16-bit floats are
// computed in float32; softmax subtracts the row's max before exp and divides by the sum;
// log_softmax is x - max - log(sum); layer_norm takes the mean, then the mean of squared
// deviations (two passes, not E[x^2] - E[x]^2, which cancels), rounds both to the compute type
// as the CPU does, and applies the optional weight and bias (in the compute type, as the CPU
// converts them) after normalizing. exp and log are
// the emitter's (cuda_scalar.h's unary_code), so a float32 exp is the same polynomial as on the
// CPU. The row's sums differ from the CPU's blocked ones in order only.

namespace {

constexpr int kBlock = 256;

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

}  // namespace

CudaSource eager_softmax_source(DType dtype, bool log) {
  DType c = compute_of(dtype);
  std::string ct(value_type(c)), st(storage_type(dtype));
  std::string base = fmt::format("kiln_eager_{}softmax_{}", log ? "log_" : "", name_of(dtype));
  std::string kname = base.substr(5);
  std::string x = load("in[i + (long long)j * in_step]", dtype);
  std::string ninf = identity_literal(kir::ReduceOp::Max, c);
  std::string zero = identity_literal(kir::ReduceOp::Sum, c);
  std::string exp_shifted = unary_code(kname, kir::UnaryOp::Exp, c, "(v - m)", true);
  std::string result =
      log ? "v - m - log_s"
          : fmt::format("{} / s", unary_code(kname, kir::UnaryOp::Exp, c, "(v - m)", true));
  std::string log_s = log ? fmt::format("    const {} log_s = {};\n", ct,
                                        unary_code(kname, kir::UnaryOp::Log, c, "s", true))
                          : "";
  CudaSource src;
  src.name = kname;
  src.code = eager_indexer_prelude();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({st}* out, const {st}* in, "
      "const KilnEagerIndexer rows, const long long n, const long long in_step, const long long "
      "out_step) {{\n"
      "  __shared__ {ct} scratch[32];\n"
      "  for (unsigned long long row = blockIdx.x; row < (unsigned long long)rows.numel; row += "
      "gridDim.x) {{\n"
      "    const long long o = kiln_eager_offset(rows, 0, row);\n"
      "    const long long i = kiln_eager_offset(rows, 1, row);\n"
      "    {ct} m = {ninf};\n"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {{\n"
      "      const {ct} v = {x};\n"
      "      m = {max};\n"
      "    }}\n"
      "    m = kiln_block_reduce(m, KilnMax(), ({ct}){ninf}, scratch);\n"
      "    {ct} s = {zero};\n"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {{\n"
      "      const {ct} v = {x};\n"
      "      s = s + {exp_shifted};\n"
      "    }}\n"
      "    s = kiln_block_reduce(s, KilnSum(), ({ct}){zero}, scratch);\n"
      "{log_s}"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {{\n"
      "      const {ct} v = {x};\n"
      "      out[o + (long long)j * out_step] = {store};\n"
      "    }}\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("st", st), fmt::arg("ct", ct),
      fmt::arg("ninf", ninf), fmt::arg("zero", zero), fmt::arg("x", x),
      fmt::arg("max", combine_code(kir::ReduceOp::Max, c, "m", "v")),
      fmt::arg("exp_shifted", exp_shifted), fmt::arg("log_s", log_s),
      fmt::arg("store", store(result, dtype)));
  src.entries.push_back(CudaEntry{base, Mapping::BlockPerRow, 0, kBlock, 1});
  return src;
}

CudaSource eager_layer_norm_source(DType dtype) {
  DType c = compute_of(dtype);
  std::string ct(value_type(c)), st(storage_type(dtype));
  std::string base = fmt::format("kiln_eager_layer_norm_{}", name_of(dtype));
  std::string zero = identity_literal(kir::ReduceOp::Sum, c);
  std::string x = load("in[at + j]", dtype);
  std::string y = fmt::format(
      "{{\n"
      "        {ct} y = (v - mean) * rstd;\n"
      "        if (weight) y = y * {w};\n"
      "        if (bias) y = y + {b};\n"
      "        out[at + j] = {store};\n"
      "      }}",
      fmt::arg("ct", ct), fmt::arg("w", "weight[j]"), fmt::arg("b", "bias[j]"),
      fmt::arg("store", store("y", dtype)));
  CudaSource src;
  src.name = base.substr(5);
  src.code = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({st}* out, const {st}* in, "
      "const {ct}* weight, const {ct}* bias, const long long rows, const long long n, const "
      "double eps) {{\n"
      "  __shared__ {ct} scratch[32];\n"
      "  for (unsigned long long row = blockIdx.x; row < (unsigned long long)rows; row += "
      "gridDim.x) {{\n"
      "    const long long at = (long long)row * n;\n"
      "    {ct} s = {zero};\n"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) s = s + {x};\n"
      "    s = kiln_block_reduce(s, KilnSum(), ({ct}){zero}, scratch);\n"
      "    const {ct} mean = ({ct})((double)s / (double)n);\n"
      "    {ct} m2 = {zero};\n"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {{\n"
      "      const {ct} d = {x} - mean;\n"
      "      m2 = m2 + d * d;\n"
      "    }}\n"
      "    m2 = kiln_block_reduce(m2, KilnSum(), ({ct}){zero}, scratch);\n"
      "    const {ct} rstd = ({ct})(1.0 / sqrt((double)m2 / (double)n + eps));\n"
      "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {{\n"
      "      const {ct} v = {x};\n"
      "      {y}\n"
      "    }}\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("st", st), fmt::arg("ct", ct),
      fmt::arg("zero", zero), fmt::arg("x", x), fmt::arg("y", y));
  src.entries.push_back(CudaEntry{base, Mapping::BlockPerRow, 0, kBlock, 1});
  return src;
}

}  // namespace kiln::codegen::cuda
