// OpInfo entries of sort, argsort, topk, cumsum and cumprod: several dtypes, negative dims,
// non-contiguous inputs, size-0 dims, 0-dim inputs, ties (which must keep their input order,
// ascending and descending, as torch's stable=True) and NaN (above every number). The ordering
// reference sorts (NaN flag, value, position) keys, so ties fall to the position; the scans add
// or multiply each line in double.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

using Line = std::vector<double>;
using LineFn = std::function<Line(const Line&)>;

// f applied to every line of x along dim (a 0-dim x is one line of one element); each output
// line has `out_len` elements and lands where the input line was.
RefTensor map_lines(const RefTensor& x, int64_t dim, int64_t out_len, DType out_dtype,
                    const LineFn& f) {
  if (x.sizes.empty()) return RefTensor{{}, {round_to(f(x.data)[0], out_dtype)}, out_dtype};
  auto nd = static_cast<int64_t>(x.sizes.size());
  auto d = static_cast<size_t>(dim < 0 ? dim + nd : dim);
  RefTensor out{x.sizes, {}, out_dtype};
  out.sizes[d] = out_len;
  out.data.assign(static_cast<size_t>(ref_numel(out.sizes)), 0.0);
  Shape others = x.sizes;
  others[d] = 1;
  for (int64_t o = 0; o < ref_numel(others); ++o) {
    Index idx = unravel(o, others);
    Line line;
    for (int64_t j = 0; j < x.sizes[d]; ++j) {
      idx[d] = j;
      line.push_back(x.at(idx));
    }
    Line result = f(line);
    for (int64_t j = 0; j < out_len; ++j) {
      idx[d] = j;
      int64_t pos = 0;
      for (size_t k = 0; k < idx.size(); ++k)
        pos = pos * out.sizes[k] + idx[k];
      out.data[static_cast<size_t>(pos)] = round_to(result[static_cast<size_t>(j)], out_dtype);
    }
  }
  return out;
}

// Positions of the line in sorted order: keys (is NaN, value, position), with the value negated
// and NaN first when descending, compared lexicographically.
std::vector<int64_t> sorted_positions(const Line& line, bool descending) {
  std::vector<std::tuple<int, double, int64_t>> keys;
  for (size_t i = 0; i < line.size(); ++i) {
    bool nan = std::isnan(line[i]);
    double v = nan ? 0.0 : line[i];
    keys.emplace_back(descending ? !nan : nan, descending ? -v : v, static_cast<int64_t>(i));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> pos;
  for (const auto& k : keys)
    pos.push_back(std::get<2>(k));
  return pos;
}

// (values, indices) of the first k of each line's sorted order.
std::vector<RefTensor> ref_ordered(const RefTensor& x, int64_t dim, bool descending, int64_t k) {
  auto pick = [descending, k](bool values) {
    return [descending, k, values](const Line& line) {
      std::vector<int64_t> pos = sorted_positions(line, descending);
      Line out;
      for (int64_t j = 0; j < std::min<int64_t>(k, static_cast<int64_t>(pos.size())); ++j) {
        int64_t p = pos[static_cast<size_t>(j)];
        out.push_back(values ? line[static_cast<size_t>(p)] : static_cast<double>(p));
      }
      return out;
    };
  };
  return {map_lines(x, dim, k, x.dtype, pick(true)),
          map_lines(x, dim, k, kiln::kInt64, pick(false))};
}

RefTensor ref_scan(const RefTensor& x, int64_t dim, bool prod) {
  DType out = kiln::is_floating(x.dtype) ? x.dtype : kiln::kInt64;
  int64_t n = x.sizes.empty() ? 1
                              : x.sizes[static_cast<size_t>(
                                    dim < 0 ? dim + static_cast<int64_t>(x.sizes.size()) : dim)];
  return map_lines(x, dim, n, out, [prod](const Line& line) {
    Line result;
    double acc = prod ? 1.0 : 0.0;
    for (double v : line) {
      acc = prod ? acc * v : acc + v;
      result.push_back(acc);
    }
    return result;
  });
}

struct Case {
  Shape shape;
  int64_t dim;
  Layout layout;
};

// Cases every op covers: negative dims, non-contiguous layouts, size-0 dims and 0-dim.
const std::vector<Case> kCases = {
    {{4, 5, 6}, -1, Layout::Contiguous}, {{4, 5, 6}, 1, Layout::Contiguous},
    {{5, 7}, 0, Layout::Transposed},     {{4, 6}, -1, Layout::Strided},
    {{3, 0, 4}, 2, Layout::Contiguous},  {{3, 0}, 1, Layout::Contiguous},
    {{7}, 0, Layout::Contiguous},        {{}, 0, Layout::Contiguous},
    {{}, -1, Layout::Contiguous},
};

Tensor from_doubles(const std::vector<double>& v, Shape sizes, DType dtype) {
  return kiln::from_vector<double>(v, std::move(sizes)).to(dtype);
}

// Inputs with ties and NaN for the ordering ops, beside the random ones. Ties are in 16-bit
// floats and integers only: a float32 or float64 sample is also gradchecked, and finite
// differences across a tie see the neighbour's slope too.
std::vector<std::pair<std::string, Tensor>> special_inputs() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"ties_f16", from_doubles({2, 1, 2, 0, 1, 2, 1, 1, 0, 3, 3, 0}, {2, 6}, kiln::kFloat16)},
      {"ties_bf16", from_doubles({1, 1, 1, 0, 0, 0, 5, 1, 5, 0}, {2, 5}, kiln::kBFloat16)},
      {"ties_i64", from_doubles({3, 1, 3, 2, 1, 3, 2, 2, 2}, {9}, kiln::kInt64)},
      {"nan_f32",
       from_doubles({1, nan, -2, nan, 1, 3, -inf, inf, nan, 0, -0.0, 0}, {2, 6}, kiln::kFloat32)},
      {"nan_f64", from_doubles({nan, 2, nan, -1, inf, nan}, {6}, kiln::kFloat64)},
  };
}

