#include "opinfo/op_info.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "kiln/ir/type.h"
#include "kiln/runtime/op_table.h"

namespace kiln_test {

std::vector<OpInfo>& registry() {
  static std::vector<OpInfo> infos;
  return infos;
}

Sample make_sample(std::string name, std::vector<kiln::Tensor> inputs, CallFn call, RefFn ref) {
  Sample s;
  s.name = std::move(name);
  s.inputs = std::move(inputs);
  s.call = std::move(call);
  s.reference = std::move(ref);
  return s;
}

std::string shape_name(const kiln::Shape& s) {
  return s.empty() ? "scalar" : fmt::format("{}", fmt::join(s, "x"));
}

void register_opinfo(OpInfo info) {
  registry().push_back(std::move(info));
}
const std::vector<OpInfo>& all_opinfos() {
  return registry();
}

double RefTensor::at(const Index& idx) const {
  int64_t pos = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    pos = pos * sizes[d] + idx[d];
  return data.at(static_cast<size_t>(pos));
}

RefTensor to_ref(const kiln::Tensor& t) {
  RefTensor r{t.sizes(), {}, t.dtype()};
  if (t.dtype() == kiln::kBool) {
    for (int v : bool_values(t))
      r.data.push_back(v);
  } else {
    r.data = read_doubles(t);
  }
  return r;
}

std::pair<double, double> default_tolerance(kiln::DType t) {
  switch (t) {
    case kiln::kFloat64:
      return {1e-10, 1e-12};
    case kiln::kFloat32:
      return {1e-5, 1e-6};
    case kiln::kFloat16:
      return {2e-3, 1e-3};
    case kiln::kBFloat16:
      return {1.6e-2, 1e-2};
    default:
      return {0, 0};
  }
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Strided:
      return "strided";
  }
  return "?";
}

namespace {

template <class T>
kiln::Tensor tensor_of(const std::vector<double>& values, const kiln::Shape& sizes) {
  std::vector<T> v;
  v.reserve(values.size());
  for (double x : values) {
    if constexpr (std::is_same_v<T, bool>) {
      v.push_back(x != 0);
    } else if constexpr (std::is_arithmetic_v<T>) {
      v.push_back(static_cast<T>(x));
    } else {
      v.push_back(T(static_cast<float>(x)));
    }
  }
  return kiln::from_vector(v, sizes.empty() ? kiln::Shape{} : sizes);
}

kiln::Tensor tensor_from_doubles(const std::vector<double>& values, const kiln::Shape& sizes,
                                 kiln::DType dtype) {
  kiln::Tensor t;
  switch (dtype) {
    case kiln::kFloat32:
      t = tensor_of<float>(values, sizes);
      break;
    case kiln::kFloat64:
      t = tensor_of<double>(values, sizes);
      break;
    case kiln::kFloat16:
      t = tensor_of<kiln::Half>(values, sizes);
      break;
    case kiln::kBFloat16:
      t = tensor_of<kiln::BFloat16>(values, sizes);
      break;
    case kiln::kUInt8:
      t = tensor_of<uint8_t>(values, sizes);
      break;
    case kiln::kInt8:
      t = tensor_of<int8_t>(values, sizes);
      break;
    case kiln::kInt16:
      t = tensor_of<int16_t>(values, sizes);
      break;
    case kiln::kInt32:
      t = tensor_of<int32_t>(values, sizes);
      break;
    case kiln::kInt64:
      t = tensor_of<int64_t>(values, sizes);
      break;
    case kiln::kBool:
      t = tensor_of<bool>(values, sizes);
      break;
  }
  // from_vector makes 1-element data with empty sizes a 1-D tensor; a 0-dim input must stay
  // 0-dim.
  return sizes.empty() ? t.view({}) : t;
}

// The range of a small integer dtype, written out here (not asked of the library).
bool small_int_range(kiln::DType t, double* lo, double* hi) {
  switch (t) {
    case kiln::kUInt8:
      *lo = 0, *hi = 255;
      return true;
    case kiln::kInt8:
      *lo = -128, *hi = 127;
      return true;
    case kiln::kInt16:
      *lo = -32768, *hi = 32767;
      return true;
    default:
      return false;
  }
}

std::vector<double> random_values(int64_t n, kiln::DType dtype, double lo, double hi,
                                  uint32_t seed) {
  // A sample range meant for signed values keeps its part that the dtype holds (uint8 samples
  // of [-5, 5] are [0, 5]), so one OpInfo entry serves every integer dtype.
  double tlo = 0, thi = 0;
  if (small_int_range(dtype, &tlo, &thi) && hi >= tlo && lo <= thi) {
    lo = std::max(lo, tlo);
    hi = std::min(hi, thi);
  }
  std::vector<double> v = random_vector<double>(static_cast<size_t>(n), lo, hi, seed);
  if (dtype == kiln::kBool) {
    for (double& x : v)
      x = x > (lo + hi) / 2 ? 1 : 0;
  } else if (!kiln::is_floating(dtype)) {
    for (double& x : v)
      x = std::round(x);
  }
  return v;
}

}  // namespace

