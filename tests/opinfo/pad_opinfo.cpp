// OpInfo entries of torch.nn.functional.pad (constant, reflect, replicate, circular) and
// one_hot.
// References map each output index to its source in loops; none calls a kiln op.
#include <cstdlib>

#include "opinfo/index_map_ref.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

// The input index of output position i along a dim of size n padded by `before`, or none
// for a constant-filled position.
std::optional<int64_t> pad_source(const std::string& mode, int64_t i, int64_t before, int64_t n) {
  int64_t j = i - before;
  if (mode == "constant") return j >= 0 && j < n ? std::optional<int64_t>(j) : std::nullopt;
  if (mode == "replicate") return std::min(std::max<int64_t>(j, 0), n - 1);
  if (mode == "circular") return j < 0 ? j + n : j >= n ? j - n : j;  // one wrap at most
  // reflect: mirror about the first and last elements without repeating them
  if (j < 0) j = -j;
  if (j >= n) j = 2 * (n - 1) - j;
  return j;
}

RefTensor ref_pad(const RefTensor& x, const Shape& pad, const std::string& mode, double value) {
  Shape sizes = x.sizes;
  size_t nd = sizes.size();
  for (size_t i = 0; i < pad.size() / 2; ++i)
    sizes[nd - 1 - i] += pad[2 * i] + pad[2 * i + 1];
  return ref_gather_from(
      x, sizes,
      [&](const Index& idx) -> std::optional<Index> {
        Index src = idx;
        for (size_t i = 0; i < pad.size() / 2; ++i) {
          size_t d = nd - 1 - i;
          std::optional<int64_t> s = pad_source(mode, idx[d], pad[2 * i], x.sizes[d]);
          if (!s) return std::nullopt;
          src[d] = *s;
        }
        return src;
      },
      value);
}

KILN_REGISTER_OPINFO(pad_info, [] {
  OpInfo info{"pad", {"full", "cat", "slice", "index_select", "clone"}};
  info.samples = [] {
    struct Case {
      std::string mode;
      Shape shape, pad;
      Layout layout = Layout::Contiguous;
      double value = 0;
    };
    const std::vector<Case> cases = {
        {"constant", {3, 4}, {1, 2}},
        {"constant", {3, 4}, {1, 1, 2, 0}, Layout::Transposed},
        {"constant", {3, 4}, {-1, 2}},
        {"constant", {3, 4}, {-1, -2, 1, -1}, Layout::Strided},
        {"constant", {2, 3, 4}, {0, 0, 0, 0, 1, 1}, Layout::Contiguous, 2.5},
        {"constant", {2, 3}, {}},
        {"constant", {2, 3}, {0, 0}},
        {"constant", {0, 3}, {1, 1, 1, 1}, Layout::Contiguous, -1},
        {"constant", {2, 3}, {-3, 0}},  // cropped to nothing
        {"reflect", {2, 5}, {2, 3}},
        {"reflect", {2, 3, 4}, {1, 2, 2, 1}},
        {"reflect", {3, 4}, {3, 3}, Layout::Transposed},
        {"reflect", {3, 4}, {-1, 2}, Layout::Strided},
        {"reflect", {1, 2, 3, 3}, {1, 1, 2, 2}},
        {"replicate", {2, 3}, {4, 1}},
        {"replicate", {2, 3, 4}, {1, 1, 1, 1, 1, 1}, Layout::Transposed},
        {"replicate", {1, 1}, {2, 2, 3, 0}},
        {"replicate", {3, 4}, {-2, 1}},
        {"circular", {2, 5}, {2, 3}},
        {"circular", {2, 3, 4}, {1, 2, 3, 1}, Layout::Transposed},
        {"circular", {3, 4}, {4, 4}},  // a whole extra period on each side
        {"circular", {3, 4}, {-1, 2}, Layout::Strided},
    };
    std::vector<Sample> out;
    uint32_t seed = 2400;
    for (DType dt : {kiln::kFloat64, kiln::kFloat32, kiln::kInt64}) {
      for (const Case& c : cases) {
        Case k = c;
        if (!kiln::is_floating(dt)) k.value = std::round(k.value);
        out.push_back(make_sample(
            fmt::format("{}_{}_[{}]{}_pad{}_value{}", k.mode, kiln::dtype_name(dt),
                        shape_name(k.shape), layout_name(k.layout), list_name(k.pad), k.value),
            {make_input(k.shape, dt, k.layout, -9, 9, seed++)},
            [k](const std::vector<Tensor>& in) {
              return std::vector{kiln::pad(in[0], k.pad, k.mode, k.value)};
            },
            [k](const std::vector<RefTensor>& in) {
              return std::vector{ref_pad(in[0], k.pad, k.mode, k.value)};
            }));
      }
    }
    return out;
  };
  return info;
}());

// The comparison with an arange defines the result; the unsqueeze and the int64 conversion
// around it are listed under their own OpInfos.
KILN_REGISTER_OPINFO(one_hot_info, [] {
  OpInfo info{"one_hot", {"arange", "eq"}};
  info.samples = [] {
    struct Case {
      Shape shape;
      int64_t classes;
      Layout layout = Layout::Contiguous;
    };
    const std::vector<Case> cases = {
        {{6}, 4},
        {{6}, 9},
        {{2, 3}, 5, Layout::Transposed},
        {{3, 4}, 4, Layout::Strided},
        {{}, 3},
        {{0}, 3},
        {{2, 0}, 0},
    };
    std::vector<Sample> out;
    uint32_t seed = 2500;
    for (const Case& c : cases) {
      int64_t classes = c.classes;
      out.push_back(make_sample(
          fmt::format("[{}]{}_classes{}", shape_name(c.shape), layout_name(c.layout), classes),
          {make_input(c.shape, kiln::kInt64, c.layout, 0,
                      std::max<double>(0, static_cast<double>(classes - 1)), seed++)},
          [classes](const std::vector<Tensor>& in) {
            return std::vector{kiln::one_hot(in[0], classes)};
          },
          [classes](const std::vector<RefTensor>& in) {
            const RefTensor& x = in[0];
            Shape sizes = x.sizes;
            sizes.push_back(classes);
            return std::vector{ref_from_index(sizes, kiln::kInt64, [&](const Index& idx) {
              Index src(idx.begin(), idx.end() - 1);
              return x.at(src) == static_cast<double>(idx.back()) ? 1.0 : 0.0;
            })};
          }));
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
