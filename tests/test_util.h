// Helpers shared by the runtime and frontend test suites. Every helper here computes reference
// values with plain loops over std::vector data; none of them calls a kiln op, so that an
// expected value never depends on the code under test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/kiln.h"

namespace kiln_test {

using Index = std::vector<int64_t>;

inline int64_t ref_numel(const kiln::Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

// Row-major strides of a freshly allocated tensor of shape `sizes`.
inline kiln::Shape ref_contiguous_strides(const kiln::Shape& sizes) {
  kiln::Shape strides(sizes.size(), 1);
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

// The multi-index of row-major position `linear` in a tensor of shape `sizes`.
inline Index unravel(int64_t linear, const kiln::Shape& sizes) {
  Index idx(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = linear % sizes[d];
    linear /= sizes[d];
  }
  return idx;
}

// data[offset + sum_d idx[d] * strides[d]]: the element a strided view would read.
template <class T>
T ref_at(const std::vector<T>& data, const kiln::Shape& sizes, const kiln::Shape& strides,
         int64_t offset, const Index& idx) {
  int64_t pos = offset;
  for (size_t d = 0; d < sizes.size(); ++d)
    pos += idx[d] * strides[d];
  return data.at(static_cast<size_t>(pos));
}

// Every element of the strided view (sizes, strides, offset) over `data`, in row-major order.
template <class T>
std::vector<T> ref_strided(const std::vector<T>& data, const kiln::Shape& sizes,
                           const kiln::Shape& strides, int64_t offset) {
  std::vector<T> out;
  int64_t n = ref_numel(sizes);
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(ref_at(data, sizes, strides, offset, unravel(i, sizes)));
  }
  return out;
}

// The broadcast of two shapes by the NumPy rule (right-aligned, size 1 stretches).
inline kiln::Shape ref_broadcast_shape(const kiln::Shape& a, const kiln::Shape& b) {
  size_t n = std::max(a.size(), b.size());
  kiln::Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Row-major position, in a contiguous tensor of shape `in_sizes`, of the element that
// broadcasting reads for output multi-index `out_idx`.
inline int64_t broadcast_source(const Index& out_idx, const kiln::Shape& in_sizes) {
  size_t lead = out_idx.size() - in_sizes.size();
  int64_t pos = 0;
  for (size_t d = 0; d < in_sizes.size(); ++d) {
    int64_t i = in_sizes[d] == 1 ? 0 : out_idx[lead + d];
    pos = pos * in_sizes[d] + i;
  }
  return pos;
}

// n values uniform in [lo, hi] from a fixed-seed std::mt19937 (integers for integral T).
template <class T>
std::vector<T> random_vector(size_t n, double lo, double hi, uint32_t seed = 1234) {
  std::mt19937 gen(seed);
  std::vector<T> out(n);
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution dist(0.5);
    for (auto&& v : out)
      v = dist(gen);
  } else if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (auto& v : out)
      v = static_cast<T>(dist(gen));
  } else {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& v : out) {
      double x = dist(gen);
      if constexpr (std::is_floating_point_v<T>) {
        v = static_cast<T>(x);
      } else {
        v = T(static_cast<float>(x));  // kiln::Half / kiln::BFloat16
      }
    }
  }
  return out;
}

template <class T>
kiln::Tensor make_tensor(const std::vector<T>& data, kiln::Shape sizes) {
  return kiln::from_vector(data, std::move(sizes));
}

// Any element type (including kiln::Half / kiln::BFloat16) as a double.
template <class T>
double to_d(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(x);
  } else {
    return static_cast<double>(static_cast<float>(x));
  }
}

// Element-wise |actual - expected| <= atol + rtol * |expected|; NaN matches NaN and infinities
// must match exactly. Reports the first few mismatches.
template <class A, class E>
::testing::AssertionResult all_close(const std::vector<A>& actual, const std::vector<E>& expected,
                                     double rtol, double atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size mismatch: actual " << actual.size() << " vs expected " << expected.size();
  }
  std::ostringstream bad;
  int failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = to_d(actual[i]);
    double e = to_d(expected[i]);
    bool ok;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
    } else {
      ok = std::abs(a - e) <= atol + rtol * std::abs(e);
    }
    if (!ok) {
      if (failures < 5) bad << "\n  [" << i << "] actual " << a << " expected " << e;
      ++failures;
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << failures << " of " << actual.size() << " elements differ (rtol " << rtol << ", atol "
         << atol << "):" << bad.str();
}

#define EXPECT_ALL_CLOSE(actual, expected, rtol, atol) \
  EXPECT_TRUE(::kiln_test::all_close((actual), (expected), (rtol), (atol)))

// Runs f and checks that it throws kiln::Error whose what() contains every needle.
template <class F>
::testing::AssertionResult throws_error_containing(F&& f,
                                                   std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const kiln::Error& e) {
    std::string msg = e.what();
    for (const std::string& n : needles) {
      if (msg.find(n) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << msg << "\" does not contain \"" << n << "\"";
      }
    }
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-kiln exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The message of the kiln::Error that f throws, or "" (with a test failure) if none.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

// Restores the intra-op thread count when it goes out of scope.
class NumThreadsGuard {
 public:
  explicit NumThreadsGuard(int n) : saved_(kiln::get_num_threads()) { kiln::set_num_threads(n); }
  NumThreadsGuard() : saved_(kiln::get_num_threads()) {}
  ~NumThreadsGuard() { kiln::set_num_threads(saved_); }
  NumThreadsGuard(const NumThreadsGuard&) = delete;
  NumThreadsGuard& operator=(const NumThreadsGuard&) = delete;

 private:
  int saved_;
};

// Float values of a half-precision vector.
template <class H>
std::vector<float> to_floats(const std::vector<H>& v) {
  std::vector<float> out;
  out.reserve(v.size());
  for (const H& h : v)
    out.push_back(static_cast<float>(h));
  return out;
}

// The elements of a floating point tensor as doubles, read in the tensor's own dtype (no
// library conversion is involved).
inline std::vector<double> read_doubles(const kiln::Tensor& t) {
  std::vector<double> out;
  auto append = [&](const auto& v) {
    for (const auto& x : v)
      out.push_back(to_d(x));
  };
  switch (t.dtype()) {
    case kiln::kFloat32:
      append(t.to_vector<float>());
      break;
    case kiln::kFloat64:
      append(t.to_vector<double>());
      break;
    case kiln::kFloat16:
      append(t.to_vector<kiln::Half>());
      break;
    case kiln::kBFloat16:
      append(t.to_vector<kiln::BFloat16>());
      break;
    case kiln::kUInt8:
      append(t.to_vector<uint8_t>());
      break;
    case kiln::kInt8:
      append(t.to_vector<int8_t>());
      break;
    case kiln::kInt16:
      append(t.to_vector<int16_t>());
      break;
    case kiln::kInt32:
      append(t.to_vector<int32_t>());
      break;
    case kiln::kInt64:
      append(t.to_vector<int64_t>());
      break;
    default:
      ADD_FAILURE() << "read_doubles: unsupported dtype " << t.dtype();
  }
  return out;
}

// The elements of a bool tensor as 0/1 ints, read straight from its memory (to_vector<bool>
// cannot exist: std::vector<bool> has no contiguous storage).
inline std::vector<int> bool_values(const kiln::Tensor& t) {
  EXPECT_EQ(t.dtype(), kiln::kBool);
  kiln::Tensor c = t.contiguous();
  const bool* p = c.data_ptr<bool>();
  return std::vector<int>(p, p + c.numel());
}

}  // namespace kiln_test
