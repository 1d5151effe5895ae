// OpInfo entries of advanced indexing: index, index_put (accumulating and not), index_put_,
// bool-mask indexing, masked_select and nonzero. The references walk the result's multi-index
// and name each source element directly from torch's rule: the index tensors broadcast to B,
// which replaces the indexed dims when they are adjacent and comes first otherwise. Samples
// cover duplicates, broadcasting index tensors, non-adjacent index tensors, negative indices,
// non-contiguous x, size-0 dims and 0-dim index tensors, in every dtype.
#include <fmt/format.h>

#include <optional>
#include <set>

#include "kiln/runtime/api/advanced_index_ops.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

Tensor ints(const std::vector<int64_t>& v, Shape sizes) {
  return kiln::from_vector<int64_t>(v, std::move(sizes));
}

// Index tensors placed at `dims` of a torch-style list (absent entries are full slices).
kiln::IndexList list_of(std::span<const Tensor> tensors, const Shape& dims) {
  kiln::IndexList l(dims.empty() ? 0 : static_cast<size_t>(dims.back() + 1));
  for (size_t k = 0; k < dims.size(); ++k)
    l[static_cast<size_t>(dims[k])] = tensors[k];
  return l;
}

// For each element of the result (row-major), the multi-index into x it reads, following
// torch's placement rule.
struct RefPlacement {
  Shape result;
  std::vector<Index> source;
};

RefPlacement ref_placement(const Shape& x, const std::vector<RefTensor>& idx, const Shape& dims) {
  Shape b;
  for (const RefTensor& t : idx)
    b = ref_broadcast_shape(b, t.sizes);
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k)
    adjacent = adjacent && dims[k] == dims[k - 1] + 1;
  std::vector<int64_t> rest;  // the dims of x not indexed
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) rest.push_back(d);
  // Where B starts in the result, and how many of `rest` come before it.
  size_t before = 0;
  if (adjacent && !dims.empty())
    while (before < rest.size() && rest[before] < dims[0])
      ++before;
  RefPlacement p;
  for (size_t r = 0; r < before; ++r)
    p.result.push_back(x[static_cast<size_t>(rest[r])]);
  p.result.insert(p.result.end(), b.begin(), b.end());
  for (size_t r = before; r < rest.size(); ++r)
    p.result.push_back(x[static_cast<size_t>(rest[r])]);
  for (int64_t i = 0; i < ref_numel(p.result); ++i) {
    Index c = unravel(i, p.result);
    Index bpos(c.begin() + static_cast<int64_t>(before),
               c.begin() + static_cast<int64_t>(before + b.size()));
    Index src(x.size(), 0);
    for (size_t r = 0; r < rest.size(); ++r)
      src[static_cast<size_t>(rest[r])] = c[r < before ? r : r + b.size()];
    for (size_t k = 0; k < dims.size(); ++k) {
      auto v = static_cast<int64_t>(
          idx[k].data[static_cast<size_t>(broadcast_source(bpos, idx[k].sizes))]);
      int64_t size = x[static_cast<size_t>(dims[k])];
      src[static_cast<size_t>(dims[k])] = v < 0 ? v + size : v;
    }
    p.source.push_back(src);
  }
  return p;
}

int64_t row_major(const Index& idx, const Shape& sizes) {
  int64_t pos = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    pos = pos * sizes[d] + idx[d];
  return pos;
}

RefTensor ref_index(const RefTensor& x, const std::vector<RefTensor>& idx, const Shape& dims) {
  RefPlacement p = ref_placement(x.sizes, idx, dims);
  RefTensor out{p.result, {}, x.dtype};
  for (const Index& s : p.source)
    out.data.push_back(x.at(s));
  return out;
}

// Writes in the result's row-major order, so of duplicates the last one wins (the CPU kernel's
// documented order).
RefTensor ref_index_put(const RefTensor& x, const RefTensor& values,
                        const std::vector<RefTensor>& idx, const Shape& dims, bool accumulate) {
  RefPlacement p = ref_placement(x.sizes, idx, dims);
  RefTensor out = x;
  for (size_t i = 0; i < p.source.size(); ++i) {
    Index c = unravel(static_cast<int64_t>(i), p.result);
    double v = values.data[static_cast<size_t>(broadcast_source(c, values.sizes))];
    double& slot = out.data[static_cast<size_t>(row_major(p.source[i], x.sizes))];
    slot = round_to(accumulate ? slot + v : v, x.dtype);
  }
  return out;
}

