#include "kiln/runtime/kernels/row_programs.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

// Note [Row programs]
// softmax, log_softmax and layer_norm reduce along a row and then write every element of it, and
// so do their fused backwards (Note [Fused normalization backward] in nn_derivatives.cpp). Each
// is written here once, as a kernel-IR program whose row count and row length are size
// parameters (Note [Size parameters]), so one program serves every shape:
//   softmax      m = max(x); s = sum(exp(x - m)); out = exp(x - m) * (1 / s)
//   log_softmax  m = max(x); s = sum(exp(x - m)); out = x - (m + log(s))
//   layer_norm   mean = sum(x) / n; m2 = sum((x - mean)^2); rstd = 1 / sqrt(m2 / n + eps);
//                out = (x - mean) * rstd [* weight] [+ bias]
//   and the backwards, given with their programs below
// in the compute dtype (float32 for the 16-bit floats), with the scalars 1 / s, m + log(s),
// mean and rstd formed in float64 and rounded once, as the CPU kernels (nn_ops.cpp,
// nn_backward_ops.cpp) do. The rows are `outer * inner` for the softmax family (the reduced dim
// of a contiguous tensor viewed as [outer, n, inner], so any dim runs without a copy) and `rows`
// of n contiguous elements for the layer_norm family.
// Who runs them: the eager CUDA kernels are emit_cuda of the program (codegen/cuda), a block
// per row, wherever the forwards' row-cached entries do not apply. The CPU kernels stay
// hand-written. Measured (bench/compiled_llvm.cpp, BM_RowProgramLlvm; docs/performance.md), the
// program compiled by LLVM is 1.7x slower than the hand-written softmax (whose exp sums are
// table-driven, exp_sum_vec.cpp) and as fast as the hand-written layer_norm and backwards with
// their sizes at launch (layer_norm 6-10% faster specialized to one shape); eager keeps those
// kernels, since running the program would JIT-compile on an eager op's first call and builds
// without LLVM need the kernels anyway. The program OpInfo test runs each program in the
// kernel-IR interpreter and through LLVM against the CPU kernels on every sample.
namespace {

using kir::Val;

kir::Stmt accumulate(kir::VarId var, kir::ReduceOp op, Val v) {
  return kir::stmt::accumulate(var, op, v.id());
}
kir::Stmt let(kir::VarId var, Val v) {
  return kir::stmt::let(var, v.id());
}
kir::Stmt store(kir::BufferId buffer, Val index, Val v) {
  return kir::stmt::store(buffer, index.id(), v.id());
}
using kir::stmt::accumulator;

// The rounding of a float64 scalar to the compute dtype, as `static_cast<T>(double)`.
Val narrow(Val v, DType c) {
  return c == kFloat64 ? v : cast(v, c);
}
Val wide(Val v) {
  return cast(v, kFloat64);
}

// A row walk: `vector for %<name> in 0..%n { body(element index, column) }`.
template <class Body>
kir::Stmt row_walk(kir::Builder& b, const char* name, kir::VarId n, Body body) {
  kir::VarId j = b.var(name, kInt64);
  kir::Stmt s = kir::stmt::sized_loop(j, n, {}, kir::LoopKind::Vector);
  body(s.body, Val(b.var_ref(j)));
  return s;
}

// The softmax family's rows: sizes outer, n and inner (declare them after the buffers), the
// loops `parallel for %o, parallel for %i` whose body is `row()`, and the flat index of element
// j of the current row.
struct SoftmaxRows {
  explicit SoftmaxRows(kir::Builder& b)
      : outer(b.size("outer")),
        n(b.size("n")),
        inner(b.size("inner")),
        o(b.var("o", kInt64)),
        i(b.var("i", kInt64)),
        rows(kir::stmt::sized_loop(o, outer, {}, kir::LoopKind::Parallel)),
        cols(kir::stmt::sized_loop(i, inner, {}, kir::LoopKind::Parallel)),
        b_(b) {}
  Val at(Val j) const {
    return (Val(b_.var_ref(o)) * Val(b_.var_ref(n)) + j) * Val(b_.var_ref(inner)) +
           Val(b_.var_ref(i));
  }
  std::vector<kir::Stmt>& row() { return cols.body; }
  void finish(kir::Kernel& k) {
    rows.body.push_back(std::move(cols));
    k.body.push_back(std::move(rows));
  }

