// OpInfo entries of slice_backward and select_backward, the out-of-place gradients of slice and
// select: a zero tensor of the forward input's sizes holding the gradient in the region the
// forward view picked. The reference places each gradient element by index arithmetic.
#include <fmt/format.h>

#include <algorithm>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

size_t wrap(int64_t dim, size_t nd) {
  return static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(nd) : dim);
}

// out = zeros(sizes); out[place(idx)] = grad[idx] for every index of grad.
RefTensor ref_place(const RefTensor& grad, const Shape& sizes,
                    const std::function<Index(const Index&)>& place) {
  RefTensor out{sizes, std::vector<double>(static_cast<size_t>(ref_numel(sizes)), 0.0), grad.dtype};
  for (int64_t i = 0; i < grad.numel(); ++i) {
    Index dst = place(unravel(i, grad.sizes));
    int64_t pos = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      pos = pos * sizes[d] + dst[d];
    out.data[static_cast<size_t>(pos)] = grad.data[static_cast<size_t>(i)];
  }
  return out;
}

// One sample per (dtype, layout) of a gradient of shape `grad_shape`.
void add_samples(std::vector<Sample>& out, const std::string& name, const Shape& grad_shape,
                 const std::function<Tensor(const Tensor&)>& op,
                 const std::function<RefTensor(const RefTensor&)>& ref, uint32_t& seed) {
  for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kInt64}) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      if (layout == Layout::Transposed && grad_shape.size() < 2) continue;
      if (layout == Layout::Strided && grad_shape.empty()) continue;
      Sample s;
      s.name = fmt::format("{}_{}_[{}]{}", name, kiln::dtype_name(dt), shape_name(grad_shape),
                           layout_name(layout));
      s.inputs = {make_input(grad_shape, dt, layout, -5, 5, seed++)};
      s.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0])}; };
      s.reference = [ref](const std::vector<RefTensor>& in) { return std::vector{ref(in[0])}; };
      out.push_back(std::move(s));
    }
  }
}

KILN_REGISTER_OPINFO(slice_backward_info, [] {
  OpInfo info{"slice_backward", {"slice_backward"}};
  info.samples = [] {
    struct C {
      Shape in;
      int64_t dim, start, end, step;
    };
    const std::vector<C> cases = {
        {{6, 4}, 0, 1, 5, 1},      {{6, 4}, 0, 0, 6, 2}, {{3, 7}, -1, -5, INT64_MAX, 3},
        {{2, 5, 3}, 1, 1, 100, 2}, {{4, 5}, 1, 2, 2, 1}, {{5}, 0, -3, -1, 1},
        {{2, 0, 3}, 2, 0, 2, 1},
    };
    std::vector<Sample> out;
    uint32_t seed = 5100;
    for (const C& c : cases) {
      size_t d = wrap(c.dim, c.in.size());
      int64_t size = c.in[d];
      auto clamp_bound = [size](int64_t v) {
        if (v < 0) v += size;
        return std::clamp<int64_t>(v, 0, size);
      };
      int64_t start = clamp_bound(c.start), end = std::max(clamp_bound(c.end), start);
      int64_t step = c.step;
      Shape grad_shape = c.in;
      grad_shape[d] = (end - start + step - 1) / step;
      kiln::SliceBackwardAttrs attrs{kiln::to_sym_shape(c.in), c.dim, c.start, c.end, c.step};
      Shape in = c.in;
      add_samples(
          out, fmt::format("d{}_{}_{}_{}", c.dim, c.start, c.end == INT64_MAX ? -1 : c.end, step),
          grad_shape,
          [attrs](const Tensor& g) {
            return kiln::call_op1(kiln::get_op("slice_backward"), {g}, attrs);
          },
          [in, d, start, step](const RefTensor& g) {
            return ref_place(g, in, [&](Index idx) {
              idx[d] = start + idx[d] * step;
              return idx;
            });
          },
          seed);
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(select_backward_info, [] {
  OpInfo info{"select_backward", {"select_backward"}};
  info.samples = [] {
    const std::vector<std::tuple<Shape, int64_t, int64_t>> cases = {
        {{4, 5}, 0, 2},     {{4, 5}, 1, -1}, {{4, 5}, -1, -5},
        {{2, 3, 4}, -2, 1}, {{3}, 0, -3},    {{2, 0}, 0, 1},
    };
    std::vector<Sample> out;
    uint32_t seed = 5200;
    for (const auto& [in, dim, index] : cases) {
      size_t d = wrap(dim, in.size());
      int64_t at = index < 0 ? index + in[d] : index;
      Shape grad_shape = in;
      grad_shape.erase(grad_shape.begin() + static_cast<int64_t>(d));
      kiln::SelectBackwardAttrs attrs{kiln::to_sym_shape(in), dim, index};
      Shape sizes = in;
      add_samples(
          out, fmt::format("d{}_i{}", dim, index), grad_shape,
          [attrs](const Tensor& g) {
            return kiln::call_op1(kiln::get_op("select_backward"), {g}, attrs);
          },
          [sizes, d, at](const RefTensor& g) {
            return ref_place(g, sizes, [&](Index idx) {
              idx.insert(idx.begin() + static_cast<int64_t>(d), at);
              return idx;
            });
          },
          seed);
    }
    return out;
  };
  return info;
}());

TEST(ShapeBackwardOps, RejectAGradOfTheWrongShape) {
  Tensor g = kiln::zeros({2, 3});
  auto expect_error = [](const std::function<void()>& call, const std::string& op) {
    try {
      call();
      ADD_FAILURE() << op << " accepted a gradient of the wrong shape";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  // Rows 0..3 of a [4, 3] input are [3, 3], not the gradient's [2, 3].
  expect_error(
      [&] {
        kiln::call_op1(kiln::get_op("slice_backward"), {g},
                       kiln::SliceBackwardAttrs{{4, 3}, 0, 0, 3, 1});
      },
      "slice_backward");
  expect_error(
      [&] {
        kiln::call_op1(kiln::get_op("select_backward"), {g},
                       kiln::SelectBackwardAttrs{{3, 2, 4}, 1, 0});
      },
      "select_backward");
  expect_error(
      [&] {
        kiln::call_op1(kiln::get_op("select_backward"), {g},
                       kiln::SelectBackwardAttrs{{4, 2, 3}, 0, 4});
      },
      "select_backward");
}

TEST(ShapeBackwardOps, MetaTensorsGetTheInputShape) {
  Tensor g = kiln::empty({2, 3}, kiln::kMeta);
  Tensor s = kiln::call_op1(kiln::get_op("slice_backward"), {g},
                            kiln::SliceBackwardAttrs{{2, 7}, 1, 1, 7, 2});
  EXPECT_EQ(s.sizes(), (Shape{2, 7}));
  EXPECT_TRUE(s.device().is_meta());
  Tensor t = kiln::call_op1(kiln::get_op("select_backward"), {g},
                            kiln::SelectBackwardAttrs{{2, 5, 3}, -2, -1});
  EXPECT_EQ(t.sizes(), (Shape{2, 5, 3}));
}

}  // namespace
}  // namespace kiln_test