struct IndexCase {
  const char* name;
  Shape x;
  Layout layout;
  std::vector<std::pair<std::vector<int64_t>, Shape>> indices;
  Shape dims;
};

// Negative and repeated indices, broadcasting and non-adjacent index tensors, size 0, 0-dim.
const std::vector<IndexCase> kCases = {
    {"dup_neg", {4, 5}, Layout::Contiguous, {{{3, -1, 0, 3}, {4}}}, {0}},
    {"dim1", {4, 5, 3}, Layout::Contiguous, {{{1, -5, 4, 1}, {2, 2}}}, {1}},
    {"adjacent_bcast",
     {4, 5, 3},
     Layout::Contiguous,
     {{{0, 3}, {2, 1}}, {{1, 1, -1}, {3}}},
     {0, 1}},
    {"middle_pair", {3, 4, 5, 2}, Layout::Contiguous, {{{2, 0, 3}, {3}}, {{4}, {1}}}, {1, 2}},
    {"nonadjacent", {4, 5, 3}, Layout::Contiguous, {{{0, 3, 0}, {3}}, {{2, -1, 2}, {3}}}, {0, 2}},
    {"nonadj_bcast",
     {3, 2, 4, 5},
     Layout::Contiguous,
     {{{1, 0}, {2, 1}}, {{3, -4, 0}, {1, 3}}},
     {1, 3}},
    {"all_dims", {3, 4}, Layout::Contiguous, {{{2, 0, 2}, {3}}, {{1, 3, 1}, {3}}}, {0, 1}},
    {"transposed", {5, 4}, Layout::Transposed, {{{3, 0, 3}, {3}}}, {1}},
    {"strided", {3, 6}, Layout::Strided, {{{5, -6}, {2}}}, {1}},
    {"scalar_index", {4, 3}, Layout::Contiguous, {{{2}, {}}}, {0}},
    {"size0_index", {4, 3}, Layout::Contiguous, {{{}, {0}}}, {0}},
    {"size0_x", {0, 3}, Layout::Contiguous, {{{2, 0}, {2}}}, {1}},
};

const std::vector<DType> kDTypes = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16,
                                    kiln::kInt32,   kiln::kInt64,   kiln::kBool};

std::vector<Tensor> case_indices(const IndexCase& c) {
  std::vector<Tensor> out;
  for (const auto& [v, s] : c.indices)
    out.push_back(ints(v, s));
  return out;
}

