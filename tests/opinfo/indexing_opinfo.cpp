// OpInfo entries of the indexing ops: embedding, index_select, gather and scatter_add, over
// several dtypes, negative dims, non-contiguous inputs and indices, duplicate indices and size-0
// indices. References index row-major doubles with plain loops.
#include <fmt/format.h>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

int64_t row_major(const Index& idx, const Shape& sizes) {
  int64_t pos = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    pos = pos * sizes[d] + idx[d];
  return pos;
}

size_t wrap(int64_t dim, size_t nd) {
  return static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(nd) : dim);
}

RefTensor ref_embedding(const RefTensor& w, const RefTensor& indices) {
  int64_t dim = w.sizes[1];
  RefTensor out{indices.sizes, {}, w.dtype};
  out.sizes.push_back(dim);
  for (double v : indices.data) {
    auto row = static_cast<int64_t>(v);
    for (int64_t j = 0; j < dim; ++j)
      out.data.push_back(w.data[static_cast<size_t>(row * dim + j)]);
  }
  return out;
}

RefTensor ref_index_select(const RefTensor& x, int64_t dim, const RefTensor& index) {
  size_t d = wrap(dim, x.sizes.size());
  RefTensor out{x.sizes, {}, x.dtype};
  out.sizes[d] = index.numel();
  for (int64_t i = 0; i < ref_numel(out.sizes); ++i) {
    Index idx = unravel(i, out.sizes);
    idx[d] = static_cast<int64_t>(index.data[static_cast<size_t>(idx[d])]);
    out.data.push_back(x.at(idx));
  }
  return out;
}

RefTensor ref_gather(const RefTensor& x, int64_t dim, const RefTensor& index) {
  size_t d = wrap(dim, x.sizes.size());
  RefTensor out{index.sizes, {}, x.dtype};
  for (int64_t i = 0; i < index.numel(); ++i) {
    Index idx = unravel(i, index.sizes);
    idx[d] = static_cast<int64_t>(index.data[static_cast<size_t>(i)]);
    out.data.push_back(x.at(idx));
  }
  return out;
}

RefTensor ref_scatter_add(const RefTensor& x, int64_t dim, const RefTensor& index,
                          const RefTensor& src) {
  size_t d = wrap(dim, x.sizes.size());
  RefTensor out = x;
  for (int64_t i = 0; i < index.numel(); ++i) {
    Index idx = unravel(i, index.sizes);
    double v = src.at(idx);
    idx[d] = static_cast<int64_t>(index.data[static_cast<size_t>(i)]);
    out.data[static_cast<size_t>(row_major(idx, x.sizes))] += v;
  }
  for (double& v : out.data)
    v = round_to(v, x.dtype);
  return out;
}