kiln::Tensor make_input(const kiln::Shape& sizes, kiln::DType dtype, Layout layout, double lo,
                        double hi, uint32_t seed) {
  int64_t n = ref_numel(sizes);
  std::vector<double> values = random_values(n, dtype, lo, hi, seed);
  if (layout == Layout::Transposed && sizes.size() >= 2) {
    // Store the transpose contiguously, then view it back: the logical values are `values`.
    kiln::Shape swapped = sizes;
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    std::vector<double> stored(values.size());
    for (int64_t i = 0; i < n; ++i) {
      Index idx = unravel(i, sizes);
      std::swap(idx[idx.size() - 1], idx[idx.size() - 2]);
      int64_t pos = 0;
      for (size_t d = 0; d < swapped.size(); ++d)
        pos = pos * swapped[d] + idx[d];
      stored[static_cast<size_t>(pos)] = values[static_cast<size_t>(i)];
    }
    auto nd = static_cast<int64_t>(sizes.size());
    return tensor_from_doubles(stored, swapped, dtype).transpose(nd - 2, nd - 1);
  }
  if (layout == Layout::Strided && !sizes.empty()) {
    // Every other element of a tensor twice as wide in the last dim.
    kiln::Shape wide = sizes;
    wide.back() *= 2;
    std::vector<double> stored(static_cast<size_t>(ref_numel(wide)), -777.0);
    for (int64_t i = 0; i < n; ++i) {
      Index idx = unravel(i, sizes);
      idx.back() *= 2;
      int64_t pos = 0;
      for (size_t d = 0; d < wide.size(); ++d)
        pos = pos * wide[d] + idx[d];
      stored[static_cast<size_t>(pos)] = values[static_cast<size_t>(i)];
    }
    if (!kiln::is_floating(dtype)) {
      for (double& x : stored)
        x = x == -777.0 ? 0 : x;
    }
    auto nd = static_cast<int64_t>(sizes.size());
    return tensor_from_doubles(stored, wide, dtype).slice(nd - 1, 0, wide.back(), 2);
  }
  return tensor_from_doubles(values, sizes, dtype);
}

double round_to(double v, kiln::DType t) {
  switch (t) {
    case kiln::kFloat32:
      return static_cast<float>(v);
    case kiln::kFloat16:
      return static_cast<float>(kiln::Half(static_cast<float>(v)));
    case kiln::kBFloat16:
      return static_cast<float>(kiln::BFloat16(static_cast<float>(v)));
    case kiln::kInt32:
    case kiln::kInt64:
      return std::trunc(v);
    case kiln::kUInt8:
    case kiln::kInt8:
    case kiln::kInt16: {
      // Stored in two's complement: wraps modulo 2^bits into the dtype's range.
      double lo = 0, hi = 0;
      small_int_range(t, &lo, &hi);
      double m = hi - lo + 1;
      double r = std::fmod(std::trunc(v) - lo, m);
      return (r < 0 ? r + m : r) + lo;
    }
    case kiln::kBool:
      return v != 0 ? 1 : 0;
    default:
      return v;
  }
}

RefTensor ref_map(const RefTensor& x, kiln::DType out_dtype,
                  const std::function<double(double)>& f) {
  RefTensor out{x.sizes, {}, out_dtype};
  out.data.reserve(x.data.size());
  for (double v : x.data)
    out.data.push_back(round_to(f(v), out_dtype));
  return out;
}