KILN_REGISTER_OPINFO(index_info, [] {
  OpInfo info{"index", {"index"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 5100;
    for (DType dt : kDTypes) {
      for (const IndexCase& c : kCases) {
        std::vector<Tensor> inputs{make_input(c.x, dt, c.layout, -4, 4, seed++)};
        for (Tensor& t : case_indices(c))
          inputs.push_back(t);
        Shape dims = c.dims;
        out.push_back(make_sample(
            fmt::format("{}_{}", kiln::dtype_name(dt), c.name), inputs,
            [dims](const std::vector<Tensor>& in) {
              return std::vector{
                  kiln::index(in[0], list_of(std::span<const Tensor>(in).subspan(1), dims))};
            },
            [dims](const std::vector<RefTensor>& in) {
              return std::vector{ref_index(in[0], {in.begin() + 1, in.end()}, dims)};
            }));
      }
    }
    return out;
  };
  return info;
}());

// (x, values, indices...): values of the indexing result's shape, or broadcast from its last
// dim when `broadcast_values`.
OpInfo index_put_info(const char* name, bool in_place) {
  OpInfo info{name, {name}};
  info.samples = [in_place] {
    std::vector<Sample> out;
    uint32_t seed = in_place ? 5400 : 5300;
    for (DType dt : kDTypes) {
      for (const IndexCase& c : kCases) {
        for (bool accumulate : {false, true}) {
          if (accumulate && dt == kiln::kBool) continue;  // torch: no bool accumulate
          for (bool broadcast_values : {false, true}) {
            std::vector<RefTensor> idx_ref;
            for (const Tensor& t : case_indices(c))
              idx_ref.push_back(to_ref(t));
            RefPlacement placement = ref_placement(c.x, idx_ref, c.dims);
            Shape result = placement.result;
            Shape vshape = result;
            if (broadcast_values) vshape = result.empty() ? Shape{} : Shape{result.back()};
            std::vector<Tensor> inputs{make_input(c.x, dt, c.layout, -4, 4, seed++),
                                       make_input(vshape, dt, Layout::Contiguous, -4, 4, seed++)};
            for (Tensor& t : case_indices(c))
              inputs.push_back(t);
            Shape dims = c.dims;
            Sample sample = make_sample(
                fmt::format("{}_{}{}{}", kiln::dtype_name(dt), c.name, accumulate ? "_acc" : "",
                            broadcast_values ? "_bcast" : ""),
                inputs,
                [dims, accumulate, in_place](const std::vector<Tensor>& in) {
                  kiln::IndexList l = list_of(std::span<const Tensor>(in).subspan(2), dims);
                  if (!in_place) return std::vector{kiln::index_put(in[0], l, in[1], accumulate)};
                  // In place on a copy: samples must not modify their inputs.
                  Tensor self = in[0].clone();
                  self.index_put_(l, in[1], accumulate);
                  return std::vector{self};
                },
                [dims, accumulate](const std::vector<RefTensor>& in) {
                  return std::vector{
                      ref_index_put(in[0], in[1], {in.begin() + 2, in.end()}, dims, accumulate)};
                });
            std::set<Index> positions(placement.source.begin(), placement.source.end());
            sample.gradcheck = accumulate || positions.size() == placement.source.size();
            out.push_back(std::move(sample));
          }
        }
      }
    }
    return out;
  };
  return info;
}
KILN_REGISTER_OPINFO(index_put_info_, index_put_info("index_put", false));
KILN_REGISTER_OPINFO(index_put_inplace_info, index_put_info("index_put_", true));

// ---- bool masks: data-dependent, so a graph break under compile ----

Tensor bools(const std::vector<double>& v, Shape sizes) {
  return kiln::from_vector<double>(v, std::move(sizes)).to(kiln::kBool);
}

// The elements of x (row-major over x's leading mask.dims) where mask is true, each with the
// trailing dims of x: x[mask].
RefTensor ref_mask_index(const RefTensor& x, const RefTensor& mask) {
  size_t m = mask.sizes.size();
  Shape trailing(x.sizes.begin() + static_cast<int64_t>(m), x.sizes.end());
  int64_t inner = ref_numel(trailing), n = 0;
  RefTensor out{{}, {}, x.dtype};
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (mask.data[static_cast<size_t>(i)] == 0) continue;
    ++n;
    for (int64_t j = 0; j < inner; ++j)
      out.data.push_back(x.data[static_cast<size_t>(i * inner + j)]);
  }
  out.sizes = {n};
  out.sizes.insert(out.sizes.end(), trailing.begin(), trailing.end());
  return out;
}

