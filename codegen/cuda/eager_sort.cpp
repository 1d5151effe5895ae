#include "kiln/codegen/cuda/eager_sort.h"

#include <fmt/format.h>

#include <string>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_scalar.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/codegen/cuda/eager_pointwise.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA sort kernels]
// The results must be the CPU kernels' (runtime/kernels/sort_ops.cpp) exactly, so both use
// the same order, not just any valid sort: values ascending (descending), NaN above every
// number, and equal values (or two NaNs) by position. Under that total order an element's
// position in the sorted row is the number of row elements that precede it, which a thread per
// element counts independently: O(r) work per element, no synchronization, and topk is the
// same count with the ranks of k and above dropped. The scans are a sequential loop per row,
// accumulating in the CPU kernel's dtype, so the rounding is the CPU's as well.

namespace {

constexpr int kBlock = 256;

const char* const kSortBefore =
    "#ifndef KILN_EAGER_SORT_BEFORE\n"
    "#define KILN_EAGER_SORT_BEFORE\n"
    "// Whether (a, i) precedes (b, j) in the row: by value (NaN above numbers), then position.\n"
    "template <class T>\n"
    "__device__ __forceinline__ bool kiln_sort_before(T a, long long i, T b, long long j, int "
    "descending) {\n"
    "  const bool anan = a != a, bnan = b != b;\n"
    "  const bool lt = descending ? (!bnan && (anan || a > b)) : (!anan && (bnan || a < b));\n"
    "  const bool gt = descending ? (!anan && (bnan || b > a)) : (!bnan && (anan || b < a));\n"
    "  return lt || (!gt && i < j);\n"
    "}\n"
    "#endif\n";

void check_compute(DType compute, const char* what) {
  KILN_CHECK(compute == kFloat32 || compute == kFloat64 || compute == kInt64,
             "cuda {} kernel: compute dtype {} is not float32, float64 or int64", what, compute);
}

}  // namespace

CudaSource eager_rank_source(DType compute) {
  check_compute(compute, "sort");
  std::string ct(value_type(compute));
  std::string base = fmt::format("kiln_eager_rank_{}", eager_symbol_part(dtype_name(compute)));
  CudaSource src;
  src.name = base.substr(5);
  src.code = kSortBefore;
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({ct}* values, long long* "
      "indices, const {ct}* rows, const long long outer, const long long r, const long long k, "
      "const int descending) {{\n"
      "{loop}"
      "    const unsigned long long row = i / (unsigned long long)r;\n"
      "    const long long j = (long long)(i % (unsigned long long)r);\n"
      "    const {ct}* x = rows + row * (unsigned long long)r;\n"
      "    const {ct} v = x[j];\n"
      "    long long rank = 0;\n"
      "    for (long long m = 0; m < r; ++m)\n"
      "      rank += kiln_sort_before<{ct}>(x[m], m, v, j, descending) ? 1 : 0;\n"
      "    if (rank >= k) continue;\n"
      "    indices[row * (unsigned long long)k + rank] = j;\n"
      "    if (values != 0) values[row * (unsigned long long)k + rank] = v;\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("ct", ct),
      fmt::arg("loop", eager_grid_stride_loop("outer * r")));
  src.entries.push_back(CudaEntry{base, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

CudaSource eager_scan_source(DType compute, bool prod) {
  KILN_CHECK(compute == kFloat64 || compute == kInt64,
             "cuda scan kernel: compute dtype {} is not float64 or int64", compute);
  std::string ct(value_type(compute));
  const char* name = prod ? "cumprod" : "cumsum";
  std::string base = fmt::format("kiln_eager_{}_{}", name, eager_symbol_part(dtype_name(compute)));
  // Integers wrap, through unsigned as the CPU kernel (signed overflow is undefined).
  std::string step;
  if (compute == kInt64) {
    step = fmt::format("acc = (long long)((unsigned long long)acc {} (unsigned long long)x[j]);",
                       prod ? "*" : "+");
  } else {
    step = fmt::format("acc = acc {} x[j];", prod ? "*" : "+");
  }
  CudaSource src;
  src.name = base.substr(5);
  src.code = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}({ct}* out, const {ct}* "
      "rows, const long long outer, const long long r) {{\n"
      "{loop}"
      "    const {ct}* x = rows + i * (unsigned long long)r;\n"
      "    {ct}* y = out + i * (unsigned long long)r;\n"
      "    {ct} acc = ({ct}){init};\n"
      "    for (long long j = 0; j < r; ++j) {{\n"
      "      {step}\n"
      "      y[j] = acc;\n"
      "    }}\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("ct", ct),
      fmt::arg("loop", eager_grid_stride_loop("outer")), fmt::arg("init", prod ? 1 : 0),
      fmt::arg("step", step));
  src.entries.push_back(CudaEntry{base, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

}  // namespace kiln::codegen::cuda
