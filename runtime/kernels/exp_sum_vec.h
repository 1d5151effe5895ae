// Sums of exp(x - ref) over contiguous float32 data, for logsumexp and log_softmax's normalizer.
// See Note [Table-driven exp for sums] in exp_sum_vec.cpp.
#pragma once

#include <cstdint>

namespace kiln {

// The lanes that the terms are added into: element i goes to lane i % kExpSumLanes, each lane a
// float32 sum over at most 32 terms, added into a double lane after each 1024 elements.
constexpr int kExpSumLanes = 32;

// The largest x - ref that sum_exp_shifted computes terms for. Above it the sum is meaningless,
// and the caller must run again with a larger ref. Each term is at most e^64, and a float32 lane
// of 32 such terms stays far from overflow.
constexpr float kExpSumMaxShift = 64;

struct ExpSum {
  double sum;  // sum of exp(x[i] - ref), with exp(d) below d = -87 (under 2e-38) taken as 0
  float max;   // max of x[i], ignoring NaN (NaN shows in sum instead); -inf when n == 0
};

// Sum of exp(x[i] - ref) over i < n, for a finite ref. This holds only where every x[i] - ref <=
// kExpSumMaxShift. The sum is NaN when some x[i] - ref is NaN. The terms dropped below -87 change
// a sum that holds a term >= 1 by less than n * 2e-38.
ExpSum sum_exp_shifted(const float* x, int64_t n, float ref);

}  // namespace kiln