KILN_REGISTER_OPINFO(embedding_info, [] {
  OpInfo info{"embedding", {"embedding"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 700;
    const std::vector<std::pair<Shape, Layout>> index_shapes = {
        {{5}, Layout::Contiguous},       {{2, 3}, Layout::Contiguous}, {{}, Layout::Contiguous},
        {{0}, Layout::Contiguous},       {{3, 4}, Layout::Transposed}, {{2, 3}, Layout::Strided},
        {{2, 0, 3}, Layout::Contiguous},
    };
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt64, kiln::kFloat16}) {
      for (Layout lw : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (const auto& [ishape, li] : index_shapes) {
          Tensor w = make_input({6, 4}, dt, lw, -5, 5, seed++);
          Tensor idx = make_input(ishape, kiln::kInt64, li, 0, 5, seed++);
          out.push_back(make_sample(
              fmt::format("{}_w{}_idx[{}]{}", kiln::dtype_name(dt), layout_name(lw),
                          shape_name(ishape), layout_name(li)),
              {w, idx},
              [](const std::vector<Tensor>& in) {
                return std::vector{kiln::embedding(in[0], in[1])};
              },
              [](const std::vector<RefTensor>& in) {
                return std::vector{ref_embedding(in[0], in[1])};
              }));
        }
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(index_select_info, [] {
  OpInfo info{"index_select", {"index_select"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 800;
    const Shape x_shape{4, 5, 3};
    for (DType dt : {kiln::kFloat32, kiln::kInt32, kiln::kBool}) {
      for (Layout lx : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (int64_t dim : {0, 1, 2, -1, -3}) {
          for (int64_t n : {int64_t{6}, int64_t{1}, int64_t{0}}) {
            int64_t size = x_shape[wrap(dim, 3)];
            Tensor x = make_input(x_shape, dt, lx, -5, 5, seed++);
            Tensor idx = make_input({n}, kiln::kInt64, Layout::Contiguous, 0,
                                    static_cast<double>(size - 1), seed++);
            out.push_back(make_sample(
                fmt::format("{}_{}_dim{}_n{}", kiln::dtype_name(dt), layout_name(lx), dim, n),
                {x, idx},
                [dim](const std::vector<Tensor>& in) {
                  return std::vector{kiln::index_select(in[0], dim, in[1])};
                },
                [dim](const std::vector<RefTensor>& in) {
                  return std::vector{ref_index_select(in[0], dim, in[1])};
                }));
          }
        }
      }
    }
    // A strided index (every other element of a wider one) and a 0-dim index.
    Tensor wide = make_input({8}, kiln::kInt64, Layout::Contiguous, 0, 3, seed++);
    out.push_back(make_sample(
        "strided_index",
        {make_input({4, 5}, kiln::kFloat64, Layout::Contiguous, -1, 1, seed++),
         wide.slice(0, 0, 8, 2)},
        [](const std::vector<Tensor>& in) {
          return std::vector{kiln::index_select(in[0], 0, in[1])};
        },
        [](const std::vector<RefTensor>& in) {
          return std::vector{ref_index_select(in[0], 0, in[1])};
        }));
    out.push_back(make_sample(
        "scalar_index",
        {make_input({4, 5}, kiln::kFloat64, Layout::Contiguous, -1, 1, seed++),
         make_input({}, kiln::kInt64, Layout::Contiguous, 0, 4, seed++)},
        [](const std::vector<Tensor>& in) {
          return std::vector{kiln::index_select(in[0], 1, in[1])};
        },
        [](const std::vector<RefTensor>& in) {
          return std::vector{ref_index_select(in[0], 1, in[1])};
        }));
    return out;
  };
  return info;
}());

struct GatherCase {
  Shape x, index;
  int64_t dim;
  Layout lx, li;
};

const std::vector<GatherCase> kGatherCases = {
    {{4, 5}, {3, 5}, 0, Layout::Contiguous, Layout::Contiguous},
    {{4, 5}, {6, 5}, 0, Layout::Transposed, Layout::Contiguous},  // larger along dim
    {{4, 5}, {4, 2}, 1, Layout::Contiguous, Layout::Transposed},
    {{4, 5}, {2, 3}, -1, Layout::Strided, Layout::Contiguous},  // smaller in the other dim
    {{3, 4, 5}, {2, 4, 3}, -2, Layout::Transposed, Layout::Strided},
    {{3, 4, 5}, {3, 4, 0}, 2, Layout::Contiguous, Layout::Contiguous},  // size-0 index
    {{4}, {7}, 0, Layout::Contiguous, Layout::Contiguous},
    {{}, {}, 0, Layout::Contiguous, Layout::Contiguous},
};

KILN_REGISTER_OPINFO(gather_info, [] {
  OpInfo info{"gather", {"gather"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 900;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt64, kiln::kBFloat16}) {
      for (const GatherCase& c : kGatherCases) {
        int64_t size = c.x.empty() ? 1 : c.x[wrap(c.dim, c.x.size())];
        Tensor x = make_input(c.x, dt, c.lx, -5, 5, seed++);
        Tensor idx =
            make_input(c.index, kiln::kInt64, c.li, 0, static_cast<double>(size - 1), seed++);
        int64_t dim = c.dim;
        out.push_back(make_sample(
            fmt::format("{}_x[{}]{}_dim{}_idx[{}]{}", kiln::dtype_name(dt), shape_name(c.x),
                        layout_name(c.lx), dim, shape_name(c.index), layout_name(c.li)),
            {x, idx},
            [dim](const std::vector<Tensor>& in) {
              return std::vector{kiln::gather(in[0], dim, in[1])};
            },
            [dim](const std::vector<RefTensor>& in) {
              if (in[0].sizes.empty()) return std::vector{in[0]};  // 0-dim: the one element
              return std::vector{ref_gather(in[0], dim, in[1])};
            }));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(scatter_add_info, [] {
  OpInfo info{"scatter_add", {"scatter_add"}};
  info.samples = [] {
    struct ScatterCase {
      Shape x, index, src;
      int64_t dim;
      Layout lx, li, ls;
    };
    const std::vector<ScatterCase> cases = {
        // Index larger than x along dim: duplicates are certain and must accumulate.
        {{4, 5}, {9, 5}, {9, 5}, 0, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
        {{4, 5}, {3, 8}, {3, 9}, 1, Layout::Transposed, Layout::Contiguous, Layout::Strided},
        {{4, 5}, {2, 3}, {4, 5}, -1, Layout::Strided, Layout::Transposed, Layout::Transposed},
        {{3, 4, 5},
         {3, 6, 2},
         {3, 7, 5},
         -2,
         Layout::Contiguous,
         Layout::Strided,
         Layout::Contiguous},
        {{4, 5}, {0, 5}, {2, 5}, 0, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
        {{6}, {10}, {10}, 0, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 1000;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt64, kiln::kInt32}) {
      for (const ScatterCase& c : cases) {
        int64_t size = c.x[wrap(c.dim, c.x.size())];
        Tensor x = make_input(c.x, dt, c.lx, -5, 5, seed++);
        Tensor idx =
            make_input(c.index, kiln::kInt64, c.li, 0, static_cast<double>(size - 1), seed++);
        Tensor src = make_input(c.src, dt, c.ls, -5, 5, seed++);
        int64_t dim = c.dim;
        out.push_back(make_sample(
            fmt::format("{}_x[{}]{}_dim{}_idx[{}]{}_src[{}]{}", kiln::dtype_name(dt),
                        shape_name(c.x), layout_name(c.lx), dim, shape_name(c.index),
                        layout_name(c.li), shape_name(c.src), layout_name(c.ls)),
            {x, idx, src},
            [dim](const std::vector<Tensor>& in) {
              return std::vector{kiln::scatter_add(in[0], dim, in[1], in[2])};
            },
            [dim](const std::vector<RefTensor>& in) {
              return std::vector{ref_scatter_add(in[0], dim, in[1], in[2])};
            }));
        out.back().atol = 1e-5;  // float32 sums of a few values that may cancel
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