RefTensor ref_zip(const RefTensor& a, const RefTensor& b, kiln::DType out_dtype,
                  const std::function<double(double, double)>& f) {
  RefTensor out{ref_broadcast_shape(a.sizes, b.sizes), {}, out_dtype};
  int64_t n = ref_numel(out.sizes);
  out.data.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Index idx = unravel(i, out.sizes);
    double x = a.data[static_cast<size_t>(broadcast_source(idx, a.sizes))];
    double y = b.data[static_cast<size_t>(broadcast_source(idx, b.sizes))];
    out.data.push_back(round_to(f(x, y), out_dtype));
  }
  return out;
}

RefTensor ref_reduce(const RefTensor& x, const kiln::Shape& dims, bool keepdim,
                     kiln::DType out_dtype,
                     const std::function<double(const std::vector<double>&)>& reduce) {
  auto nd = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> reduced(x.sizes.size(), dims.empty());
  for (int64_t d : dims)
    reduced[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  kiln::Shape kept_sizes, out_sizes;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d]) {
      kept_sizes.push_back(x.sizes[d]);
      out_sizes.push_back(x.sizes[d]);
    } else if (keepdim) {
      out_sizes.push_back(1);
    }
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(ref_numel(kept_sizes)));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Index idx = unravel(i, x.sizes);
    int64_t pos = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (!reduced[d]) pos = pos * x.sizes[d] + idx[d];
    }
    groups[static_cast<size_t>(pos)].push_back(x.data[static_cast<size_t>(i)]);
  }
  RefTensor out{out_sizes, {}, out_dtype};
  for (const auto& g : groups)
    out.data.push_back(round_to(reduce(g), out_dtype));
  return out;
}

std::vector<kiln::Shape> pointwise_shapes() {
  return {{37}, {4, 5}, {3, 1, 6}, {2, 0, 3}, {}, {1, 1}};
}

std::vector<Sample> unary_samples(const std::function<kiln::Tensor(const kiln::Tensor&)>& op,
                                  const std::function<double(double)>& ref,
                                  const std::vector<kiln::DType>& dtypes, double lo, double hi,
                                  const std::function<kiln::DType(kiln::DType)>& out_dtype) {
  std::vector<Sample> out;
  uint32_t seed = 1;
  for (kiln::DType dt : dtypes) {
    for (const kiln::Shape& shape : pointwise_shapes()) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        if (layout == Layout::Transposed && shape.size() < 2) continue;
        if (layout == Layout::Strided && shape.empty()) continue;
        Sample s;
        s.name = fmt::format("{}_{}_{}", kiln::dtype_name(dt),
                             shape.empty() ? "scalar" : fmt::format("{}", fmt::join(shape, "x")),
                             layout_name(layout));
        s.inputs = {make_input(shape, dt, layout, lo, hi, seed++)};
        s.call = [op](const std::vector<kiln::Tensor>& in) { return std::vector{op(in[0])}; };
        kiln::DType od = out_dtype(dt);
        s.reference = [ref, od](const std::vector<RefTensor>& in) {
          return std::vector{ref_map(in[0], od, ref)};
        };
        out.push_back(std::move(s));
      }
    }
  }
  return out;
}

