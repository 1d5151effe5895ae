#include "kiln/codegen/cuda/eager_pointwise.h"

#include <fmt/format.h>

#include <cctype>
#include <cstddef>

#include "kiln/base/error.h"
#include "kiln/base/shape.h"
#include "kiln/codegen/cuda/cuda_scalar.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA pointwise kernels]
// Eager ops run on tensors of every shape, so their kernels cannot be kernel IR, whose sizes are
// static (Note [Kernel IR]): each new shape would cost an NVRTC run. An eager kernel is instead
// compiled once per op, attributes and dtypes, and takes the shape and strides at launch in an
// EagerIndexer. Its scalar work is still kernel IR: the op's expression (OpDef::expr, built from
// the math templates, Note [Pointwise math is written once]) stored at the output's offset,
// written as C by the same emitter as fused kernels (emit_cuda_statements), so eager CUDA,
// fused CUDA and the CPU paths share every primitive. The loop around it is written here: a
// grid-stride walk of the flat index, with each operand's offset computed from the merged dims,
// or equal to the flat index when every operand is contiguous (the common case, checked once
// per launch on the host). Outputs may alias their first input (in-place ops): each element is
// read before it is written by the same thread, so the pointers are not __restrict__.

static_assert(offsetof(EagerIndexer, numel) == 0);
static_assert(offsetof(EagerIndexer, sizes) == 8);
static_assert(offsetof(EagerIndexer, strides) == 8 + 8 * kEagerMaxDims);
static_assert(offsetof(EagerIndexer, ndim) == 8 + 8 * kEagerMaxDims * (1 + kEagerMaxOperands));
static_assert(sizeof(EagerIndexer) == 8 + 8 * kEagerMaxDims * (1 + kEagerMaxOperands) + 8);

std::string eager_indexer_prelude() {
  return fmt::format(
      "#ifndef KILN_EAGER_INDEXER\n"
      "#define KILN_EAGER_INDEXER\n"
      "// codegen/cuda/eager_pointwise.h's EagerIndexer, field for field.\n"
      "struct KilnEagerIndexer {{\n"
      "  long long numel;\n"
      "  long long sizes[{0}];\n"
      "  long long strides[{1}][{0}];\n"
      "  int ndim;\n"
      "  int contiguous;\n"
      "}};\n"
      "// Operand `operand`'s offset of element `flat` of the iteration space.\n"
      "__device__ __forceinline__ long long kiln_eager_offset(const KilnEagerIndexer& ix, int "
      "operand,\n"
      "                                                       unsigned long long flat) {{\n"
      "  if (ix.contiguous) return (long long)flat;\n"
      "  long long offset = 0;\n"
      "  for (int d = ix.ndim - 1; d >= 0; --d) {{\n"
      "    const unsigned long long size = (unsigned long long)ix.sizes[d];\n"
      "    offset += (long long)(flat % size) * ix.strides[operand][d];\n"
      "    flat /= size;\n"
      "  }}\n"
      "  return offset;\n"
      "}}\n"
      "#endif\n",
      kEagerMaxDims, kEagerMaxOperands);
}

