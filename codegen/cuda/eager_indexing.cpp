#include "kiln/codegen/cuda/eager_indexing.h"

#include <fmt/format.h>

#include <string>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_scalar.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA index kernels]
// The ops that read through an index tensor or return positions follow their CPU kernels
// (runtime/kernels/indexing_ops.cpp, reduction_index_ops.cpp) closely enough
// that the results are the CPU's bit for bit:
// - gather copies raw element bytes, so one kernel per element size serves every dtype.
//   index_select and embedding are gathers too: the index operand's strides select which output
//   dims pick the index element (index_select: only the indexed dim; embedding: all but the
//   last), and the input's stride along the indexed dim is applied to the index's value.
// - scatter_add runs a thread per position outside the scattered dim, which adds that
//   position's elements in index order, rounding after each add as the serial CPU loop does;
//   duplicate indices never race and the sums do not depend on scheduling (no atomics).
//   index_put is the same kernel over the dims it does not index, looping over the positions
//   of the broadcast index tensors; without accumulate it assigns, so the last duplicate wins
//   as on the CPU (runtime/cuda/cuda_advanced_index_ops.cpp).
// - nonzero's coordinates are written from an inclusive running count of the nonzero flags
//   (cumsum's kernel): the element at flat position i, when nonzero, is row count[i] - 1.
// - The index reductions take the CPU's row form ([outer, r] contiguous rows in the compute
//   dtype) and its rule: the first NaN, else the first extreme element.
// Indices are checked on the device: a bad one is reported through a two-word buffer
// (kBadIndexWords), and the op raises the CPU's error after reading it back. That read
// synchronizes with the stream, which costs these ops their asynchrony in exchange for an error
// instead of a wild read (PyTorch's device-side assert ends the process instead).

namespace {

constexpr int kBlock = 256;

std::string_view bits_type(size_t bytes) {
  switch (bytes) {
    case 1:
      return "unsigned char";
    case 2:
      return "unsigned short";
    case 4:
      return "unsigned int";
    case 8:
      return "unsigned long long";
    default:
      KILN_ERROR("cuda gather kernel: no element type of {} bytes", bytes);
  }
}

// The dtype as part of a kernel's name (dtype_suffix names the value type: f32 for float16).
std::string symbol_of(DType t) {
  return eager_symbol_part(dtype_name(t));
}

bool is_16bit_float(DType t) {
  return t == kFloat16 || t == kBFloat16;
}

// Loads a buffer element as the value type (16-bit floats as float).
std::string load(const std::string& at, DType t) {
  return from_storage(at, t);
}

const char* const kIndexBetter =
    "#ifndef KILN_EAGER_INDEX_BETTER\n"
    "#define KILN_EAGER_INDEX_BETTER\n"
    "// Whether (v, i) beats the best so far (bv, bi; bi < 0: none yet): a NaN beats numbers,\n"
    "// then the extreme wins, and of equals (or NaNs) the lower index.\n"
    "template <bool kMax, class T>\n"
    "__device__ __forceinline__ bool kiln_index_better(T bv, long long bi, T v, long long i) {\n"
    "  if (i < 0) return false;\n"
    "  if (bi < 0) return true;\n"
    "  const bool bnan = bv != bv, vnan = v != v;\n"
    "  if (bnan || vnan) return bnan && vnan ? i < bi : vnan;\n"
    "  if (kMax ? v > bv : v < bv) return true;\n"
    "  return v == bv && i < bi;\n"
    "}\n"
    "#endif\n";

}  // namespace