std::vector<Sample> binary_samples(
    const std::function<kiln::Tensor(const kiln::Tensor&, const kiln::Tensor&)>& op,
    const std::function<double(double, double)>& ref, const std::vector<DTypeTriple>& dtypes,
    double lo, double hi, double b_lo, double b_hi) {
  struct ShapePair {
    kiln::Shape a, b;
    Layout la, lb;
  };
  const std::vector<ShapePair> pairs = {
      {{4, 5}, {4, 5}, Layout::Contiguous, Layout::Contiguous},
      {{4, 5}, {4, 5}, Layout::Transposed, Layout::Strided},
      {{3, 1}, {1, 4}, Layout::Contiguous, Layout::Contiguous},
      {{2, 3, 4}, {4}, Layout::Contiguous, Layout::Strided},
      {{5, 1, 3}, {1, 6, 1}, Layout::Contiguous, Layout::Contiguous},
      {{}, {3, 2}, Layout::Contiguous, Layout::Transposed},
      {{2, 0, 3}, {1, 3}, Layout::Contiguous, Layout::Contiguous},
      {{}, {}, Layout::Contiguous, Layout::Contiguous},
      {{1, 1}, {7}, Layout::Contiguous, Layout::Contiguous},
  };
  std::vector<Sample> out;
  uint32_t seed = 100;
  for (const DTypeTriple& dt : dtypes) {
    for (const ShapePair& p : pairs) {
      // A 0-dim operand next to a dimensioned one loses to it within a category, so a triple's
      // plain promotion only describes pairs of equal rank class.
      if (dt.a != dt.b && p.a.empty() != p.b.empty()) continue;
      Sample s;
      s.name = fmt::format("{}_{}_[{}]{}_[{}]{}", kiln::dtype_name(dt.a), kiln::dtype_name(dt.b),
                           fmt::join(p.a, "x"), layout_name(p.la), fmt::join(p.b, "x"),
                           layout_name(p.lb));
      s.inputs = {make_input(p.a, dt.a, p.la, lo, hi, seed),
                  make_input(p.b, dt.b, p.lb, b_lo, b_hi, seed + 1)};
      seed += 2;
      s.call = [op](const std::vector<kiln::Tensor>& in) { return std::vector{op(in[0], in[1])}; };
      kiln::DType od = dt.out;
      s.reference = [ref, od](const std::vector<RefTensor>& in) {
        return std::vector{ref_zip(in[0], in[1], od, ref)};
      };
      out.push_back(std::move(s));
    }
  }
  return out;
}

RefTensor ref_zip3(const RefTensor& a, const RefTensor& b, const RefTensor& c,
                   kiln::DType out_dtype, const std::function<double(double, double, double)>& f) {
  RefTensor out{ref_broadcast_shape(ref_broadcast_shape(a.sizes, b.sizes), c.sizes), {}, out_dtype};
  int64_t n = ref_numel(out.sizes);
  out.data.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Index idx = unravel(i, out.sizes);
    double x = a.data[static_cast<size_t>(broadcast_source(idx, a.sizes))];
    double y = b.data[static_cast<size_t>(broadcast_source(idx, b.sizes))];
    double z = c.data[static_cast<size_t>(broadcast_source(idx, c.sizes))];
    out.data.push_back(round_to(f(x, y, z), out_dtype));
  }
  return out;
}

// Built from sym_sizes() and views whose rules hold over symbols, so that a sample traced with
// dynamic=True keeps its dims symbolic (the strided layout selects every other element of a
// last dim of pairs instead of slicing a doubled one).
kiln::Tensor copy_with_layout(const kiln::Tensor& t, Layout layout) {
  kiln::SymShape sizes = t.sym_sizes();
  auto nd = static_cast<int64_t>(sizes.size());
  kiln::TensorOptions opts = kiln::TensorOptions().dtype(t.dtype()).device(t.device());
  kiln::Tensor out;
  if (layout == Layout::Transposed && nd >= 2) {
    kiln::SymShape swapped = sizes;
    std::swap(swapped[nd - 1], swapped[nd - 2]);
    out = kiln::full_symint(swapped, 0, opts).transpose(nd - 2, nd - 1);
  } else if (layout == Layout::Strided && nd >= 1) {
    kiln::SymShape pairs = sizes;
    pairs.push_back(2);
    out = kiln::full_symint(pairs, 0, opts).select(nd, 0);
  } else {
    out = kiln::full_symint(sizes, 0, opts);
  }
  out.copy_(t);
  return out;
}

const OpInfo& find_opinfo(const std::string& name) {
  for (const OpInfo& info : all_opinfos()) {
    if (info.name == name) return info;
  }
  throw std::runtime_error("no OpInfo " + name);
}

bool covers_op_with(const OpInfo& info, kiln::OpFlag flag) {
  for (const std::string& c : info.covers) {
    const kiln::OpDef* op = kiln::OpTable::instance().find(c);
    if (op != nullptr && op->has(flag)) return true;
  }
  return false;
}

std::vector<std::string> opinfo_names() {
  std::vector<std::string> names;
  for (const OpInfo& info : all_opinfos())
    names.push_back(info.name);
  return names;
}

std::string opinfo_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