std::string eager_symbol_part(std::string_view name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

CudaSource eager_pointwise_source(const EagerPointwiseSpec& spec, const EagerValueFn& value) {
  size_t operands = spec.inputs.size() + 1;
  KILN_CHECK(operands <= static_cast<size_t>(kEagerMaxOperands),
             "cuda eager kernel {}: {} inputs, at most {} are supported", spec.name,
             spec.inputs.size(), kEagerMaxOperands - 1);
  // The scalar work as kernel IR: out[o0] = value(in0[o1], in1[o2], ...).
  kir::Kernel k;
  k.name = "eager_" + eager_symbol_part(spec.name);
  kir::Builder b(k);
  kir::BufferId out = b.buffer("out", spec.output, true, 0);
  std::vector<kir::BufferId> ins;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    ins.push_back(b.buffer(fmt::format("in{}", i), spec.inputs[i], false, 0));
  std::vector<kir::VarId> offsets;
  for (size_t i = 0; i < operands; ++i)
    offsets.push_back(b.var(fmt::format("o{}", i), kInt64));
  std::vector<kir::Val> loaded;
  for (size_t i = 0; i < ins.size(); ++i)
    loaded.emplace_back(b.load(ins[i], b.var_ref(offsets[i + 1])));
  kir::ExprId v;
  {
    kir::MathScope scope(b, kir::compute_dtype(spec.output));
    v = value(loaded).id();
  }
  kir::Stmt store;
  store.kind = kir::StmtKind::Store;
  store.buffer = out;
  store.index = b.var_ref(offsets[0]);
  store.value = b.cast(v, spec.output);
  k.body.push_back(std::move(store));

  CudaSource src;
  src.name = k.name;
  std::string sym = "kiln_" + k.name;
  std::string params;
  for (const kir::Buffer& buf : k.buffers) {
    params += fmt::format("{}{}* {}, ", buf.output ? "" : "const ", storage_type(buf.dtype),
                          cuda_buffer_name(buf));
  }
  std::string names, zeros, flat, accumulate;
  for (size_t i = 0; i < operands; ++i) {
    std::string n = cuda_var_name(k.vars[static_cast<size_t>(offsets[i])]);
    names += (i ? ", " : "") + n;
    zeros += fmt::format("      {} = 0;\n", n);
    flat += fmt::format("      {} = (long long)flat;\n", n);
    accumulate += fmt::format("        {} += (long long)c * ix.strides[{}][d];\n", n, i);
  }
  constexpr int kBlock = 256;
  src.code = eager_indexer_prelude();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {sym}({params}const "
      "KilnEagerIndexer ix) {{\n"
      "  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;\n"
      "  for (unsigned long long flat = (unsigned long long)blockIdx.x * blockDim.x + "
      "threadIdx.x;\n"
      "       flat < (unsigned long long)ix.numel; flat += step) {{\n"
      "    long long {names};\n"
      "    if (ix.contiguous) {{\n"
      "{flat}"
      "    }} else {{\n"
      "{zeros}"
      "      unsigned long long rest = flat;\n"
      "      for (int d = ix.ndim - 1; d >= 0; --d) {{\n"
      "        const unsigned long long c = rest % (unsigned long long)ix.sizes[d];\n"
      "        rest /= (unsigned long long)ix.sizes[d];\n"
      "{accumulate}"
      "      }}\n"
      "    }}\n"
      "{body}"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("sym", sym), fmt::arg("params", params),
      fmt::arg("names", names), fmt::arg("flat", flat), fmt::arg("zeros", zeros),
      fmt::arg("accumulate", accumulate), fmt::arg("body", emit_cuda_statements(k, 2)));
  src.entries.push_back(CudaEntry{sym, Mapping::Elementwise, 0, kBlock, 1});
  return src;
}

EagerIndexer make_eager_indexer(std::string_view op, std::span<const int64_t> sizes,
                                std::span<const std::vector<int64_t>> strides) {
  KILN_CHECK(!strides.empty() && strides.size() <= static_cast<size_t>(kEagerMaxOperands),
             "{}: a CUDA pointwise kernel takes 1 to {} operands, got {}", op, kEagerMaxOperands,
             strides.size());
  EagerIndexer ix;
  ix.numel = shape_numel(sizes);
  // Kept dims, innermost first while merging.
  std::vector<int64_t> kept_sizes;
  std::vector<std::vector<int64_t>> kept(strides.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    bool merge = !kept_sizes.empty();
    for (size_t o = 0; o < strides.size() && merge; ++o)
      merge = strides[o][d] == kept[o].back() * kept_sizes.back();
    if (merge) {
      kept_sizes.back() *= sizes[d];
      continue;
    }
    kept_sizes.push_back(sizes[d]);
    for (size_t o = 0; o < strides.size(); ++o)
      kept[o].push_back(strides[o][d]);
  }
  KILN_CHECK(kept_sizes.size() <= static_cast<size_t>(kEagerMaxDims),
             "{}: CUDA pointwise kernels take at most {} dims after merging, got {} (shape {})", op,
             kEagerMaxDims, kept_sizes.size(), shape_str(sizes));
  ix.ndim = static_cast<int32_t>(kept_sizes.size());
  bool contiguous = true;
  for (size_t d = 0; d < kept_sizes.size(); ++d) {
    size_t at = kept_sizes.size() - 1 - d;  // outermost first in the indexer
    ix.sizes[at] = kept_sizes[d];
    for (size_t o = 0; o < strides.size(); ++o) {
      ix.strides[o][at] = kept[o][d];
      contiguous = contiguous && kept_sizes.size() == 1 && kept[o][d] == 1;
    }
  }
  ix.contiguous = contiguous ? 1 : 0;
  return ix;
}

}  // namespace kiln::codegen::cuda
