// OpInfo entries of the composites that rearrange elements: tril, triu, flip, roll, repeat.
// References pick each output element's source index in loops; none calls a kiln op.
#include "opinfo/index_map_ref.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

const std::vector<DType> kDTypes = {kiln::kFloat64, kiln::kFloat32, kiln::kInt64, kiln::kBool};

// ---- tril / triu ----

OpInfo triangle_info(const char* name, bool lower) {
  // arange, the difference of the two index vectors, the comparison and the select.
  OpInfo info{name,
              {"arange", "unsqueeze", "sub", lower ? "le_scalar" : "ge_scalar", "where", "full"}};
  info.samples = [name, lower] {
    struct Case {
      Shape shape;
      Layout layout;
    };
    const std::vector<Case> cases = {
        {{4, 5}, Layout::Contiguous}, {{5, 4}, Layout::Transposed}, {{2, 3, 4}, Layout::Contiguous},
        {{2, 4, 3}, Layout::Strided}, {{3, 0}, Layout::Contiguous}, {{0, 2, 2}, Layout::Contiguous},
        {{1, 1}, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 2000;
    for (DType dt : kDTypes) {
      for (const Case& c : cases) {
        for (int64_t k : {0, 1, -1, 2, -3, 9, -9}) {
          if (dt != kiln::kFloat64 && k != 0 && k != -1) continue;
          out.push_back(make_sample(
              fmt::format("{}_{}_[{}]{}_diag{}", name, kiln::dtype_name(dt), shape_name(c.shape),
                          layout_name(c.layout), k),
              {make_input(c.shape, dt, c.layout, -4, 4, seed++)},
              [k, lower](const std::vector<Tensor>& in) {
                return std::vector{lower ? kiln::tril(in[0], k) : kiln::triu(in[0], k)};
              },
              [k, lower](const std::vector<RefTensor>& in) {
                const RefTensor& x = in[0];
                return std::vector{ref_from_index(x.sizes, x.dtype, [&](const Index& idx) {
                  int64_t col_minus_row = idx.back() - idx[idx.size() - 2];
                  bool keep = lower ? col_minus_row <= k : col_minus_row >= k;
                  return keep ? x.at(idx) : 0.0;
                })};
              }));
        }
      }
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(tril_info, triangle_info("tril", true));
KILN_REGISTER_OPINFO(triu_info, triangle_info("triu", false));

// One case of flip, roll or repeat: the input's shape and layout and the op's two lists
// (dims; shifts and dims; repeats).
struct MoveCase {
  Shape shape, first, second;
  Layout layout = Layout::Contiguous;
};

using MoveCall = std::function<Tensor(const Tensor&, const MoveCase&)>;
using MoveRef = std::function<RefTensor(const RefTensor&, const MoveCase&)>;

// One sample per dtype and case.
std::vector<Sample> move_samples(const std::vector<MoveCase>& cases, uint32_t seed,
                                 const MoveCall& call, const MoveRef& ref) {
  std::vector<Sample> out;
  for (DType dt : kDTypes) {
    for (const MoveCase& c : cases) {
      out.push_back(make_sample(
          fmt::format("{}_[{}]{}_{}_{}", kiln::dtype_name(dt), shape_name(c.shape),
                      layout_name(c.layout), list_name(c.first), list_name(c.second)),
          {make_input(c.shape, dt, c.layout, -9, 9, seed++)},
          [c, call](const std::vector<Tensor>& in) { return std::vector{call(in[0], c)}; },
          [c, ref](const std::vector<RefTensor>& in) { return std::vector{ref(in[0], c)}; }));
    }
  }
  return out;
}

// ---- flip ----

RefTensor ref_flip(const RefTensor& x, const Shape& dims) {
  return ref_gather_from(x, x.sizes, [&](const Index& idx) {
    Index src = idx;
    for (int64_t d : dims) {
      if (x.sizes.empty()) continue;
      auto w = static_cast<size_t>(ref_wrap(d, static_cast<int64_t>(x.sizes.size())));
      src[w] = x.sizes[w] - 1 - idx[w];
    }
    return std::optional<Index>(src);
  });
}

KILN_REGISTER_OPINFO(flip_info, [] {
  OpInfo info{"flip", {"index_select", "arange", "clone"}};
  info.samples = [] {
    const std::vector<MoveCase> cases = {
        {{4, 5, 6}, {0}},
        {{4, 5, 6}, {-1}},
        {{4, 5, 6}, {0, 2}},
        {{4, 5, 6}, {1, -1, 0}},
        {{4, 5, 6}, {}},
        {{3, 5}, {1}, {}, Layout::Transposed},
        {{3, 5}, {0, 1}, {}, Layout::Strided},
        {{2, 0, 3}, {1, 2}},
        {{}, {0}},
        {{7}, {-1}},
    };
    return move_samples(
        cases, 2100, [](const Tensor& x, const MoveCase& c) { return kiln::flip(x, c.first); },
        [](const RefTensor& x, const MoveCase& c) { return ref_flip(x, c.first); });
  };
  return info;
}());

// ---- roll ----

// Sequential rolls (a dim given twice rolls by both shifts); without dims, out[i] =
// flat[i - shift] over the flattened elements.
RefTensor ref_roll(const RefTensor& x, const Shape& shifts, const Shape& dims) {
  if (dims.empty()) {
    return ref_from_index(x.sizes, x.dtype, [&](const Index& idx) {
      int64_t pos = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        pos = pos * x.sizes[d] + idx[d];
      return x.data[static_cast<size_t>(ref_wrap(pos - shifts[0], x.numel()))];
    });
  }
  return ref_gather_from(x, x.sizes, [&](const Index& idx) {
    Index src = idx;
    for (size_t i = 0; i < dims.size() && !x.sizes.empty(); ++i) {
      auto w = static_cast<size_t>(ref_wrap(dims[i], static_cast<int64_t>(idx.size())));
      src[w] = ref_wrap(src[w] - shifts[i], x.sizes[w]);
    }
    return std::optional<Index>(src);
  });
}

KILN_REGISTER_OPINFO(roll_info, [] {
  OpInfo info{"roll", {"slice", "cat", "view", "clone"}};
  info.samples = [] {
    const std::vector<MoveCase> cases = {
        {{4, 5}, {2}, {1}},
        {{4, 5}, {-1}, {0}},
        {{4, 5}, {7, -3}, {0, 1}},
        {{4, 5}, {1, 2}, {1, 1}},  // the same dim twice: the shifts add up
        {{4, 5}, {3}, {}},         // flattened
        {{4, 5}, {-13}, {}},
        {{4, 5}, {0}, {1}},
        {{4, 5}, {10}, {-1}},  // a multiple of the size
        {{3, 6}, {2, 1}, {-1, 0}, Layout::Transposed},
        {{3, 6}, {-4}, {1}, Layout::Strided},
        {{2, 3, 4}, {1, -1, 2}, {0, 1, 2}},
        {{2, 0, 3}, {1, 1}, {1, 2}},
        {{}, {1}, {}},
        {{}, {2}, {0}},
    };
    return move_samples(
        cases, 2200,
        [](const Tensor& x, const MoveCase& c) { return kiln::roll(x, c.first, c.second); },
        [](const RefTensor& x, const MoveCase& c) { return ref_roll(x, c.first, c.second); });
  };
  return info;
}());

// ---- repeat ----

RefTensor ref_repeat(const RefTensor& x, const Shape& sizes) {
  size_t lead = sizes.size() - x.sizes.size();
  Shape out_sizes;
  for (size_t i = 0; i < sizes.size(); ++i)
    out_sizes.push_back(sizes[i] * (i < lead ? 1 : x.sizes[i - lead]));
  return ref_gather_from(x, out_sizes, [&](const Index& idx) {
    Index src;
    for (size_t i = lead; i < sizes.size(); ++i)
      src.push_back(idx[i] % x.sizes[i - lead]);
    return std::optional<Index>(src);
  });
}

KILN_REGISTER_OPINFO(repeat_info, [] {
  OpInfo info{"repeat", {"view", "expand", "clone"}};
  info.samples = [] {
    const std::vector<MoveCase> cases = {
        {{2, 3}, {2, 2}},
        {{3}, {2, 1, 3}},
        {{2, 3}, {1, 1}},
        {{2, 3}, {0, 2}},
        {{2, 0}, {3, 2}},
        {{}, {3}},
        {{}, {}},
        {{3, 4}, {2, 1}, {}, Layout::Transposed},
        {{2, 4}, {1, 3}, {}, Layout::Strided},
        {{1, 3}, {2, 1}},  // expanding the size-1 dim alone would be a view
        {{2, 1, 3}, {1, 4, 1, 2}},
    };
    return move_samples(
        cases, 2300, [](const Tensor& x, const MoveCase& c) { return kiln::repeat(x, c.first); },
        [](const RefTensor& x, const MoveCase& c) { return ref_repeat(x, c.first); });
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
