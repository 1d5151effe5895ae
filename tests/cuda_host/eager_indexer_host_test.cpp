// The geometry of the eager CUDA reduction kernels (Note [Eager CUDA reduction layouts]):
// make_eager_reduction_layout's indexers, walked by the generated kiln_eager_offset compiled for
// the host, in the kernels' loop order (an output's offsets, then each reduced element's),
// reduce every layout a view can have to what a straightforward loop over the input's
// multi-indices gives. The mapping each layout picks is checked against the rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_reduction.h"

// The CUDA qualifiers the indexer prelude uses, for the host.
#define __device__
#define __forceinline__ inline
#include "eager_indexer.inc"

namespace {

namespace cg = kiln::codegen::cuda;

struct Layout {
  std::vector<int64_t> sizes, strides, reduced;
  int64_t offset = 0;  // of the input's first element in the storage
};

std::vector<int64_t> kept_sizes(const Layout& l) {
  std::vector<int64_t> k;
  for (size_t d = 0, r = 0; d < l.sizes.size(); ++d) {
    if (r < l.reduced.size() && l.reduced[r] == static_cast<int64_t>(d)) {
      ++r;
    } else {
      k.push_back(l.sizes[d]);
    }
  }
  return k;
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;)
    s[d - 1] = s[d] * std::max<int64_t>(sizes[d], 1);
  return s;
}

// The storage an input of this layout reads: element i holds i + 1.
std::vector<double> storage(const Layout& l) {
  int64_t last = l.offset;
  for (size_t d = 0; d < l.sizes.size(); ++d)
    last += l.sizes[d] == 0 ? 0 : (l.sizes[d] - 1) * std::max<int64_t>(l.strides[d], 0);
  std::vector<double> s(static_cast<size_t>(last + 1));
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<double>(i + 1);
  return s;
}

