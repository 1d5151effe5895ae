#include "kiln/codegen/cuda/eager_random.h"

#include <fmt/format.h>

#include <string>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_scalar.h"
#include "kiln/philox_core_text.h"

namespace kiln::codegen::cuda {
namespace {

constexpr int kBlock = 256;

// Mantissa digits a uniform draw keeps for each floating dtype (Note [Random streams]).
int uniform_digits(DType t) {
  return t == kFloat16 ? 11 : t == kBFloat16 ? 8 : 24;
}

std::string dtype_part(DType t) {
  std::string s = fmt::format("{}", t);
  for (char& c : s)
    c = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '_';
  return s;
}

CudaSource elementwise(const std::string& symbol, const std::string& params,
                       const std::string& body, bool philox) {
  CudaSource src;
  src.name = symbol.substr(5);  // without "kiln_"
  // The streams' functions, as device functions (philox_core.h defaults to host ones).
  src.code = philox ? "#define KILN_PHILOX_FN static __device__ __forceinline__\n" +
                          std::string(kPhiloxCoreText) + "\n"
                    : std::string();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {symbol}({params}) {{\n"
      "  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
      "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "       i < (unsigned long long)numel; i += stride) {{\n"
      "{body}"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("symbol", symbol), fmt::arg("params", params),
      fmt::arg("body", body));
  src.entries.push_back(CudaEntry{symbol, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

}  // namespace

CudaSource eager_random_source(EagerRandom kind, DType dtype) {
  KILN_CHECK(is_floating(dtype), "cuda random kernel: expected a floating dtype, got {}", dtype);
  std::string st(storage_type(dtype));
  std::string stream =
      "const long long numel, const unsigned long long seed, const unsigned "
      "long long offset";
  switch (kind) {
    case EagerRandom::Uniform: {
      std::string body =
          dtype == kFloat64
              ? "    const KilnPhiloxBlock b = kiln_philox_block(seed, offset + i / 2, 0);\n"
                "    out[i] = kiln_uniform_double(b.w[2 * (i % 2)], b.w[2 * (i % 2) + 1]);\n"
              : fmt::format(
                    "    const KilnPhiloxBlock b = kiln_philox_block(seed, offset + i / 4, "
                    "0);\n"
                    "    const float u = kiln_uniform_float(b.w[i % 4], {});\n"
                    "    out[i] = {};\n",
                    uniform_digits(dtype), to_storage(convert("u", kFloat32, dtype), dtype));
      return elementwise("kiln_eager_rand_" + dtype_part(dtype),
                         fmt::format("{}* out, {}", st, stream), body, true);
    }
    case EagerRandom::Normal: {
      std::string body = fmt::format(
          "    const KilnPhiloxBlock b = kiln_philox_block(seed, offset + i / 2, 0);\n"
          "    const double z = kiln_box_muller(b.w[2 * (i % 2)], b.w[2 * (i % 2) + 1]);\n"
          "    out[i] = {};\n",
          to_storage(convert("z", kFloat64, dtype), dtype));
      return elementwise("kiln_eager_randn_" + dtype_part(dtype),
                         fmt::format("{}* out, {}", st, stream), body, true);
    }
    case EagerRandom::Dropout: {
      DType c = element_size(dtype) == 2 ? kFloat32 : dtype;
      std::string ct(value_type(c));
      std::string x = convert(from_storage("in[i]", dtype), dtype, c);
      std::string body = fmt::format(
          "    const KilnPhiloxBlock b = kiln_philox_block(seed, offset + i / 4, 0);\n"
          "    const bool keep = (double)kiln_uniform_float(b.w[i % 4], 24) >= p;\n"
          "    const {ct} y = keep ? {x} * ({ct})scale : ({ct})0;\n"
          "    out[i] = {store};\n",
          fmt::arg("ct", ct), fmt::arg("x", x),
          fmt::arg("store", to_storage(convert("y", c, dtype), dtype)));
      return elementwise(
          "kiln_eager_dropout_" + dtype_part(dtype),
          fmt::format("{0}* out, const {0}* in, {1}, const double p, const double scale", st,
                      stream),
          body, true);
    }
  }
  KILN_ERROR("cuda random kernel: unknown kind {}", static_cast<int>(kind));
}

CudaSource eager_arange_source(DType dtype) {
  std::string body = fmt::format(
      "    const double v = fma((double)i, step, start);\n"
      "    out[i] = {};\n",
      to_storage(convert("v", kFloat64, dtype), dtype));
  return elementwise("kiln_eager_arange_" + dtype_part(dtype),
                     fmt::format("{}* out, const long long numel, const double start, const double "
                                 "step",
                                 storage_type(dtype)),
                     body, false);
}

}  // namespace kiln::codegen::cuda