void for_each_sample(const OpInfo& info, const std::function<void(const Sample&)>& check) {
  for (const Sample& s : info.samples()) {
    SCOPED_TRACE(info.name + " / " + s.name);
    try {
      check(s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

::testing::AssertionResult within_compiled_tolerance(const kiln::Tensor& got,
                                                     const kiln::Tensor& want,
                                                     kiln::DType computed_in) {
  if (!got.defined() || !want.defined() || got.dtype() != want.dtype() ||
      got.sizes() != want.sizes() || !kiln::is_floating(want.dtype()))
    return identical(got, want);
  auto [rtol, atol] = default_tolerance(want.dtype());
  auto [rtol_in, atol_in] = default_tolerance(computed_in);
  rtol = std::max(rtol, rtol_in);
  atol = std::max(atol, atol_in);
  std::vector<double> x = got.detach().to_vector<double>(), y = want.detach().to_vector<double>();
  double scale = 0;
  for (double v : y)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (x[i] == y[i]) continue;
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) ||
        std::abs(x[i] - y[i]) > atol + rtol * (std::abs(y[i]) + scale))
      return ::testing::AssertionFailure() << "element " << i << ": got " << x[i] << ", want "
                                           << y[i] << " (not within tolerance either)";
  }
  return ::testing::AssertionSuccess();
}

kiln::DType least_precise_floating(const std::vector<kiln::Tensor>& inputs) {
  kiln::DType least = kiln::kFloat64;
  for (const kiln::Tensor& t : inputs) {
    if (!t.defined() || !kiln::is_floating(t.dtype())) continue;
    if (default_tolerance(t.dtype()).first > default_tolerance(least).first) least = t.dtype();
  }
  return least;
}

::testing::AssertionResult identical(const kiln::Tensor& got, const kiln::Tensor& want) {
  if (got.defined() != want.defined()) {
    return ::testing::AssertionFailure()
           << "got " << (got.defined() ? "a" : "an undefined") << " tensor, want "
           << (want.defined() ? "a" : "an undefined") << " tensor";
  }
  if (!got.defined()) return ::testing::AssertionSuccess();
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    return ::testing::AssertionFailure() << "type " << kiln::ir::TensorType::of(got).str() << " vs "
                                         << kiln::ir::TensorType::of(want).str();
  }
  RefTensor a = to_ref(got), b = to_ref(want);
  for (size_t i = 0; i < a.data.size(); ++i) {
    double x = a.data[i], y = b.data[i];
    bool same = (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": got " << x << ", want " << y;
  }
  return ::testing::AssertionSuccess();
}

kiln::Tensor scaled_same_layout(const kiln::Tensor& t, double factor) {
  const kiln::TensorImpl* impl = t.impl();
  auto n = static_cast<int64_t>(impl->storage()->nbytes() / impl->itemsize());
  kiln::Tensor flat(std::make_shared<kiln::TensorImpl>(impl->storage(), t.dtype(), kiln::Shape{n},
                                                       kiln::Shape{1}, 0));
  // Back to t's dtype: bool and integer storage must hold valid values of their own type.
  kiln::Tensor scaled = (flat * factor).to(t.dtype());
  return kiln::Tensor(std::make_shared<kiln::TensorImpl>(
      scaled.impl()->storage(), t.dtype(), t.sizes(), t.strides(), t.storage_offset()));
}

void replay_graph(const kiln::ir::Graph& g, const std::vector<kiln::Tensor>& inputs,
                  const RunOpFn& run_op) {
  std::unordered_map<const kiln::ir::Value*, kiln::Tensor> env;
  for (kiln::ir::Node* node : g.nodes()) {
    std::vector<kiln::Tensor> args;
    for (kiln::ir::Value* v : node->inputs())
      args.push_back(env.at(v));
    std::vector<kiln::Tensor> outs;
    switch (node->kind()) {
      case kiln::ir::NodeKind::Param:
        outs = {inputs.at(node->param().index)};
        break;
      case kiln::ir::NodeKind::Constant:
        outs = {node->constant().value};
        break;
      case kiln::ir::NodeKind::Op:
        outs = run_op(*node, args);
        break;
      case kiln::ir::NodeKind::Fallback:
        outs = node->fallback().fn(args);
        break;
      case kiln::ir::NodeKind::FusionGroup:
        throw std::runtime_error("replay_graph: a traced graph holds no fusion groups");
    }
    for (size_t i = 0; i < outs.size(); ++i)
      env[node->output(i)] = outs[i];
  }
}

}  // namespace kiln_test
