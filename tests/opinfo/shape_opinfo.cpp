// OpInfo entries of the view ops (view, expand, transpose, permute, squeeze, unsqueeze, slice,
// select) and of data movement (copy_, fill_, convert, clone, cat, stack, split, chunk). Each
// reference maps output multi-indices to input multi-indices over row-major doubles.
#include <fmt/format.h>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

using TensorFn = std::function<Tensor(const Tensor&)>;
using IndexMap = std::function<Index(const Index&)>;

// out[idx] = x[map(idx)] over out_sizes.
RefTensor ref_remap(const RefTensor& x, const Shape& out_sizes, const IndexMap& map) {
  RefTensor out{out_sizes, {}, x.dtype};
  for (int64_t i = 0; i < ref_numel(out_sizes); ++i)
    out.data.push_back(x.at(map(unravel(i, out_sizes))));
  return out;
}

size_t wrap(int64_t dim, size_t nd) {
  return static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(nd) : dim);
}

// One sample of a unary view-like op per (dtype, layout): the input has `shape`.
void add_unary(std::vector<Sample>& out, const std::string& name, const Shape& shape,
               const TensorFn& op, const std::function<RefTensor(const RefTensor&)>& ref,
               uint32_t& seed) {
  for (DType dt : {kiln::kFloat32, kiln::kInt64, kiln::kFloat16, kiln::kInt16}) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      if (layout == Layout::Transposed && shape.size() < 2) continue;
      if (layout == Layout::Strided && shape.empty()) continue;
      Sample s;
      s.name = fmt::format("{}_{}_[{}]{}", name, kiln::dtype_name(dt), shape_name(shape),
                           layout_name(layout));
      s.inputs = {make_input(shape, dt, layout, -5, 5, seed++)};
      s.call = [op](const std::vector<Tensor>& in) { return std::vector{op(in[0])}; };
      s.reference = [ref](const std::vector<RefTensor>& in) { return std::vector{ref(in[0])}; };
      out.push_back(std::move(s));
    }
  }
}

// Same data, new sizes (view, reshape-like ops on row-major data).
std::function<RefTensor(const RefTensor&)> resized(Shape sizes) {
  return [sizes](const RefTensor& x) { return RefTensor{sizes, x.data, x.dtype}; };
}

