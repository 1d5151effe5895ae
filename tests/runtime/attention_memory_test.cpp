// The fused attention path never materializes the L x S scores (Note [Flash attention]): the CPU
// allocator's peak during a forward+backward stays below one S x S float32 matrix per batch entry
// and head, where the composite (matmul, softmax, matmul) needs several.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "kiln/runtime/allocator.h"

namespace {

using kiln::Tensor;

// Peak bytes allocated beyond what was live before, during fn().
template <class F>
int64_t peak_during(F&& fn) {
  kiln::cpu_allocator_reset_peak();
  int64_t base = kiln::cpu_allocator_stats().allocated_bytes;
  fn();
  return kiln::cpu_allocator_stats().peak_allocated_bytes - base;
}

TEST(AttentionMemory, FusedForwardBackwardStaysBelowOneScoreMatrixPerHead) {
  const int64_t b = 1, h = 2, s = 1024, d = 32;
  const int64_t one_matrix = b * h * s * s * 4;
  kiln::manual_seed(0);
  Tensor q = kiln::randn({b, h, s, d}).requires_grad_();
  Tensor k = kiln::randn({b, h, s, d}).requires_grad_();
  Tensor v = kiln::randn({b, h, s, d}).requires_grad_();
  auto step = [&](bool fused) {
    Tensor out;
    if (fused) {
      out = kiln::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    } else {
      Tensor scores = kiln::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(d)));
      out = kiln::matmul(kiln::softmax(scores, -1), v);
    }
    out.sum().backward();
    for (const Tensor* t : {&q, &k, &v})
      t->mutable_grad() = Tensor();
  };
  int64_t fused = peak_during([&] { step(true); });
  int64_t composite = peak_during([&] { step(false); });
  std::printf(
      "[attention memory] B%lld h%lld S%lld d%lld: fused peak %.2f MiB, composite %.2f "
      "MiB, one S x S float32 matrix per head %.2f MiB\n",
      (long long)b, (long long)h, (long long)s, (long long)d, fused / 1048576.0,
      composite / 1048576.0, one_matrix / 1048576.0);
  EXPECT_LT(fused, one_matrix);
  EXPECT_GT(composite, one_matrix);  // the measurement sees a materialized matrix
}

}  // namespace
