#include "kiln/codegen/cuda/eager_reduction.h"

#include <cstdlib>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/base/shape.h"

namespace kiln::codegen::cuda {

// Note [Eager CUDA reduction layouts]
// An eager reduction's kernel is generated from its reduction program (Note [Reduction programs]
// in runtime/kernels/reduction_programs.cpp), whose sizes and strides come from here: the
// input's dims split into the kept and the reduced ones, each side merged where its dims are
// contiguous with each other (size-1 dims dropped), so most launches have one dim a side. Two
// forms, picked per launch:
// - a block per output, whose threads stride over the reduced elements (coalesced when those
//   are the input's innermost), then reduce across the block. The usual case: the last dims
//   reduced, or everything (a single output: one block, whose threads still read neighbouring
//   elements).
// - a thread per output, reducing serially, when neighbouring outputs read neighbouring inputs
//   (a reduction over a leading dim) and there are enough outputs to fill a block, or when
//   there are so few reduced elements that a block per output would idle.

namespace {

constexpr int kBlock = 256;

// Reductions with fewer elements than this per output use a thread per output when there are
// enough outputs: a block of 256 threads would leave most of them idle.
constexpr int64_t kFewReduced = 16;

}  // namespace

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