KILN_REGISTER_OPINFO(index_mask_info, [] {
  OpInfo info{"index_mask", {"index", "nonzero"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 5500;
    struct MaskCase {
      const char* name;
      Shape x;
      Layout layout;
      std::vector<double> mask;
      Shape mask_shape;
    };
    const std::vector<MaskCase> cases = {
        {"full", {2, 3}, Layout::Contiguous, {1, 0, 1, 0, 0, 1}, {2, 3}},
        {"leading", {4, 3}, Layout::Transposed, {0, 1, 1, 0}, {4}},
        {"leading2", {2, 2, 3}, Layout::Strided, {1, 0, 0, 1}, {2, 2}},
        {"none_true", {3, 2}, Layout::Contiguous, {0, 0, 0}, {3}},
        {"size0", {0, 2}, Layout::Contiguous, {}, {0}},
    };
    for (DType dt : kDTypes) {
      for (const MaskCase& c : cases) {
        out.push_back(make_sample(
            fmt::format("{}_{}", kiln::dtype_name(dt), c.name),
            {make_input(c.x, dt, c.layout, -4, 4, seed++), bools(c.mask, c.mask_shape)},
            [](const std::vector<Tensor>& in) { return std::vector{kiln::index(in[0], {in[1]})}; },
            [](const std::vector<RefTensor>& in) {
              return std::vector{ref_mask_index(in[0], in[1])};
            }));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(masked_select_info, [] {
  OpInfo info{"masked_select", {"masked_select"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 5600;
    auto add = [&](std::string label, Tensor x, Tensor mask) {
      out.push_back(make_sample(
          std::move(label), {std::move(x), std::move(mask)},
          [](const std::vector<Tensor>& in) {
            return std::vector{kiln::masked_select(in[0], in[1])};
          },
          [](const std::vector<RefTensor>& in) {
            Shape b = ref_broadcast_shape(in[0].sizes, in[1].sizes);
            RefTensor o{{0}, {}, in[0].dtype};
            for (int64_t i = 0; i < ref_numel(b); ++i) {
              Index c = unravel(i, b);
              if (in[1].data[static_cast<size_t>(broadcast_source(c, in[1].sizes))] == 0) continue;
              o.data.push_back(in[0].data[static_cast<size_t>(broadcast_source(c, in[0].sizes))]);
            }
            o.sizes = {o.numel()};
            return std::vector{o};
          }));
    };
    for (DType dt : kDTypes) {
      std::string d(kiln::dtype_name(dt));
      add(d + "_same", make_input({2, 3}, dt, Layout::Transposed, -4, 4, seed++),
          bools({1, 0, 1, 1, 0, 0}, {2, 3}));
      add(d + "_mask_bcast", make_input({3, 2}, dt, Layout::Contiguous, -4, 4, seed++),
          bools({0, 1}, {2}));
      add(d + "_x_bcast", make_input({3}, dt, Layout::Contiguous, -4, 4, seed++),
          bools({1, 0, 0, 0, 1, 1}, {2, 3}));
      add(d + "_size0", make_input({0, 3}, dt, Layout::Contiguous, -4, 4, seed++),
          bools({1, 0, 1}, {3}));
      add(d + "_scalar", make_input({}, dt, Layout::Contiguous, -4, 4, seed++), bools({1}, {}));
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(nonzero_info, [] {
  OpInfo info{"nonzero", {"nonzero"}};
  info.samples = [] {
    std::vector<Sample> out;
    auto add = [&](std::string label, Tensor x) {
      out.push_back(make_sample(
          std::move(label), {std::move(x)},
          [](const std::vector<Tensor>& in) { return std::vector{kiln::nonzero(in[0])}; },
          [](const std::vector<RefTensor>& in) {
            auto nd = static_cast<int64_t>(in[0].sizes.size());
            RefTensor o{{0, nd}, {}, kiln::kInt64};
            for (int64_t i = 0; i < in[0].numel(); ++i) {
              if (in[0].data[static_cast<size_t>(i)] == 0) continue;  // NaN != 0: counted
              Index c = unravel(i, in[0].sizes);
              for (int64_t v : c)
                o.data.push_back(static_cast<double>(v));
              ++o.sizes[0];
            }
            return std::vector{o};
          }));
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (DType dt : kDTypes) {
      std::string d(kiln::dtype_name(dt));
      add(d + "_2d", kiln::from_vector<double>({0, 1, 0, 2, 0, 0, -3, 0}, {2, 4}).to(dt));
      add(d + "_3d_t",
          kiln::from_vector<double>({0, 1, 1, 0, 0, 2, 3, 0}, {2, 2, 2}).to(dt).transpose(0, 2));
      add(d + "_zeros", kiln::zeros({3}, kiln::TensorOptions().dtype(dt)));
      add(d + "_size0", kiln::zeros({2, 0}, kiln::TensorOptions().dtype(dt)));
      add(d + "_scalar", kiln::from_vector<double>({5}, {}).to(dt));
    }
    add("nan_f32", kiln::from_vector<double>({nan, 0, 1}, {3}).to(kiln::kFloat32));
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
