// OpInfo entries of the table ops convolution and convolution_backward called directly (batched
// inputs, numeric padding, 1-d and 2-d, transposed with output_padding, every output_mask). The
// reference enumerates the terms of the defining sum once (Note [Convolution image and columns]
// in runtime/kernels/conv_geometry.h): each term multiplies one image element by one weight
// element into one columns element, and the forward and every gradient accumulate the same
// terms, looped over doubles.
#include <functional>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/conv_attrs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

struct ConvOpCase {
  Shape input, weight;  // batched; 3-D for 1-d
  bool bias;
  kiln::ConvAttrs attrs;
  Layout layout;
};

size_t flat(const Shape& sizes, std::initializer_list<int64_t> idx) {
  int64_t f = 0, d = 0;
  for (int64_t i : idx)
    f = f * sizes[static_cast<size_t>(d++)] + i;
  return static_cast<size_t>(f);
}

// Calls fn(image offset, columns offset, weight offset) for every term of the sum, over 4-D
// (N, C, H, W) sizes of the image and columns grids and the [column ch, image ch / G, kH, kW]
// weight.
using TermFn = std::function<void(size_t, size_t, size_t)>;
void for_each_term(const Shape& image, const Shape& columns, const Shape& weight, const Shape& s,
                   const Shape& p, const Shape& d, int64_t groups, const TermFn& fn) {
  int64_t cig = weight[1], ccg = columns[1] / groups;
  for (int64_t n = 0; n < image[0]; ++n)
    for (int64_t o = 0; o < columns[1]; ++o)
      for (int64_t y = 0; y < columns[2]; ++y)
        for (int64_t x = 0; x < columns[3]; ++x)
          for (int64_t k = 0; k < cig; ++k)
            for (int64_t a = 0; a < weight[2]; ++a)
              for (int64_t b = 0; b < weight[3]; ++b) {
                int64_t r = y * s[0] - p[0] + a * d[0], q = x * s[1] - p[1] + b * d[1];
                if (r < 0 || r >= image[2] || q < 0 || q >= image[3]) continue;
                int64_t c = o / ccg * cig + k;
                fn(flat(image, {n, c, r, q}), flat(columns, {n, o, y, x}),
                   flat(weight, {o, k, a, b}));
              }
}

struct Geometry {
  Shape image, columns, weight, s, p, d;
  int64_t groups;
  bool transposed;
};