OpInfo unary_info(const std::string& name, std::vector<std::string> covers,
                  std::function<void(std::vector<Sample>&, uint32_t&)> fill) {
  OpInfo info{name, std::move(covers)};
  info.samples = [fill] {
    std::vector<Sample> out;
    uint32_t seed = 2000;
    fill(out, seed);
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(view_info, unary_info("view", {"view"}, [](auto& out, uint32_t& seed) {
                       struct C {
                         Shape in, req, result;
                       };
                       for (const C& c : std::vector<C>{{{4, 6}, {24}, {24}},
                                                        {{4, 6}, {2, -1, 3}, {2, 4, 3}},
                                                        {{4, 6}, {-1}, {24}},
                                                        {{2, 3, 4}, {6, 4}, {6, 4}},
                                                        {{1}, {}, {}},
                                                        {{}, {1, 1}, {1, 1}},
                                                        {{2, 0, 3}, {0, 6}, {0, 6}}}) {
                         Shape req = c.req;
                         add_unary(
                             out, "view", c.in,
                             [req](const Tensor& x) { return x.contiguous().view(req); },
                             resized(c.result), seed);
                       }
                       // A view of a non-contiguous tensor that keeps its chunks intact: split the
                       // leading dim.
                       Shape base{4, 6};
                       add_unary(
                           out, "view_split_outer", base,
                           [](const Tensor& x) {
                             return x.view({2, 2, x.size(1)});
                           },
                           resized({2, 2, 6}), seed);
                     }));

KILN_REGISTER_OPINFO(expand_info, unary_info("expand", {"expand"}, [](auto& out, uint32_t& seed) {
                       struct C {
                         Shape in, req, result;
                       };
                       for (const C& c : std::vector<C>{{{3, 1}, {3, 4}, {3, 4}},
                                                        {{3, 1}, {2, -1, 5}, {2, 3, 5}},
                                                        {{}, {2, 3}, {2, 3}},
                                                        {{1, 4}, {0, 4}, {0, 4}},
                                                        {{2, 3}, {2, 3}, {2, 3}}}) {
                         Shape req = c.req, in = c.in, result = c.result;
                         add_unary(
                             out, "expand", in, [req](const Tensor& x) { return x.expand(req); },
                             [in, result](const RefTensor& x) {
                               return ref_remap(x, result, [&](const Index& idx) {
                                 Index src(in.size());
                                 size_t lead = idx.size() - in.size();
                                 for (size_t d = 0; d < in.size(); ++d)
                                   src[d] = in[d] == 1 ? 0 : idx[lead + d];
                                 return src;
                               });
                             },
                             seed);
                       }
                     }));

KILN_REGISTER_OPINFO(transpose_info,
                     unary_info("transpose", {"transpose"}, [](auto& out, uint32_t& seed) {
                       struct C {
                         Shape in;
                         int64_t d0, d1;
                       };
                       for (const C& c : std::vector<C>{{{3, 4}, 0, 1},
                                                        {{2, 3, 4}, 0, -1},
                                                        {{2, 3, 4}, -2, 1},
                                                        {{5}, 0, -1},
                                                        {{2, 0, 3}, 1, 2}}) {
                         int64_t d0 = c.d0, d1 = c.d1;
                         size_t w0 = wrap(d0, c.in.size()), w1 = wrap(d1, c.in.size());
                         Shape res = c.in;
                         std::swap(res[w0], res[w1]);
                         add_unary(
                             out, "transpose", c.in,
                             [d0, d1](const Tensor& x) { return x.transpose(d0, d1); },
                             [res, w0, w1](const RefTensor& x) {
                               return ref_remap(x, res, [&](Index idx) {
                                 std::swap(idx[w0], idx[w1]);
                                 return idx;
                               });
                             },
                             seed);
                       }
                     }));

KILN_REGISTER_OPINFO(permute_info,
                     unary_info("permute", {"permute"}, [](auto& out, uint32_t& seed) {
                       for (const auto& [in, dims] :
                            std::vector<std::pair<Shape, Shape>>{{{2, 3, 4}, {2, 0, 1}},
                                                                 {{2, 3, 4}, {-1, 1, 0}},
                                                                 {{3, 4}, {1, 0}},
                                                                 {{}, {}},
                                                                 {{2, 0, 3}, {2, 1, 0}}}) {
                         Shape res(dims.size());
                         std::vector<size_t> wd;
                         for (size_t i = 0; i < dims.size(); ++i) {
                           wd.push_back(wrap(dims[i], in.size()));
                           res[i] = in[wd.back()];
                         }
                         Shape d = dims;
                         add_unary(
                             out, "permute", in, [d](const Tensor& x) { return x.permute(d); },
                             [res, wd](const RefTensor& x) {
                               return ref_remap(x, res, [&](const Index& idx) {
                                 Index src(idx.size());
                                 for (size_t i = 0; i < idx.size(); ++i)
                                   src[wd[i]] = idx[i];
                                 return src;
                               });
                             },
                             seed);
                       }
                     }));

KILN_REGISTER_OPINFO(squeeze_info,
                     unary_info("squeeze", {"squeeze"}, [](auto& out, uint32_t& seed) {
                       add_unary(
                           out, "squeeze_all", {1, 3, 1, 4},
                           [](const Tensor& x) { return x.squeeze(); }, resized({3, 4}), seed);
                       add_unary(
                           out, "squeeze_dim", {1, 3, 1, 4},
                           [](const Tensor& x) { return x.squeeze(2); }, resized({1, 3, 4}), seed);
                       add_unary(
                           out, "squeeze_neg_dim", {3, 4, 1},
                           [](const Tensor& x) { return x.squeeze(-1); }, resized({3, 4}), seed);
                       add_unary(
                           out, "squeeze_not_one", {3, 4},
                           [](const Tensor& x) { return x.squeeze(0); }, resized({3, 4}), seed);
                       add_unary(
                           out, "squeeze_scalar", {}, [](const Tensor& x) { return x.squeeze(); },
                           resized({}), seed);
                     }));

KILN_REGISTER_OPINFO(unsqueeze_info,
                     unary_info("unsqueeze", {"unsqueeze"}, [](auto& out, uint32_t& seed) {
                       for (const auto& [in, dim, res] :
                            std::vector<std::tuple<Shape, int64_t, Shape>>{
                                {{3, 4}, 0, {1, 3, 4}},
                                {{3, 4}, 2, {3, 4, 1}},
                                {{3, 4}, -1, {3, 4, 1}},
                                {{3, 4}, -2, {3, 1, 4}},
                                {{}, 0, {1}},
                                {{0, 2}, 1, {0, 1, 2}}}) {
                         int64_t d = dim;
                         add_unary(
                             out, fmt::format("unsqueeze{}", d), in,
                             [d](const Tensor& x) { return x.unsqueeze(d); }, resized(res), seed);
                       }
                     }));

KILN_REGISTER_OPINFO(slice_info, unary_info("slice", {"slice"}, [](auto& out, uint32_t& seed) {
                       struct C {
                         Shape in;
                         int64_t dim, start, end, step;
                       };
                       for (const C& c : std::vector<C>{{{6, 5}, 0, 1, 4, 1},
                                                        {{6, 5}, 1, 0, 5, 2},
                                                        {{6, 5}, -1, -4, -1, 1},
                                                        {{6, 5}, 0, -100, 100, 3},
                                                        {{6, 5}, 0, 4, 2, 1},  // empty
                                                        {{7}, 0, 1, INT64_MAX, 2},
                                                        {{2, 6, 3}, 1, -5, 6, 2}}) {
                         size_t d = wrap(c.dim, c.in.size());
                         int64_t size = c.in[d];
                         auto clamp = [size](int64_t v) {
                           return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size);
                         };
                         int64_t start = clamp(c.start), end = std::max(clamp(c.end), start),
                                 step = c.step;
                         Shape res = c.in;
                         res[d] = (end - start + step - 1) / step;
                         C k = c;
                         add_unary(
                             out, fmt::format("slice_d{}_{}_{}_{}", c.dim, c.start, c.end, c.step),
                             c.in,
                             [k](const Tensor& x) {
                               return x.slice(k.dim, k.start, k.end, k.step);
                             },
                             [res, d, start, step](const RefTensor& x) {
                               return ref_remap(x, res, [&](Index idx) {
                                 idx[d] = start + idx[d] * step;
                                 return idx;
                               });
                             },
                             seed);
                       }
                     }));

KILN_REGISTER_OPINFO(select_info, unary_info("select", {"select"}, [](auto& out, uint32_t& seed) {
                       for (const auto& [in, dim, index] :
                            std::vector<std::tuple<Shape, int64_t, int64_t>>{{{4, 5}, 0, 2},
                                                                             {{4, 5}, 1, -1},
                                                                             {{4, 5}, -1, -5},
                                                                             {{2, 3, 4}, -2, 1},
                                                                             {{3}, 0, -3}}) {
                         size_t d = wrap(dim, in.size());
                         int64_t idx_v = index < 0 ? index + in[d] : index;
                         Shape res = in;
                         res.erase(res.begin() + static_cast<int64_t>(d));
                         int64_t dm = dim, ix = index;
                         add_unary(
                             out, fmt::format("select_d{}_i{}", dim, index), in,
                             [dm, ix](const Tensor& x) { return x.select(dm, ix); },
                             [res, d, idx_v](const RefTensor& x) {
                               return ref_remap(x, res, [&](Index idx) {
                                 idx.insert(idx.begin() + static_cast<int64_t>(d), idx_v);
                                 return idx;
                               });
                             },
                             seed);
                       }
                     }));

// out = broadcast of src to dst's shape, converted to dst's dtype.
RefTensor ref_copy(const RefTensor& dst, const RefTensor& src) {
  RefTensor out{dst.sizes, {}, dst.dtype};
  for (int64_t i = 0; i < dst.numel(); ++i) {
    double v = src.data[static_cast<size_t>(broadcast_source(unravel(i, dst.sizes), src.sizes))];
    out.data.push_back(round_to(v, dst.dtype));
  }
  return out;
}

KILN_REGISTER_OPINFO(copy_info, [] {
  OpInfo info{"copy_", {"copy_"}};
  info.samples = [] {
    struct C {
      Shape dst, src;
      DType dd, ds;
      Layout ld, ls;
    };
    const std::vector<C> cases = {
        {{3, 4}, {3, 4}, kiln::kFloat32, kiln::kFloat32, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {3, 4}, kiln::kFloat32, kiln::kFloat32, Layout::Transposed, Layout::Strided},
        {{3, 4}, {4}, kiln::kFloat32, kiln::kFloat64, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {3, 1}, kiln::kInt32, kiln::kFloat32, Layout::Strided, Layout::Contiguous},
        {{2, 3, 4}, {}, kiln::kFloat16, kiln::kInt64, Layout::Contiguous, Layout::Contiguous},
        {{3, 4}, {3, 4}, kiln::kFloat64, kiln::kBool, Layout::Contiguous, Layout::Transposed},
        {{3, 4}, {1, 4}, kiln::kBool, kiln::kFloat32, Layout::Contiguous, Layout::Contiguous},
        {{0, 4}, {4}, kiln::kFloat32, kiln::kFloat32, Layout::Contiguous, Layout::Contiguous},
    };
    std::vector<Sample> out;
    uint32_t seed = 3000;
    for (const C& c : cases) {
      out.push_back(make_sample(
          fmt::format("{}[{}]{}_from_{}[{}]{}", kiln::dtype_name(c.dd), shape_name(c.dst),
                      layout_name(c.ld), kiln::dtype_name(c.ds), shape_name(c.src),
                      layout_name(c.ls)),
          {make_input(c.dst, c.dd, c.ld, -5, 5, seed),
           make_input(c.src, c.ds, c.ls, -5, 5, seed + 1)},
          [](const std::vector<Tensor>& in) {
            Tensor dst = in[0].clone();  // the sample's input itself stays unmodified
            dst.copy_(in[1]);
            return std::vector{dst};
          },
          [](const std::vector<RefTensor>& in) { return std::vector{ref_copy(in[0], in[1])}; }));
      seed += 2;
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(fill_info, [] {
  OpInfo info{"fill_", {"fill_"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 3100;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kBool, kiln::kBFloat16,
                     kiln::kUInt8, kiln::kInt8}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (double value : {2.75, -3.0, 0.0}) {
          // torch refuses a negative float for uint8 (fill_ errors test that).
          if (dt == kiln::kUInt8 && value < 0) continue;
          out.push_back(make_sample(
              fmt::format("{}_{}_{}", kiln::dtype_name(dt), layout_name(layout), value),
              {make_input({3, 4}, dt, layout, -5, 5, seed++)},
              [value](const std::vector<Tensor>& in) {
                Tensor dst = in[0].clone();
                dst.fill_(value);
                return std::vector{dst};
              },
              [value](const std::vector<RefTensor>& in) {
                return std::vector{ref_map(in[0], in[0].dtype, [value](double) { return value; })};
              }));
        }
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(convert_info, [] {
  OpInfo info{"convert", {"convert"}};
  info.samples = [] {
    const std::vector<std::pair<DType, DType>> pairs = {
        {kiln::kFloat32, kiln::kInt32}, {kiln::kFloat64, kiln::kFloat16},
        {kiln::kInt64, kiln::kFloat32}, {kiln::kBool, kiln::kFloat64},
        {kiln::kFloat32, kiln::kBool},  {kiln::kFloat16, kiln::kBFloat16},
        {kiln::kInt32, kiln::kInt64},   {kiln::kFloat32, kiln::kFloat64},
    };
    std::vector<Sample> out;
    uint32_t seed = 3200;
    for (const auto& [from, to] : pairs) {
      for (const Shape& shape : pointwise_shapes()) {
        DType target = to;
        out.push_back(make_sample(
            fmt::format("{}_to_{}_[{}]", kiln::dtype_name(from), kiln::dtype_name(to),
                        shape_name(shape)),
            {make_input(shape, from, shape.size() >= 2 ? Layout::Transposed : Layout::Contiguous,
                        -5, 5, seed++)},
            [target](const std::vector<Tensor>& in) { return std::vector{in[0].to(target)}; },
            [target](const std::vector<RefTensor>& in) {
              return std::vector{ref_map(in[0], target, [](double v) { return v; })};
            }));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(clone_info, unary_info("clone", {"clone"}, [](auto& out, uint32_t& seed) {
                       for (const Shape& shape : pointwise_shapes()) {
                         add_unary(
                             out, "clone", shape, [](const Tensor& x) { return x.clone(); },
                             [](const RefTensor& x) { return x; }, seed);
                       }
                     }));

// Concatenation of row-major tensors along d, each converted to out_dtype.
RefTensor ref_cat(const std::vector<RefTensor>& in, int64_t dim, DType out_dtype) {
  size_t d = wrap(dim, in[0].sizes.size());
  Shape sizes = in[0].sizes;
  sizes[d] = 0;
  for (const RefTensor& t : in)
    sizes[d] += t.sizes[d];
  RefTensor out{sizes, {}, out_dtype};
  for (int64_t i = 0; i < ref_numel(sizes); ++i) {
    Index idx = unravel(i, sizes);
    size_t part = 0;
    while (idx[d] >= in[part].sizes[d]) {
      idx[d] -= in[part].sizes[d];
      ++part;
    }
    out.data.push_back(round_to(in[part].at(idx), out_dtype));
  }
  return out;
}

KILN_REGISTER_OPINFO(cat_info, [] {
  OpInfo info{"cat", {"cat"}};
  info.samples = [] {
    struct Part {
      Shape shape;
      DType dtype;
      Layout layout;
    };
    struct C {
      std::vector<Part> parts;
      int64_t dim;
      DType out;
    };
    const DType f32 = kiln::kFloat32, f64 = kiln::kFloat64, i32 = kiln::kInt32;
    const Layout cont = Layout::Contiguous, tr = Layout::Transposed, st = Layout::Strided;
    const std::vector<C> cases = {
        {{{{2, 3}, f32, cont}, {{4, 3}, f32, tr}}, 0, f32},
        {{{{2, 3}, f32, cont}, {{2, 5}, f32, st}, {{2, 1}, f32, cont}}, 1, f32},
        {{{{2, 3}, f32, cont}, {{2, 2}, f32, cont}}, -1, f32},
        {{{{2, 3, 2}, f64, cont}, {{2, 1, 2}, f64, tr}}, -2, f64},
        {{{{2, 3}, i32, cont}, {{1, 3}, f32, cont}}, 0, f32},  // mixed dtypes promote
        {{{{2, 3}, i32, cont}, {{2, 3}, kiln::kInt64, st}}, 1, kiln::kInt64},
        {{{{0, 3}, f32, cont}, {{2, 3}, f32, cont}}, 0, f32},  // size-0 piece
        {{{{5}, f32, cont}}, 0, f32},
    };
    std::vector<Sample> out;
    uint32_t seed = 3300;
    for (const C& c : cases) {
      Sample s;
      std::string parts;
      for (const Part& p : c.parts) {
        s.inputs.push_back(make_input(p.shape, p.dtype, p.layout, -5, 5, seed++));
        parts += fmt::format("_{}[{}]{}", kiln::dtype_name(p.dtype), shape_name(p.shape),
                             layout_name(p.layout));
      }
      s.name = fmt::format("dim{}{}", c.dim, parts);
      int64_t dim = c.dim;
      DType od = c.out;
      s.call = [dim](const std::vector<Tensor>& in) { return std::vector{kiln::cat(in, dim)}; };
      s.reference = [dim, od](const std::vector<RefTensor>& in) {
        return std::vector{ref_cat(in, dim, od)};
      };
      out.push_back(std::move(s));
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(stack_info, [] {
  OpInfo info{"stack", {"cat", "unsqueeze"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 3400;
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        Sample s;
        s.name = fmt::format("dim{}_{}", dim, layout_name(layout));
        for (int i = 0; i < 3; ++i)
          s.inputs.push_back(make_input({2, 3}, kiln::kFloat32, layout, -5, 5, seed++));
        s.call = [dim](const std::vector<Tensor>& in) { return std::vector{kiln::stack(in, dim)}; };
        s.reference = [dim](const std::vector<RefTensor>& in) {
          size_t d = wrap(dim, 3);
          std::vector<RefTensor> parts;
          for (const RefTensor& t : in) {
            RefTensor u = t;
            u.sizes.insert(u.sizes.begin() + static_cast<int64_t>(d), 1);
            parts.push_back(u);
          }
          return std::vector{ref_cat(parts, dim, kiln::kFloat32)};
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

// The pieces of x along d with the given lengths.
std::vector<RefTensor> ref_pieces(const RefTensor& x, int64_t dim,
                                  const std::vector<int64_t>& lens) {
  size_t d = wrap(dim, x.sizes.size());
  std::vector<RefTensor> out;
  int64_t start = 0;
  for (int64_t len : lens) {
    Shape sizes = x.sizes;
    sizes[d] = len;
    out.push_back(ref_remap(x, sizes, [&](Index idx) {
      idx[d] += start;
      return idx;
    }));
    start += len;
  }
  return out;
}

OpInfo split_like(const std::string& name, bool is_chunk) {
  OpInfo info{name, {"slice"}};
  info.samples = [is_chunk] {
    struct C {
      Shape shape;
      int64_t arg, dim;
      std::vector<int64_t> lens;
    };
    // split: split_size; chunk: number of chunks.
    std::vector<C> cases;
    if (is_chunk) {
      cases.push_back({{7, 3}, 3, 0, {3, 3, 1}});
      cases.push_back({{6, 4}, 3, 0, {2, 2, 2}});
      cases.push_back({{2, 5}, 2, -1, {3, 2}});
      cases.push_back({{2, 2}, 5, 1, {1, 1}});
    } else {
      cases.push_back({{7, 3}, 3, 0, {3, 3, 1}});
      cases.push_back({{6, 4}, 2, 0, {2, 2, 2}});
      cases.push_back({{2, 5}, 4, -1, {4, 1}});
      cases.push_back({{2, 2}, 5, 1, {2}});
    }
    std::vector<Sample> out;
    uint32_t seed = is_chunk ? 3600 : 3500;
    for (const C& c : cases) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        Sample s;
        s.name = fmt::format("[{}]{}_arg{}_dim{}", shape_name(c.shape), layout_name(layout), c.arg,
                             c.dim);
        s.inputs = {make_input(c.shape, kiln::kFloat64, layout, -5, 5, seed++)};
        int64_t arg = c.arg, dim = c.dim;
        s.call = [arg, dim, is_chunk](const std::vector<Tensor>& in) {
          return is_chunk ? kiln::chunk(in[0], arg, dim) : kiln::split(in[0], arg, dim);
        };
        std::vector<int64_t> lens = c.lens;
        s.reference = [dim, lens](const std::vector<RefTensor>& in) {
          return ref_pieces(in[0], dim, lens);
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(split_info, split_like("split", false));
KILN_REGISTER_OPINFO(chunk_info, split_like("chunk", true));

}  // namespace
}  // namespace kiln_test