OpInfo sort_info(const char* name) {
  OpInfo info{name, {name}};
  bool argsort = std::string(name) == "argsort";
  info.samples = [argsort] {
    std::vector<Sample> out;
    uint32_t seed = 4100;
    auto add = [&](std::string label, Tensor x, int64_t dim, bool desc) {
      int64_t n = x.dim() == 0 ? 1 : x.size(dim);
      out.push_back(make_sample(
          fmt::format("{}_dim{}{}", label, dim, desc ? "_descending" : ""), {std::move(x)},
          [argsort, dim, desc](const std::vector<Tensor>& in) {
            if (argsort) return std::vector{kiln::argsort(in[0], dim, desc)};
            auto [v, i] = kiln::sort(in[0], dim, desc);
            return std::vector{v, i};
          },
          [argsort, dim, desc, n](const std::vector<RefTensor>& in) {
            std::vector<RefTensor> r = ref_ordered(in[0], dim, desc, n);
            if (argsort) return std::vector{r[1]};
            return r;
          }));
    };
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kInt64, kiln::kBool,
                     kiln::kUInt8, kiln::kInt8, kiln::kInt16}) {
      for (const Case& c : kCases) {
        for (bool desc : {false, true}) {
          add(fmt::format("{}_[{}]{}", kiln::dtype_name(dt), shape_name(c.shape),
                          layout_name(c.layout)),
              make_input(c.shape, dt, c.layout, -4, 4, seed++), c.dim, desc);
        }
      }
    }
    for (const auto& [label, x] : special_inputs()) {
      for (bool desc : {false, true})
        add(label, x, -1, desc);
    }
    add("ties_f16_dim0", special_inputs()[0].second, 0, true);
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(sort, sort_info("sort"));
KILN_REGISTER_OPINFO(argsort, sort_info("argsort"));