// The sum into each output (row-major over the kept dims) by walking every input multi-index.
std::vector<double> reference_sum(const Layout& l, const std::vector<double>& data) {
  std::vector<int64_t> kept = kept_sizes(l);
  std::vector<int64_t> kept_strides = contiguous(kept);
  int64_t outputs = 1, inputs = 1;
  for (int64_t s : kept)
    outputs *= s;
  for (int64_t s : l.sizes)
    inputs *= s;
  std::vector<double> out(static_cast<size_t>(outputs), 0.0);
  std::vector<int64_t> idx(l.sizes.size(), 0);
  for (int64_t n = 0; n < inputs; ++n) {
    int64_t at = l.offset, o = 0;
    for (size_t d = 0, k = 0, r = 0; d < idx.size(); ++d) {
      at += idx[d] * l.strides[d];
      if (r < l.reduced.size() && l.reduced[r] == static_cast<int64_t>(d)) {
        ++r;
      } else {
        o += idx[d] * kept_strides[k++];
      }
    }
    out[static_cast<size_t>(o)] += data[static_cast<size_t>(at)];
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < l.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// The kernels' walk: output o at kiln_eager_offset(kept, 0, o) in an output laid out with
// `out_strides`, reading the input from kiln_eager_offset(kept, 1, o) plus each reduced
// element's kiln_eager_offset(reduced, 0, r). Returned row-major over the kept dims.
std::vector<double> emulated_sum(const Layout& l, const std::vector<double>& data,
                                 const std::vector<int64_t>& out_strides, int* entry) {
  cg::EagerReductionLayout layout =
      cg::make_eager_reduction_layout("sum", l.sizes, l.strides, l.reduced, out_strides);
  *entry = layout.entry;
  KilnEagerIndexer kept, reduced;
  static_assert(sizeof(kept) == sizeof(layout.kept));
  std::memcpy(&kept, &layout.kept, sizeof kept);
  std::memcpy(&reduced, &layout.reduced, sizeof reduced);
  std::vector<int64_t> sizes = kept_sizes(l);
  int64_t span = 1;  // the output buffer's extent
  for (size_t d = 0; d < sizes.size(); ++d)
    span += sizes[d] == 0 ? 0 : (sizes[d] - 1) * out_strides[d];
  std::vector<double> buffer(static_cast<size_t>(span), -1.0);
  for (unsigned long long o = 0; o < static_cast<unsigned long long>(kept.numel); ++o) {
    long long out_at = kiln_eager_offset(kept, 0, o);
    long long in_base = l.offset + kiln_eager_offset(kept, 1, o);
    double acc = 0;
    for (unsigned long long r = 0; r < static_cast<unsigned long long>(reduced.numel); ++r)
      acc += data[static_cast<size_t>(in_base + kiln_eager_offset(reduced, 0, r))];
    buffer[static_cast<size_t>(out_at)] = acc;
  }
  // Back to row-major order, through the output's strides.
  std::vector<double> out;
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t outputs = 1;
  for (int64_t s : sizes)
    outputs *= s;
  for (int64_t n = 0; n < outputs; ++n) {
    int64_t at = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      at += idx[d] * out_strides[d];
    out.push_back(buffer[static_cast<size_t>(at)]);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Checks `l` with a contiguous output and with one whose kept dims are laid out in reverse;
// returns the entry the layout picked.
int check(const Layout& l) {
  std::vector<double> data = storage(l);
  std::vector<double> want = reference_sum(l, data);
  std::vector<int64_t> kept = kept_sizes(l);
  std::vector<int64_t> reversed_sizes(kept.rbegin(), kept.rend());
  std::vector<int64_t> reversed = contiguous(reversed_sizes);
  std::reverse(reversed.begin(), reversed.end());
  int entry = -1, entry_again = -1;
  EXPECT_EQ(emulated_sum(l, data, contiguous(kept), &entry), want);
  EXPECT_EQ(emulated_sum(l, data, reversed, &entry_again), want) << "reversed output";
  return entry;
}

constexpr int kRows = 0, kCols = 1;

TEST(CudaEagerReductionLayout, ContiguousInputsOverEveryDimSet) {
  std::vector<int64_t> sizes{4, 5, 6}, strides{30, 6, 1};
  for (std::vector<int64_t> dims :
       std::vector<std::vector<int64_t>>{{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    check({sizes, strides, dims});
  }
}

TEST(CudaEagerReductionLayout, ViewsTransposedSlicedBroadcastAndOffset) {
  check({{6, 5}, {1, 6}, {1}});  // a [5, 6] tensor transposed, reduced over its rows
  check({{6, 5}, {1, 6}, {0}});
  check({{3, 4}, {16, 2}, {0}, 3});  // every other column of every other row, offset
  check({{3, 4}, {16, 2}, {1}, 3});
  check({{4, 5}, {0, 1}, {0}});               // broadcast along dim 0
  check({{2, 3, 4}, {1, 8, 2}, {0, 2}});      // permuted
  check({{2, 3, 4}, {-12, 4, -1}, {1}, 23});  // flipped dims read backwards from the end
}

TEST(CudaEagerReductionLayout, SizeOneSizeZeroAndZeroDim) {
  check({{1, 7, 1}, {7, 1, 1}, {0, 2}});
  check({{1, 7, 1}, {7, 1, 1}, {1}});
  check({{3, 0}, {0, 1}, {1}});  // every output is the empty sum
  check({{3, 0}, {0, 1}, {0}});  // no outputs
  check({{}, {}, {}});           // a zero-dim input: one output, one element
}

TEST(CudaEagerReductionLayout, TheMappingFollowsTheLayout) {
  // Reducing the innermost dim: a block per row.
  EXPECT_EQ(check({{300, 64}, {64, 1}, {1}}), kRows);
  // Reducing a leading dim with enough outputs: neighbouring threads read neighbouring columns.
  EXPECT_EQ(check({{64, 300}, {300, 1}, {0}}), kCols);
  // The same with too few outputs to fill a block: a block per output.
  EXPECT_EQ(check({{64, 30}, {30, 1}, {0}}), kRows);
  // A few elements per output and many outputs: a thread per output.
  EXPECT_EQ(check({{1000, 3}, {3, 1}, {1}}), kCols);
  // Everything into one output.
  EXPECT_EQ(check({{40, 50}, {50, 1}, {0, 1}}), kRows);
}

TEST(CudaEagerReductionLayout, BadDimsAreErrorsNamingTheOp) {
  std::vector<int64_t> sizes{4, 5}, strides{5, 1}, out{1};
  for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{1, 0}, {2}, {0, 0}}) {
    try {
      cg::make_eager_reduction_layout("sum", sizes, strides, dims, out);
      ADD_FAILURE() << "expected kiln::Error for dims " << ::testing::PrintToString(dims);
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
