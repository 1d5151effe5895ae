#include "kiln/codegen/cuda/eager_reduction.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/base/shape.h"
#include "kiln/codegen/cuda/cuda_scalar.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA reduction kernels]
// As the pointwise ones (Note [Eager CUDA pointwise kernels]), eager reductions are compiled
// once per op and dtypes and take their geometry at launch: two EagerIndexers, one over the
// output's elements (the output's and the input's offsets of each) and one over the elements
// reduced into one output (the input's offsets relative to the first). The combine, its identity
// and the element conversions are the fused kernels' (cuda_scalar.h, the preamble's KilnSum and
// kiln_block_reduce), so an eager sum and a fused one reduce alike.
// Two mappings, picked per launch by make_eager_reduction_layout:
// - rows: a block per output, whose threads stride over the reduced elements (coalesced when
//   those are the input's innermost), then reduce across the block. The usual case: the last
//   dims reduced, or everything (a single output: one block, whose threads still read
//   neighbouring elements).
// - cols: a thread per output, reducing serially, when neighbouring outputs read neighbouring
//   inputs (a reduction over a leading dim) and there are enough outputs to fill a block, or
//   when there are so few reduced elements that a block per output would idle.
// The accumulation dtype is the caller's (EagerReductionSpec::accumulate): the CUDA ops use int64
// for integers and bool, as the CPU kernels' reduction_compute_dtype, so integer sums wrap and
// bool sums count alike; double for float sums, means and products, as the CPU merges its
// blocks in double; the element type (float32 for 16-bit floats) for amax and amin. The order of
// a floating sum differs from the CPU's blocked one: results agree to rounding.

namespace {

constexpr int kBlock = 256;

// Reductions with fewer elements than this per output use a thread per output when there are
// enough outputs: a block of 256 threads would leave most of them idle.
constexpr int64_t kFewReduced = 16;

std::string load_code(const EagerReductionSpec& s, const std::string& index) {
  return convert(from_storage(fmt::format("in[{}]", index), s.input), s.input, s.accumulate);
}

std::string store_code(const EagerReductionSpec& s, const std::string& acc) {
  std::string v = s.scaled ? fmt::format("{} * ({})scale", acc, value_type(s.accumulate)) : acc;
  return to_storage(convert(v, s.accumulate, s.output), s.output);
}

}  // namespace