  kir::VarId outer, n, inner, o, i;
  kir::Stmt rows, cols;

 private:
  kir::Builder& b_;
};

// Appends to `row` the mean and rstd of a layer_norm row of n elements x(j), as the forward
// kernel forms them: mean = sum(x) / n; rstd = 1 / sqrt(sum((x - mean)^2) / n + eps), each
// divided in float64 and rounded once to c.
template <class X>
std::pair<Val, Val> row_moments(kir::Builder& b, std::vector<kir::Stmt>& row, kir::VarId n, X x,
                                double eps, DType c) {
  kir::VarId sum = b.var("sum", c), mean = b.var("mean", c), m2 = b.var("m2", c),
             rstd = b.var("rstd", c);
  Val vmean = b.var_ref(mean);
  Val wide_n = cast(Val(b.var_ref(n)), kFloat64);
  row.push_back(accumulator(sum, kir::ReduceOp::Sum));
  row.push_back(row_walk(b, "j", n, [&](std::vector<kir::Stmt>& body, Val j) {
    body.push_back(accumulate(sum, kir::ReduceOp::Sum, x(j)));
  }));
  row.push_back(let(mean, narrow(wide(Val(b.var_ref(sum))) / wide_n, c)));
  row.push_back(accumulator(m2, kir::ReduceOp::Sum));
  row.push_back(row_walk(b, "j2", n, [&](std::vector<kir::Stmt>& body, Val j) {
    Val d = x(j) - vmean;
    body.push_back(accumulate(m2, kir::ReduceOp::Sum, d * d));
  }));
  Val var_eps = wide(Val(b.var_ref(m2))) / wide_n + Val(b.constant(eps, kFloat64));
  row.push_back(let(rstd, narrow(Val(b.constant(1.0, kFloat64)) / sqrt(var_eps), c)));
  return {vmean, Val(b.var_ref(rstd))};
}

kir::Kernel softmax_program(const OpDef& op, DType dtype, const void*) {
  bool log_form = op.name == "log_softmax";
  DType c = kir::compute_dtype(dtype);
  kir::Kernel k;
  k.name = fmt::format("{}_{}", op.name, dtype_short_name(dtype));
  kir::Builder b(k);
  kir::MathScope scope(b, c);
  kir::BufferId out = b.buffer("out", dtype, true, kir::kRuntimeExtent);
  kir::BufferId in = b.buffer("x", dtype, false, kir::kRuntimeExtent);
  SoftmaxRows rows(b);
  kir::VarId n = rows.n;
  auto at = [&](Val j) { return rows.at(j); };
  auto x = [&](Val j) { return cast(Val(b.load(in, at(j).id())), c); };
  std::vector<kir::Stmt>& row = rows.row();
  kir::VarId m = b.var("m", c), s = b.var("s", c);
  Val vm = b.var_ref(m), vs = b.var_ref(s);
  row.push_back(accumulator(m, kir::ReduceOp::Max));
  row.push_back(row_walk(b, "j", n, [&](std::vector<kir::Stmt>& body, Val j) {
    body.push_back(accumulate(m, kir::ReduceOp::Max, x(j)));
  }));
  row.push_back(accumulator(s, kir::ReduceOp::Sum));
  row.push_back(row_walk(b, "j2", n, [&](std::vector<kir::Stmt>& body, Val j) {
    body.push_back(accumulate(s, kir::ReduceOp::Sum, exp(x(j) - vm)));
  }));
  if (log_form) {
    kir::VarId shift = b.var("shift", c);
    row.push_back(let(shift, narrow(wide(vm) + log(wide(vs)), c)));
    row.push_back(row_walk(b, "j3", n, [&](std::vector<kir::Stmt>& body, Val j) {
      body.push_back(store(out, at(j), cast(x(j) - Val(b.var_ref(shift)), dtype)));
    }));
  } else {
    kir::VarId inv = b.var("inv", c);
    row.push_back(let(inv, narrow(Val(b.constant(1.0, kFloat64)) / wide(vs), c)));
    row.push_back(row_walk(b, "j3", n, [&](std::vector<kir::Stmt>& body, Val j) {
      body.push_back(store(out, at(j), cast(exp(x(j) - vm) * Val(b.var_ref(inv)), dtype)));
    }));
  }
  rows.finish(k);
  return k;
}

kir::Kernel layer_norm_program(const OpDef& op, DType dtype, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  DType c = kir::compute_dtype(dtype);
  kir::Kernel k;
  k.name = fmt::format("{}_{}{}{}", op.name, dtype_short_name(dtype), a.has_weight ? "_w" : "",
                       a.has_bias ? "_b" : "");
  kir::Builder b(k);
  kir::MathScope scope(b, c);
  kir::BufferId out = b.buffer("out", dtype, true, kir::kRuntimeExtent);
  kir::BufferId in = b.buffer("x", dtype, false, kir::kRuntimeExtent);
  kir::BufferId w = a.has_weight ? b.buffer("weight", c, false, kir::kRuntimeExtent) : -1;
  kir::BufferId bias = a.has_bias ? b.buffer("bias", c, false, kir::kRuntimeExtent) : -1;
  kir::VarId rows = b.size("rows"), n = b.size("n");
  kir::VarId r = b.var("r", kInt64);
  Val base = Val(b.var_ref(r)) * Val(b.var_ref(n));
  auto x = [&](Val j) { return cast(Val(b.load(in, (base + j).id())), c); };

  kir::Stmt top = kir::stmt::sized_loop(r, rows, {}, kir::LoopKind::Parallel);
  std::vector<kir::Stmt>& row = top.body;
  auto [vmean, vrstd] = row_moments(b, row, n, x, a.eps, c);
  row.push_back(row_walk(b, "j3", n, [&](std::vector<kir::Stmt>& body, Val j) {
    Val y = (x(j) - vmean) * vrstd;
    if (w >= 0) y = y * Val(b.load(w, j.id()));
    if (bias >= 0) y = y + Val(b.load(bias, j.id()));
    body.push_back(store(out, base + j, cast(y, dtype)));
  }));
  k.body.push_back(std::move(top));
  return k;
}

// The backwards of softmax and log_softmax over the same rows as their forward (Note [Fused
// normalization backward] in nn_derivatives.cpp), from the gradient g and the forward output y:
//   softmax_backward      s = sum(g * y); dx = y * (g - s)
//   log_softmax_backward  s = sum(g);     dx = g - exp(y) * s
kir::Kernel softmax_backward_program(const OpDef& op, DType dtype, const void*) {
  bool log_form = op.name == "log_softmax_backward";
  DType c = kir::compute_dtype(dtype);
  kir::Kernel k;
  k.name = fmt::format("{}_{}", op.name, dtype_short_name(dtype));
  kir::Builder b(k);
  kir::MathScope scope(b, c);
  kir::BufferId out = b.buffer("dx", dtype, true, kir::kRuntimeExtent);
  kir::BufferId grad = b.buffer("g", dtype, false, kir::kRuntimeExtent);
  kir::BufferId y_buf = b.buffer("y", dtype, false, kir::kRuntimeExtent);
  SoftmaxRows rows(b);
  kir::VarId n = rows.n;
  auto at = [&](Val j) { return rows.at(j); };
  auto g = [&](Val j) { return cast(Val(b.load(grad, at(j).id())), c); };
  auto y = [&](Val j) { return cast(Val(b.load(y_buf, at(j).id())), c); };
  std::vector<kir::Stmt>& row = rows.row();
  kir::VarId s = b.var("s", c);
  Val vs = b.var_ref(s);
  row.push_back(accumulator(s, kir::ReduceOp::Sum));
  row.push_back(row_walk(b, "j", n, [&](std::vector<kir::Stmt>& body, Val j) {
    body.push_back(accumulate(s, kir::ReduceOp::Sum, log_form ? g(j) : g(j) * y(j)));
  }));
  row.push_back(row_walk(b, "j2", n, [&](std::vector<kir::Stmt>& body, Val j) {
    Val dx = log_form ? g(j) - exp(y(j)) * vs : y(j) * (g(j) - vs);
    body.push_back(store(out, at(j), cast(dx, dtype)));
  }));
  rows.finish(k);
  return k;
}

// layer_norm's backward over the forward's rows, from g, x and the weight w when has_weight is
// set: mean and rstd are formed again as the forward forms them; with xhat = (x - mean) * rstd
// and gx = g * w (g without a weight)
//   dx = rstd * (gx - sum(gx) / n - xhat * sum(gx * xhat) / n),  gw = g * xhat (with a weight)
// where gw is per element: the engine sums it over the rows into the weight's gradient.
kir::Kernel layer_norm_backward_program(const OpDef& op, DType dtype, const void* attrs) {
  const auto& a = attrs_as<LayerNormAttrs>(attrs);
  DType c = kir::compute_dtype(dtype);
  kir::Kernel k;
  k.name = fmt::format("{}_{}{}", op.name, dtype_short_name(dtype), a.has_weight ? "_w" : "");
  kir::Builder b(k);
  kir::MathScope scope(b, c);
  kir::BufferId dx = b.buffer("dx", dtype, true, kir::kRuntimeExtent);
  kir::BufferId gw = a.has_weight ? b.buffer("gw", dtype, true, kir::kRuntimeExtent) : -1;
  kir::BufferId grad = b.buffer("g", dtype, false, kir::kRuntimeExtent);
  kir::BufferId in = b.buffer("x", dtype, false, kir::kRuntimeExtent);
  kir::BufferId w = a.has_weight ? b.buffer("weight", c, false, kir::kRuntimeExtent) : -1;
  kir::VarId rows = b.size("rows"), n = b.size("n");
  kir::VarId r = b.var("r", kInt64);
  Val base = Val(b.var_ref(r)) * Val(b.var_ref(n));
  auto x = [&](Val j) { return cast(Val(b.load(in, (base + j).id())), c); };
  auto g = [&](Val j) { return cast(Val(b.load(grad, (base + j).id())), c); };
  auto gx = [&](Val j) { return w >= 0 ? g(j) * Val(b.load(w, j.id())) : g(j); };

  kir::Stmt top = kir::stmt::sized_loop(r, rows, {}, kir::LoopKind::Parallel);
  std::vector<kir::Stmt>& row = top.body;
  auto [vmean, vrstd] = row_moments(b, row, n, x, a.eps, c);
  auto xhat = [&](Val j) { return (x(j) - vmean) * vrstd; };
  kir::VarId s1 = b.var("s1", c), s2 = b.var("s2", c), mean_gx = b.var("mean_gx", c),
             mean_gx_xhat = b.var("mean_gx_xhat", c);
  Val wide_n = cast(Val(b.var_ref(n)), kFloat64);
  row.push_back(accumulator(s1, kir::ReduceOp::Sum));
  row.push_back(accumulator(s2, kir::ReduceOp::Sum));
  // For float32 and float64, gx goes to dx first and is read back rounded by the last walk, as
  // the CPU kernel does: a compiler that fuses g * w into gx - mean(gx) (CUDA's) would otherwise
  // leave a rounding error where the result is exactly 0 (a row of one element). The block
  // reduction of s1 and s2 between the walks orders the stores before the loads. A product of
  // two 16-bit floats is exact in float32, so those need no round trip (which would round gx
  // to the 16-bit dx).
  bool round_trip = w >= 0 && dtype == c;
  row.push_back(row_walk(b, "j3", n, [&](std::vector<kir::Stmt>& body, Val j) {
    if (round_trip) body.push_back(store(dx, base + j, gx(j)));
    body.push_back(accumulate(s1, kir::ReduceOp::Sum, gx(j)));
    body.push_back(accumulate(s2, kir::ReduceOp::Sum, gx(j) * xhat(j)));
  }));
  row.push_back(let(mean_gx, narrow(wide(Val(b.var_ref(s1))) / wide_n, c)));
  row.push_back(let(mean_gx_xhat, narrow(wide(Val(b.var_ref(s2))) / wide_n, c)));
  row.push_back(row_walk(b, "j4", n, [&](std::vector<kir::Stmt>& body, Val j) {
    Val stored_gx = round_trip ? Val(b.load(dx, (base + j).id())) : gx(j);
    Val d = vrstd * (stored_gx - Val(b.var_ref(mean_gx)) - xhat(j) * Val(b.var_ref(mean_gx_xhat)));
    body.push_back(store(dx, base + j, cast(d, dtype)));
    if (gw >= 0) body.push_back(store(gw, base + j, cast(g(j) * xhat(j), dtype)));
  }));
  k.body.push_back(std::move(top));
  return k;
}

}  // namespace

