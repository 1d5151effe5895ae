// make_eager_indexer (codegen/cuda/eager_pointwise.h): the dims a shape-generic eager CUDA kernel
// walks, against layouts worked out by hand.
#include <gtest/gtest.h>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/eager_pointwise.h"

namespace {

using kiln::codegen::cuda::EagerIndexer;
using kiln::codegen::cuda::make_eager_indexer;

EagerIndexer indexer(std::vector<int64_t> sizes, std::vector<std::vector<int64_t>> strides) {
  return make_eager_indexer("test", sizes, strides);
}

TEST(CudaEagerIndexer, ContiguousOperandsCollapseToTheFlatIndex) {
  EagerIndexer ix = indexer({4, 5, 6}, {{30, 6, 1}, {30, 6, 1}});
  EXPECT_EQ(ix.numel, 120);
  EXPECT_EQ(ix.ndim, 1);
  EXPECT_EQ(ix.sizes[0], 120);
  EXPECT_EQ(ix.contiguous, 1);
}

TEST(CudaEagerIndexer, ATransposedInputKeepsTwoDims) {
  // out [4, 5] contiguous; in is a [5, 4] tensor transposed: strides (1, 4).
  EagerIndexer ix = indexer({4, 5}, {{5, 1}, {1, 4}});
  EXPECT_EQ(ix.ndim, 2);
  EXPECT_EQ(ix.contiguous, 0);
  EXPECT_EQ(ix.sizes[0], 4);
  EXPECT_EQ(ix.sizes[1], 5);
  EXPECT_EQ(ix.strides[0][0], 5);
  EXPECT_EQ(ix.strides[0][1], 1);
  EXPECT_EQ(ix.strides[1][0], 1);
  EXPECT_EQ(ix.strides[1][1], 4);
}

TEST(CudaEagerIndexer, BroadcastDimsMergeOnlyWhereEveryOperandAllows) {
  // out [2, 3, 4]; a bias of shape [4] broadcast (strides 0, 0, 1): the outer two dims merge
  // (6 rows of stride 4 for out, 0 for the bias), the inner one stays apart.
  EagerIndexer ix = indexer({2, 3, 4}, {{12, 4, 1}, {0, 0, 1}});
  EXPECT_EQ(ix.ndim, 2);
  EXPECT_EQ(ix.sizes[0], 6);
  EXPECT_EQ(ix.sizes[1], 4);
  EXPECT_EQ(ix.strides[0][0], 4);
  EXPECT_EQ(ix.strides[1][0], 0);
  EXPECT_EQ(ix.strides[1][1], 1);
  EXPECT_EQ(ix.contiguous, 0);
}

TEST(CudaEagerIndexer, SizeOneDimsAreDroppedAndEmptyShapesKeepZeroElements) {
  EagerIndexer one = indexer({1, 7, 1}, {{7, 1, 1}, {99, 1, 5}});
  EXPECT_EQ(one.ndim, 1);
  EXPECT_EQ(one.contiguous, 1);
  EagerIndexer scalar = indexer({}, {{}, {}});
  EXPECT_EQ(scalar.numel, 1);
  EXPECT_EQ(scalar.ndim, 0);
  EXPECT_EQ(indexer({3, 0}, {{0, 1}}).numel, 0);
}

TEST(CudaEagerIndexer, TooManyUnmergeableDimsIsAnErrorNamingTheOp) {
  // Nine dims of size 2 whose strides never line up (each twice the contiguous one).
  std::vector<int64_t> sizes(9, 2), strides(9);
  int64_t s = 2;
  for (size_t d = 9; d-- > 0;) {
    strides[d] = s;
    s *= 4;
  }
  try {
    indexer(sizes, {strides});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("test"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at most 8 dims"), std::string::npos) << e.what();
  }
}

}  // namespace