CudaSource eager_reduction_source(const EagerReductionSpec& spec) {
  KILN_CHECK(!spec.scaled || is_floating(spec.accumulate),
             "cuda eager reduction {}: a scaled reduction accumulates in a floating dtype, not {}",
             spec.name, spec.accumulate);
  std::string base = "kiln_eager_reduce_" + eager_symbol_part(spec.name);
  std::string acc_t(value_type(spec.accumulate));
  std::string identity = identity_literal(spec.op, spec.accumulate);
  std::string params = fmt::format(
      "{}* out, const {}* in, const KilnEagerIndexer kept, const KilnEagerIndexer reduced, "
      "const double scale",
      storage_type(spec.output), storage_type(spec.input));
  // The input's offsets: `base` plus the reduced element's; the reduced indexer's contiguous
  // flag makes that base + r.
  std::string element = load_code(spec, "in_base + kiln_eager_offset(reduced, 0, r)");
  std::string combine = combine_code(spec.op, spec.accumulate, "acc", "x");

  CudaSource src;
  src.name = "eager_reduce_" + eager_symbol_part(spec.name);
  src.code = eager_indexer_prelude();
  src.code += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}_rows({params}) {{\n"
      "  __shared__ {acc_t} scratch[32];\n"
      "  for (unsigned long long o = blockIdx.x; o < (unsigned long long)kept.numel; o += "
      "gridDim.x) {{\n"
      "    const long long out_at = kiln_eager_offset(kept, 0, o);\n"
      "    const long long in_base = kiln_eager_offset(kept, 1, o);\n"
      "    {acc_t} acc = {identity};\n"
      "    for (unsigned long long r = threadIdx.x; r < (unsigned long long)reduced.numel;\n"
      "         r += blockDim.x) {{\n"
      "      const {acc_t} x = {element};\n"
      "      acc = {combine};\n"
      "    }}\n"
      "    acc = kiln_block_reduce(acc, {functor}, ({acc_t}){identity}, scratch);\n"
      "    if (threadIdx.x == 0) out[out_at] = {store};\n"
      "  }}\n"
      "}}\n"
      "extern \"C\" __global__ void __launch_bounds__({block}) {base}_cols({params}) {{\n"
      "  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;\n"
      "  for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "       o < (unsigned long long)kept.numel; o += step) {{\n"
      "    const long long out_at = kiln_eager_offset(kept, 0, o);\n"
      "    const long long in_base = kiln_eager_offset(kept, 1, o);\n"
      "    {acc_t} acc = {identity};\n"
      "    for (unsigned long long r = 0; r < (unsigned long long)reduced.numel; ++r) {{\n"
      "      const {acc_t} x = {element};\n"
      "      acc = {combine};\n"
      "    }}\n"
      "    out[out_at] = {store};\n"
      "  }}\n"
      "}}\n",
      fmt::arg("block", kBlock), fmt::arg("base", base), fmt::arg("params", params),
      fmt::arg("acc_t", acc_t), fmt::arg("identity", identity), fmt::arg("element", element),
      fmt::arg("combine", combine), fmt::arg("functor", combine_functor(spec.op, spec.accumulate)),
      fmt::arg("store", store_code(spec, "acc")));
  src.entries.push_back(CudaEntry{base + "_rows", Mapping::BlockPerRow, 0, kBlock, 1});
  src.entries.push_back(CudaEntry{base + "_cols", Mapping::ThreadPerRow, 0, kBlock, 1});
  return src;
}

EagerReductionLayout make_eager_reduction_layout(std::string_view op,
                                                 std::span<const int64_t> sizes,
                                                 std::span<const int64_t> strides,
                                                 std::span<const int64_t> reduced_dims,
                                                 std::span<const int64_t> out_strides) {
  KILN_CHECK(sizes.size() == strides.size(),
             "{}: a CUDA reduction's input has {} sizes, {} strides", op, sizes.size(),
             strides.size());
  std::vector<int64_t> kept_sizes, red_sizes;
  std::vector<std::vector<int64_t>> kept_strides(2), red_strides(1);
  size_t next = 0;  // into reduced_dims
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool reduced = next < reduced_dims.size() && reduced_dims[next] == static_cast<int64_t>(d);
    next += reduced ? 1 : 0;
    if (reduced) {
      red_sizes.push_back(sizes[d]);
      red_strides[0].push_back(strides[d]);
    } else {
      kept_sizes.push_back(sizes[d]);
      kept_strides[1].push_back(strides[d]);
    }
  }
  KILN_CHECK(next == reduced_dims.size(), "{}: reduced dims {} are not increasing dims of shape {}",
             op, shape_str(reduced_dims), shape_str(sizes));
  KILN_CHECK(out_strides.size() == kept_sizes.size(),
             "{}: a CUDA reduction's output has {} strides for {} kept dims", op,
             out_strides.size(), kept_sizes.size());
  kept_strides[0].assign(out_strides.begin(), out_strides.end());
  EagerReductionLayout l;
  l.kept = make_eager_indexer(op, kept_sizes, kept_strides);
  l.reduced = make_eager_indexer(op, red_sizes, red_strides);
  // The input's innermost stride along each side (after merging; size-1 dims are gone).
  auto inner = [](const EagerIndexer& ix, int operand) -> int64_t {
    if (ix.ndim == 0) return INT64_MAX;
    return std::llabs(ix.strides[operand][ix.ndim - 1]);
  };
  bool enough_outputs = l.kept.numel >= kBlock;
  bool outputs_adjacent = inner(l.kept, 1) < inner(l.reduced, 0);
  bool few_reduced = l.reduced.numel <= kFewReduced;
  l.entry = enough_outputs && (outputs_adjacent || few_reduced) ? 1 : 0;
  return l;
}

}  // namespace kiln::codegen::cuda