std::string eager_grid_stride_loop(const std::string& bound) {
  return fmt::format(
      "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "       i < (unsigned long long)({}); i += (unsigned long long)gridDim.x * blockDim.x) {{\n",
      bound);
}

CudaSource eager_gather_source(size_t element_bytes) {
  std::string t(bits_type(element_bytes));
  std::string base = fmt::format("kiln_eager_gather_b{}", element_bytes * 8);
  CudaSource src;
  src.name = base.substr(5);
  src.code = eager_indexer_prelude();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({t}* out, const {t}* x, "
      "const long long* index, const KilnEagerIndexer ix, const long long x_dim_stride, const "
      "long long dim_size, long long* bad) {{\n"
      "{loop}"
      "    const long long v = index[kiln_eager_offset(ix, 2, i)];\n"
      "    if (v < 0 || v >= dim_size) {{\n"
      "      bad[1] = v;\n"
      "      bad[0] = 1;\n"
      "      continue;\n"
      "    }}\n"
      "    out[kiln_eager_offset(ix, 0, i)] = x[kiln_eager_offset(ix, 1, i) + v * x_dim_stride];\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("t", t),
      fmt::arg("loop", eager_grid_stride_loop("ix.numel")));
  src.entries.push_back(CudaEntry{base, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

CudaSource eager_scatter_add_source(DType dtype, bool accumulate) {
  KILN_CHECK(dtype != kBool || !accumulate, "cuda scatter_add kernel: dtype bool is not supported");
  std::string st(storage_type(dtype));
  std::string base =
      fmt::format("kiln_eager_scatter_{}_{}", accumulate ? "add" : "set", symbol_of(dtype));
  std::string slot = "out[o + v * out_dim_stride]", add = "src[s + j * src_step]";
  std::string sum;
  if (!accumulate) {
    sum = add;  // the later write wins, as in the CPU's serial loop
  } else if (is_floating(dtype)) {
    // 16-bit floats add in float and round back after each add, as the CPU's compute_t.
    sum = to_storage(fmt::format("{} + {}", load(slot, dtype), load(add, dtype)), dtype);
  } else {
    // Integers wrap (through unsigned: signed overflow is undefined in C++).
    sum = fmt::format("({})((unsigned long long){} + (unsigned long long){})", st, slot, add);
  }
  CudaSource src;
  src.name = base.substr(5);
  src.code = eager_indexer_prelude();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({st}* out, const long "
      "long* index, const {st}* src, const KilnEagerIndexer ix, const long long n, const long "
      "long index_step, const long long src_step, const long long out_dim_stride, const long "
      "long dim_size, long long* bad) {{\n"
      "{loop}"
      "    const long long o = kiln_eager_offset(ix, 0, i);\n"
      "    const long long k = kiln_eager_offset(ix, 1, i);\n"
      "    const long long s = kiln_eager_offset(ix, 2, i);\n"
      "    for (long long j = 0; j < n; ++j) {{\n"
      "      const long long v = index[k + j * index_step];\n"
      "      if (v < 0 || v >= dim_size) {{\n"
      "        bad[1] = v;\n"
      "        bad[0] = 1;\n"
      "        continue;\n"
      "      }}\n"
      "      {slot} = {sum};\n"
      "    }}\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("st", st),
      fmt::arg("loop", eager_grid_stride_loop("ix.numel")), fmt::arg("slot", slot),
      fmt::arg("sum", sum));
  src.entries.push_back(CudaEntry{base, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

CudaSource eager_nonzero_source() {
  std::string base = "kiln_eager_nonzero";
  CudaSource src;
  src.name = base.substr(5);
  src.code = fmt::format(
      "struct KilnNonzeroSizes {{ long long sizes[{max_dims}]; int ndim; }};\n"
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}(long long* out, const "
      "long long* count, const KilnNonzeroSizes s, const long long numel) {{\n"
      "{loop}"
      "    const long long before = i == 0 ? 0 : count[i - 1];\n"
      "    if (count[i] == before) continue;\n"
      "    long long rest = (long long)i;\n"
      "    for (int d = s.ndim - 1; d >= 0; --d) {{\n"
      "      out[before * s.ndim + d] = rest % s.sizes[d];\n"
      "      rest /= s.sizes[d];\n"
      "    }}\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("max_dims", kNonzeroMaxDims),
      fmt::arg("loop", eager_grid_stride_loop("numel")));
  src.entries.push_back(CudaEntry{base, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

CudaSource eager_index_reduce_source(DType compute, bool is_max) {
  KILN_CHECK(!is_16bit_float(compute),
             "cuda index reduction kernel: {} is a storage type; reduce in float32", compute);
  std::string ct(value_type(compute));
  std::string base =
      fmt::format("kiln_eager_index_reduce_{}_{}", is_max ? "max" : "min", symbol_of(compute));
  std::string better = fmt::format("kiln_index_better<{}>", is_max ? "true" : "false");
  CudaSource src;
  src.name = base.substr(5);
  src.code = kIndexBetter;
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({ct}* values, long long* "
      "indices, const {ct}* rows, const long long outer, const long long r) {{\n"
      "  __shared__ {ct} best_v[{block}];\n"
      "  __shared__ long long best_i[{block}];\n"
      "  const int t = threadIdx.x;\n"
      "  for (unsigned long long row = blockIdx.x; row < (unsigned long long)outer; row += "
      "gridDim.x) {{\n"
      "    const {ct}* x = rows + row * (unsigned long long)r;\n"
      "    {ct} bv = ({ct})0;\n"
      "    long long bi = -1;\n"
      "    for (long long j = t; j < r; j += blockDim.x) {{\n"
      "      const {ct} v = x[j];\n"
      "      if ({better}(bv, bi, v, j)) {{\n"
      "        bv = v;\n"
      "        bi = j;\n"
      "      }}\n"
      "    }}\n"
      "    best_v[t] = bv;\n"
      "    best_i[t] = bi;\n"
      "    __syncthreads();\n"
      "    for (int s = blockDim.x / 2; s > 0; s >>= 1) {{\n"
      "      if (t < s && {better}(best_v[t], best_i[t], best_v[t + s], best_i[t + s])) {{\n"
      "        best_v[t] = best_v[t + s];\n"
      "        best_i[t] = best_i[t + s];\n"
      "      }}\n"
      "      __syncthreads();\n"
      "    }}\n"
      "    if (t == 0) {{\n"
      "      indices[row] = best_i[0];\n"
      "      if (values != 0) values[row] = best_v[0];\n"
      "    }}\n"
      "    __syncthreads();  // the next row reuses best_v and best_i\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("ct", ct),
      fmt::arg("better", better));
  src.entries.push_back(CudaEntry{base, Mapping::BlockPerRow, 0, kBlock, 1});
  return src;
}

}  // namespace kiln::codegen::cuda
