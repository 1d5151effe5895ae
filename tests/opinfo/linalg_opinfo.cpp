// OpInfo entries of the matrix products: mm, bmm, matmul (every rank combination, batch
// broadcasting, transposed and strided operands, k = 0, size-1 and size-0 dims) and linear.
// References are triple loops over doubles.
#include <fmt/format.h>

#include <optional>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

// torch.matmul on row-major doubles: a 1-D operand gains a dim (dropped from the result), the
// dims before the last two broadcast.
RefTensor ref_matmul(const RefTensor& a, const RefTensor& b, DType out_dtype) {
  Shape as = a.sizes, bs = b.sizes;
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  Shape batch = ref_broadcast_shape(batch_a, batch_b);
  RefTensor out{batch, {}, out_dtype};
  if (!a_vec) out.sizes.push_back(n);
  if (!b_vec) out.sizes.push_back(m);
  for (int64_t bi = 0; bi < ref_numel(batch); ++bi) {
    Index idx = unravel(bi, batch);
    int64_t pa = broadcast_source(idx, batch_a), pb = broadcast_source(idx, batch_b);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += a.data[static_cast<size_t>((pa * n + i) * k + p)] *
                 b.data[static_cast<size_t>((pb * k + p) * m + j)];
        }
        out.data.push_back(round_to(acc, out_dtype));
      }
    }
  }
  return out;
}

// x [..., in] @ w[out, in]^T (+ bias [out] or a scalar-shaped bias), or x @ w for 1-D w [in].
RefTensor ref_linear(const RefTensor& x, const RefTensor& w, const RefTensor* bias) {
  int64_t in = x.sizes.back(), rows = ref_numel(Shape(x.sizes.begin(), x.sizes.end() - 1));
  bool w_vec = w.sizes.size() == 1;
  int64_t outs = w_vec ? 1 : w.sizes[0];
  RefTensor out{Shape(x.sizes.begin(), x.sizes.end() - 1), {}, x.dtype};
  if (!w_vec) out.sizes.push_back(outs);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < outs; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < in; ++i)
        acc += x.data[static_cast<size_t>(r * in + i)] * w.data[static_cast<size_t>(o * in + i)];
      if (bias != nullptr) acc += bias->data[static_cast<size_t>(bias->numel() == 1 ? 0 : o)];
      out.data.push_back(round_to(acc, x.dtype));
    }
  }
  return out;
}

using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

struct Case {
  Shape a, b;
  Layout la = Layout::Contiguous, lb = Layout::Contiguous;
  DType dtype = kiln::kFloat64;
};

std::vector<Sample> product_samples(const BinaryOp& op, const std::vector<Case>& cases) {
  std::vector<Sample> out;
  uint32_t seed = 300;
  for (const Case& c : cases) {
    Sample s;
    s.name = fmt::format("{}_[{}]{}_[{}]{}", kiln::dtype_name(c.dtype), shape_name(c.a),
                         layout_name(c.la), shape_name(c.b), layout_name(c.lb));
    s.inputs = {make_input(c.a, c.dtype, c.la, -1, 1, seed),
                make_input(c.b, c.dtype, c.lb, -1, 1, seed + 1)};
    seed += 2;
    s.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0], in[1])}; };
    DType dt = c.dtype;
    s.reference = [dt](const std::vector<RefTensor>& in) {
      return std::vector{ref_matmul(in[0], in[1], dt)};
    };
    // Sums of up to ~64 products: float32 rounding error grows with k.
    if (dt == kiln::kFloat32) s.atol = 1e-5;
    if (dt == kiln::kFloat16) s.atol = 1e-2;
    out.push_back(std::move(s));
  }
  return out;
}

// Every layout combination of 2-D (or more) operands for one pair of shapes.
void all_layouts(std::vector<Case>& cases, const Shape& a, const Shape& b, DType dt) {
  for (Layout la : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    for (Layout lb : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      if ((la == Layout::Transposed && a.size() < 2) || (lb == Layout::Transposed && b.size() < 2))
        continue;
      cases.push_back({a, b, la, lb, dt});
    }
  }
}

KILN_REGISTER_OPINFO(mm_info, [] {
  OpInfo info{"mm", {"mm"}};
  info.samples = [] {
    std::vector<Case> cases;
    for (DType dt : {kiln::kFloat64, kiln::kFloat32})
      all_layouts(cases, {3, 4}, {4, 5}, dt);
    cases.push_back({{3, 0}, {0, 4}});  // k = 0: zeros
    cases.push_back({{0, 4}, {4, 3}});  // no rows
    cases.push_back({{1, 7}, {7, 1}});  // size-1 dims
    cases.push_back({{5, 1}, {1, 6}, Layout::Transposed, Layout::Strided});
    cases.push_back({{6, 33}, {33, 9}, Layout::Contiguous, Layout::Transposed, kiln::kFloat32});
    cases.push_back({{4, 8}, {8, 3}, Layout::Contiguous, Layout::Contiguous, kiln::kFloat16});
    return product_samples([](const Tensor& a, const Tensor& b) { return kiln::mm(a, b); }, cases);
  };
  return info;
}());