KILN_REGISTER_OPINFO(topk, [] {
  OpInfo info{"topk", {"topk"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 4300;
    auto add = [&](std::string label, Tensor x, int64_t k, int64_t dim, bool largest) {
      out.push_back(make_sample(
          fmt::format("{}_k{}_dim{}{}", label, k, dim, largest ? "" : "_smallest"), {std::move(x)},
          [k, dim, largest](const std::vector<Tensor>& in) {
            auto [v, i] = kiln::topk(in[0], k, dim, largest, /*sorted=*/true);
            return std::vector{v, i};
          },
          [k, dim, largest](const std::vector<RefTensor>& in) {
            // A 0-dim input keeps its one element whatever k is, as torch.
            return ref_ordered(in[0], dim, largest, in[0].sizes.empty() ? 1 : k);
          }));
    };
    struct TopkCase {
      Shape shape;
      int64_t k, dim;
      Layout layout;
    };
    const std::vector<TopkCase> cases = {
        {{4, 5, 6}, 3, -1, Layout::Contiguous}, {{4, 5, 6}, 5, 1, Layout::Contiguous},
        {{5, 7}, 2, 0, Layout::Transposed},     {{4, 6}, 0, -1, Layout::Strided},
        {{4, 6}, 6, 1, Layout::Contiguous},     {{3, 0, 4}, 2, -1, Layout::Contiguous},
        {{3, 0}, 0, 1, Layout::Contiguous},     {{8}, 3, 0, Layout::Contiguous},
        {{}, 1, 0, Layout::Contiguous},         {{}, 0, -1, Layout::Contiguous},
    };
    for (DType dt :
         {kiln::kFloat32, kiln::kFloat64, kiln::kInt64, kiln::kInt32, kiln::kUInt8, kiln::kInt8}) {
      for (const TopkCase& c : cases) {
        for (bool largest : {true, false}) {
          add(fmt::format("{}_[{}]{}", kiln::dtype_name(dt), shape_name(c.shape),
                          layout_name(c.layout)),
              make_input(c.shape, dt, c.layout, -4, 4, seed++), c.k, c.dim, largest);
        }
      }
    }
    for (const auto& [label, x] : special_inputs()) {
      for (bool largest : {true, false})
        add(label, x, 3, -1, largest);
    }
    return out;
  };
  return info;
}());

OpInfo scan_info(const char* name, bool prod) {
  OpInfo info{name, {name}};
  info.samples = [prod] {
    std::vector<Sample> out;
    uint32_t seed = prod ? 4600 : 4500;
    auto add = [&](std::string label, Tensor x, int64_t dim) {
      out.push_back(make_sample(
          fmt::format("{}_dim{}", label, dim), {std::move(x)},
          [dim, prod](const std::vector<Tensor>& in) {
            return std::vector{prod ? kiln::cumprod(in[0], dim) : kiln::cumsum(in[0], dim)};
          },
          [dim, prod](const std::vector<RefTensor>& in) {
            return std::vector{ref_scan(in[0], dim, prod)};
          }));
    };
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kInt64, kiln::kBool,
                     kiln::kFloat16, kiln::kUInt8, kiln::kInt16}) {
      for (const Case& c : kCases) {
        // Products of up to 7 factors stay well inside every dtype's range in [-2, 2].
        double lo = prod ? -2 : -4, hi = prod ? 2 : 4;
        add(fmt::format("{}_[{}]{}", kiln::dtype_name(dt), shape_name(c.shape),
                        layout_name(c.layout)),
            make_input(c.shape, dt, c.layout, lo, hi, seed++), c.dim);
      }
    }
    // Zeros: the product's gradient must not divide by the input.
    add("zeros_f64",
        from_doubles({1.5, 0, 2, -1, 0.5, 3, 0, 0, 2, 1, 0, 1, 1, 1, 2}, {3, 5}, kiln::kFloat64),
        1);
    add("zeros_f32_dim0", from_doubles({0, 2, 1, 0, 3, -1, 2, 0.5}, {4, 2}, kiln::kFloat32), 0);
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(cumsum, scan_info("cumsum", false));
KILN_REGISTER_OPINFO(cumprod, scan_info("cumprod", true));

}  // namespace
}  // namespace kiln_test