// The 4-D geometry of a case; `out` is the output's sizes (from the op's formula, written out).
Geometry geometry(const ConvOpCase& c, Shape* out) {
  const kiln::ConvAttrs& a = c.attrs;
  size_t spatial = c.input.size() - 2;
  auto dim = [&](const Shape& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  Shape in = c.input, w = c.weight,
        o{c.input[0], a.transposed ? c.weight[1] * a.groups : c.weight[0]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t span = dim(a.dilation, i) * (c.weight[2 + i] - 1) + 1;
    int64_t size = c.input[2 + i];
    o.push_back(a.transposed ? (size - 1) * dim(a.stride, i) - 2 * dim(a.padding, i) + span +
                                   dim(a.output_padding, i)
                             : (size + 2 * dim(a.padding, i) - span) / dim(a.stride, i) + 1);
  }
  *out = o;
  Geometry g;
  Shape s, p, d;
  for (size_t i = 0; i < spatial; ++i) {
    s.push_back(dim(a.stride, i));
    p.push_back(dim(a.padding, i));
    d.push_back(dim(a.dilation, i));
  }
  if (spatial == 1) {
    in.insert(in.begin() + 2, 1);
    w.insert(w.begin() + 2, 1);
    o.insert(o.begin() + 2, 1);
    s.insert(s.begin(), 1);
    p.insert(p.begin(), 0);
    d.insert(d.begin(), 1);
  }
  g.image = a.transposed ? o : in;
  g.columns = a.transposed ? in : o;
  g.weight = w;
  g.s = s;
  g.p = p;
  g.d = d;
  g.groups = a.groups;
  g.transposed = a.transposed;
  return g;
}

RefTensor zeros_ref(const Shape& sizes, DType t) {
  int64_t n = 1;
  for (int64_t v : sizes)
    n *= v;
  return {sizes, std::vector<double>(static_cast<size_t>(n)), t};
}

void round_all(RefTensor& r) {
  for (double& v : r.data)
    v = round_to(v, r.dtype);
}

std::vector<ConvOpCase> cases() {
  using A = kiln::ConvAttrs;
  // Small enough for the float64 gradchecks of both ops (96 elements an input at most).
  return {
      {{1, 4, 4, 3}, {4, 2, 3, 3}, true, A{{2}, {1}, {1}, false, {0}, 2}, Layout::Contiguous},
      {{1, 3, 4, 4},
       {2, 3, 2, 2},
       false,
       A{{1, 2}, {0, 1}, {2, 1}, false, {0}, 1},
       Layout::Transposed},
      {{2, 5, 3, 3}, {3, 5, 1, 1}, true, A{{1}, {0}, {1}, false, {0}, 1}, Layout::Strided},
      {{2, 4, 9}, {6, 2, 3}, true, A{{2}, {2}, {2}, false, {0}, 2}, Layout::Transposed},
      {{1, 4, 3, 3}, {4, 2, 3, 3}, true, A{{2}, {1}, {1}, true, {1}, 1}, Layout::Contiguous},
      {{1, 4, 2, 2}, {4, 2, 2, 2}, false, A{{1}, {0}, {2}, true, {0}, 2}, Layout::Strided},
      {{2, 3, 5}, {3, 2, 3}, true, A{{3}, {1}, {1}, true, {2}, 1}, Layout::Contiguous},
  };
}

std::string case_name(DType dt, const ConvOpCase& c) {
  return fmt::format("{}_[{}]_w[{}]_{}{}{}", kiln::dtype_name(dt), fmt::join(c.input, "x"),
                     fmt::join(c.weight, "x"), c.attrs.transposed ? "transposed_" : "",
                     layout_name(c.layout), c.bias ? "_bias" : "");
}

KILN_REGISTER_OPINFO(convolution, [] {
  OpInfo info{"convolution", {"convolution"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 1200;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64}) {
      for (const ConvOpCase& c : cases()) {
        Sample s;
        s.name = case_name(dt, c);
        s.inputs = {make_input(c.input, dt, c.layout, -2, 2, seed++),
                    make_input(c.weight, dt, Layout::Contiguous, -1, 1, seed++)};
        Shape out_sizes;
        geometry(c, &out_sizes);
        if (c.bias)
          s.inputs.push_back(make_input({out_sizes[1]}, dt, Layout::Contiguous, -1, 1, seed++));
        s.call = [c](const std::vector<Tensor>& in) {
          return kiln::call_op(kiln::get_op("convolution"), in, &c.attrs);
        };
        s.reference = [c](const std::vector<RefTensor>& in) {
          Shape sizes;
          Geometry g = geometry(c, &sizes);
          RefTensor y = zeros_ref(sizes, in[0].dtype);
          for_each_term(g.image, g.columns, g.weight, g.s, g.p, g.d, g.groups,
                        [&](size_t i, size_t col, size_t w) {
                          if (g.transposed) {
                            y.data[i] += in[0].data[col] * in[1].data[w];
                          } else {
                            y.data[col] += in[0].data[i] * in[1].data[w];
                          }
                        });
          int64_t per_channel = 1;
          for (size_t k = 2; k < sizes.size(); ++k)
            per_channel *= sizes[k];
          if (c.bias)
            for (size_t k = 0; k < y.data.size(); ++k)
              y.data[k] +=
                  in[2].data[static_cast<size_t>(static_cast<int64_t>(k) / per_channel % sizes[1])];
          round_all(y);
          return std::vector{y};
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(convolution_backward, [] {
  OpInfo info{"convolution_backward", {"convolution_backward"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 1300;
    const std::vector<Shape> masks = {{1, 1, 1}, {1, 0, 0}, {0, 1, 1}};
    for (DType dt : {kiln::kFloat32, kiln::kFloat64}) {
      size_t m = 0;
      for (const ConvOpCase& c : cases()) {
        Shape mask = masks[m++ % masks.size()];
        Sample s;
        s.name = fmt::format("{}_mask{}", case_name(dt, c), fmt::join(mask, ""));
        Shape out_sizes;
        geometry(c, &out_sizes);
        s.inputs = {make_input(out_sizes, dt, Layout::Contiguous, -1, 1, seed++),
                    make_input(c.input, dt, c.layout, -2, 2, seed++),
                    make_input(c.weight, dt, Layout::Contiguous, -1, 1, seed++)};
        kiln::ConvBackwardAttrs attrs{c.attrs, mask};
        s.call = [attrs](const std::vector<Tensor>& in) {
          return kiln::call_op(kiln::get_op("convolution_backward"), in, &attrs);
        };
        s.reference = [c, mask](const std::vector<RefTensor>& in) {
          Shape sizes;
          Geometry g = geometry(c, &sizes);
          const RefTensor &go = in[0], &x = in[1], &w = in[2];
          RefTensor gi = zeros_ref(x.sizes, x.dtype), gw = zeros_ref(w.sizes, w.dtype);
          RefTensor gb = zeros_ref({sizes[1]}, x.dtype);
          for_each_term(g.image, g.columns, g.weight, g.s, g.p, g.d, g.groups,
                        [&](size_t i, size_t col, size_t k) {
                          // The output is on the columns grid, or the image when transposed.
                          size_t o = g.transposed ? i : col, xi = g.transposed ? col : i;
                          gi.data[xi] += go.data[o] * w.data[k];
                          gw.data[k] += go.data[o] * x.data[xi];
                        });
          int64_t per_channel = 1;
          for (size_t k = 2; k < sizes.size(); ++k)
            per_channel *= sizes[k];
          for (size_t k = 0; k < go.data.size(); ++k)
            gb.data[static_cast<size_t>(static_cast<int64_t>(k) / per_channel % sizes[1])] +=
                go.data[k];
          std::vector<RefTensor> r;
          for (RefTensor* t : {&gi, &gw, &gb}) {
            if (mask[static_cast<size_t>(t == &gi ? 0 : t == &gw ? 1 : 2)] == 0) continue;
            round_all(*t);
            r.push_back(*t);
          }
          return r;
        };
        s.atol = 1e-4;
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