KILN_REGISTER_OPINFO(bmm_info, [] {
  OpInfo info{"bmm", {"bmm"}};
  info.samples = [] {
    std::vector<Case> cases;
    for (DType dt : {kiln::kFloat64, kiln::kFloat32})
      all_layouts(cases, {2, 3, 4}, {2, 4, 5}, dt);
    cases.push_back({{3, 2, 0}, {3, 0, 4}});  // k = 0
    cases.push_back({{0, 2, 3}, {0, 3, 4}});  // empty batch
    cases.push_back({{1, 1, 5}, {1, 5, 1}});
    return product_samples([](const Tensor& a, const Tensor& b) { return kiln::bmm(a, b); }, cases);
  };
  return info;
}());

KILN_REGISTER_OPINFO(matmul_info, [] {
  OpInfo info{"matmul", {"mm", "bmm"}};
  info.samples = [] {
    std::vector<Case> cases;
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{5}, {5}},                 // dot
        {{3, 4}, {4}},              // matrix-vector
        {{4}, {4, 6}},              // vector-matrix
        {{3, 4}, {4, 5}},           // mm
        {{2, 3, 4}, {4, 5}},        // batched x matrix (folded into one mm)
        {{2, 3, 4}, {4}},           // batched x vector
        {{4}, {2, 4, 5}},           // vector x batched
        {{3, 4}, {2, 4, 5}},        // matrix x batched
        {{2, 3, 4}, {2, 4, 5}},     // bmm
        {{2, 1, 3, 4}, {5, 4, 2}},  // broadcast batch dims
        {{1, 3, 4}, {2, 4, 5}},
        {{3, 0}, {0, 4}},  // k = 0
        {{2, 3, 0}, {2, 0, 4}},
        {{2, 3, 0}, {0, 4}},  // batched x matrix, k = 0  // batched k = 0
        {{0}, {0}},           // empty dot
        {{1, 4}, {4, 1}},     // size-1 dims
        {{2, 1, 4}, {4, 1}},
        {{0, 3, 4}, {4, 2}},  // empty batch
    };
    for (const auto& [a, b] : shapes)
      all_layouts(cases, a, b, kiln::kFloat64);
    cases.push_back({{2, 3, 4}, {4, 5}, Layout::Transposed, Layout::Contiguous, kiln::kFloat32});
    cases.push_back({{2, 2, 3, 8}, {8, 5}, Layout::Strided, Layout::Transposed, kiln::kFloat32});
    return product_samples([](const Tensor& a, const Tensor& b) { return kiln::matmul(a, b); },
                           cases);
  };
  return info;
}());

KILN_REGISTER_OPINFO(linear_info, [] {
  OpInfo info{"linear", {"mm", "bmm", "add", "transpose"}};
  info.samples = [] {
    struct LinearCase {
      Shape x, w;
      std::optional<Shape> bias;
      Layout lx, lw;
    };
    const std::vector<LinearCase> cases = {
        {{3, 4}, {5, 4}, Shape{5}, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {5, 4}, std::nullopt, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {5, 4}, Shape{5}, Layout::Transposed, Layout::Transposed},
        {{3, 4}, {5, 4}, Shape{5}, Layout::Strided, Layout::Strided},
        {{2, 3, 4}, {5, 4}, Shape{5}, Layout::Contiguous, Layout::Contiguous},
        {{2, 3, 4}, {5, 4}, std::nullopt, Layout::Transposed, Layout::Contiguous},
        {{4}, {5, 4}, Shape{5}, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {4}, std::nullopt, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {5, 4}, Shape{1}, Layout::Contiguous, Layout::Contiguous},
        {{3, 0}, {5, 0}, Shape{5}, Layout::Contiguous, Layout::Contiguous},  // no inputs: bias
        {{0, 4}, {5, 4}, Shape{5}, Layout::Contiguous, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 500;
    for (const LinearCase& c : cases) {
      for (DType dt : {kiln::kFloat64, kiln::kFloat32}) {
        Sample s;
        s.name = fmt::format("{}_x[{}]{}_w[{}]{}_{}", kiln::dtype_name(dt), shape_name(c.x),
                             layout_name(c.lx), shape_name(c.w), layout_name(c.lw),
                             c.bias ? "bias[" + shape_name(*c.bias) + "]" : "nobias");
        s.inputs = {make_input(c.x, dt, c.lx, -1, 1, seed),
                    make_input(c.w, dt, c.lw, -1, 1, seed + 1)};
        if (c.bias)
          s.inputs.push_back(make_input(*c.bias, dt, Layout::Contiguous, -1, 1, seed + 2));
        seed += 3;
        s.call = [](const std::vector<Tensor>& in) {
          if (in.size() == 3) return std::vector{kiln::linear(in[0], in[1], in[2])};
          return std::vector{kiln::linear(in[0], in[1])};
        };
        s.reference = [](const std::vector<RefTensor>& in) {
          return std::vector{ref_linear(in[0], in[1], in.size() == 3 ? &in[2] : nullptr)};
        };
        if (dt == kiln::kFloat32) s.atol = 1e-5;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