kir::Kernel row_program(const OpDef& op, DType dtype, const void* attrs) {
  KILN_CHECK(op.row_program != nullptr, "{}: the op has no row program", op.name);
  return op.row_program(op, dtype, attrs);
}

RowCall row_call(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                 const void* attrs) {
  RowCall call;
  for (const Tensor& out : outputs) {
    bool direct = out.is_contiguous();
    call.results.push_back(direct ? out : empty_tensor(out.sizes(), out.dtype(), out.device()));
    call.buffers.push_back(call.results.back());
  }
  bool layer_norm = op.name == "layer_norm" || op.name == "layer_norm_backward";
  // The row tensors, contiguous: the input (softmax, layer_norm), g and y (the softmax
  // backwards) or g and x (layer_norm_backward).
  size_t row_inputs =
      op.name == "softmax" || op.name == "log_softmax" || op.name == "layer_norm" ? 1 : 2;
  for (size_t i = 0; i < row_inputs; ++i)
    call.buffers.push_back(inputs[i].contiguous());
  Tensor x = call.buffers.back();  // a copy: the affine tensors are appended below
  if (layer_norm) {
    const auto& a = attrs_as<LayerNormAttrs>(attrs);
    // The affine tensors in the compute dtype, as the CPU kernel converts them.
    DType c = kir::compute_dtype(x.dtype());
    for (size_t i = row_inputs; i < inputs.size(); ++i)
      call.buffers.push_back(inputs[i].to(c).contiguous());
    int64_t n = shape_numel(a.normalized_shape);
    call.sizes = {n == 0 ? 0 : x.numel() / n, n};
    call.rows = call.sizes[0];
    call.row_length = n;
    return call;
  }
  int64_t nd = x.dim();
  int64_t dim = wrap_dim(op.name, attrs_as<SoftmaxAttrs>(attrs).dim, nd);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (d < dim) outer *= x.size(d);
    if (d > dim) inner *= x.size(d);
  }
  call.sizes = {outer, nd == 0 ? 1 : x.size(dim), inner};
  call.rows = outer * inner;
  call.row_length = call.sizes[1];
  return call;
}

void RowCall::finish(std::span<const Tensor> outputs) const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!results[i].is_same(outputs[i])) copy_into(outputs[i], results[i]);
}

void register_row_programs(OpTable& table) {
  table.mutable_op("softmax").row_program = softmax_program;
  table.mutable_op("log_softmax").row_program = softmax_program;
  table.mutable_op("layer_norm").row_program = layer_norm_program;
  table.mutable_op("softmax_backward").row_program = softmax_backward_program;
  table.mutable_op("log_softmax_backward").row_program = softmax_backward_program;
  table.mutable_op("layer_norm_backward").row_program = layer_norm_backward_program;
}

}  // namespace kiln
