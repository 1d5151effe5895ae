#include "kiln/runtime/kernels/row_programs.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

// Note [Row programs]
// softmax, log_softmax and layer_norm reduce along a row and then write every element of it.
// Each is written here once, as a kernel-IR program whose row count and row length are size
// parameters (Note [Size parameters]), so one program serves every shape:
//   softmax      m = max(x); s = sum(exp(x - m)); out = exp(x - m) * (1 / s)
//   log_softmax  m = max(x); s = sum(exp(x - m)); out = x - (m + log(s))
//   layer_norm   mean = sum(x) / n; m2 = sum((x - mean)^2); rstd = 1 / sqrt(m2 / n + eps);
//                out = (x - mean) * rstd [* weight] [+ bias]
// in the compute dtype (float32 for the 16-bit floats), with the scalars 1 / s, m + log(s),
// mean and rstd formed in float64 and rounded once, as the CPU kernels (nn_ops.cpp) do. The
// rows are `outer * inner` for softmax (the reduced dim of a contiguous tensor viewed as
// [outer, n, inner], so any dim runs without a copy) and `rows` of n contiguous elements for
// layer_norm.
// Who runs them: the eager CUDA kernels are emit_cuda of the program (codegen/cuda), a block
// per row, wherever the row-cached entries do not apply. The CPU kernels of nn_ops.cpp stay
// hand-written. Measured (bench/compiled_llvm.cpp, BM_RowProgramLlvm; docs/performance.md), the
// program compiled by LLVM is 1.7x slower than the hand-written softmax (whose exp sums are
// table-driven, exp_sum_vec.cpp) and as fast as the hand-written layer_norm with its sizes at
// launch (6-10% faster specialized to one shape); eager layer_norm keeps its kernel, since
// running the program would JIT-compile on an eager op's first call and builds without LLVM
// need the kernel anyway. The program OpInfo test runs each program in the kernel-IR
// interpreter and through LLVM against the CPU kernels on every sample.
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

kir::Kernel softmax_program(const OpDef& op, DType dtype, const void*) {
  bool log_form = op.name == "log_softmax";
  DType c = kir::compute_dtype(dtype);
  kir::Kernel k;
  k.name = fmt::format("{}_{}", op.name, dtype_short_name(dtype));
  kir::Builder b(k);
  kir::MathScope scope(b, c);
  kir::BufferId out = b.buffer("out", dtype, true, kir::kRuntimeExtent);
  kir::BufferId in = b.buffer("x", dtype, false, kir::kRuntimeExtent);
  kir::VarId outer = b.size("outer"), n = b.size("n"), inner = b.size("inner");
  kir::VarId o = b.var("o", kInt64), i = b.var("i", kInt64);
  Val vo = b.var_ref(o), vi = b.var_ref(i), vn = b.var_ref(n), vinner = b.var_ref(inner);
  auto at = [&](Val j) { return (vo * vn + j) * vinner + vi; };
  auto x = [&](Val j) { return cast(Val(b.load(in, at(j).id())), c); };

  kir::Stmt rows = kir::stmt::sized_loop(o, outer, {}, kir::LoopKind::Parallel);
  kir::Stmt cols = kir::stmt::sized_loop(i, inner, {}, kir::LoopKind::Parallel);
  std::vector<kir::Stmt>& row = cols.body;
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
  rows.body.push_back(std::move(cols));
  k.body.push_back(std::move(rows));
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
  Val vn = b.var_ref(n);
  Val base = Val(b.var_ref(r)) * vn;
  auto x = [&](Val j) { return cast(Val(b.load(in, (base + j).id())), c); };

  kir::Stmt top = kir::stmt::sized_loop(r, rows, {}, kir::LoopKind::Parallel);
  std::vector<kir::Stmt>& row = top.body;
  kir::VarId sum = b.var("sum", c), mean = b.var("mean", c), m2 = b.var("m2", c),
             rstd = b.var("rstd", c);
  Val vmean = b.var_ref(mean), vrstd = b.var_ref(rstd);
  Val wide_n = cast(vn, kFloat64);
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
  Val var_eps = wide(Val(b.var_ref(m2))) / wide_n + Val(b.constant(a.eps, kFloat64));
  row.push_back(let(rstd, narrow(Val(b.constant(1.0, kFloat64)) / sqrt(var_eps), c)));
  row.push_back(row_walk(b, "j3", n, [&](std::vector<kir::Stmt>& body, Val j) {
    Val y = (x(j) - vmean) * vrstd;
    if (w >= 0) y = y * Val(b.load(w, j.id()));
    if (bias >= 0) y = y + Val(b.load(bias, j.id()));
    body.push_back(store(out, base + j, cast(y, dtype)));
  }));
  k.body.push_back(std::move(top));
  return k;
}

}  // namespace

kir::Kernel row_program(const OpDef& op, DType dtype, const void* attrs) {
  KILN_CHECK(op.row_program != nullptr, "{}: the op has no row program", op.name);
  return op.row_program(op, dtype, attrs);
}

RowCall row_call(const OpDef& op, std::span<const Tensor> inputs, const Tensor& out,
                 const void* attrs) {
  RowCall call;
  Tensor x = inputs[0].contiguous();
  bool direct = out.is_contiguous();
  call.result = direct ? out : empty_tensor(out.sizes(), out.dtype(), out.device());
  call.copy_back = !direct;
  call.buffers = {call.result, x};
  if (op.name == "layer_norm") {
    const auto& a = attrs_as<LayerNormAttrs>(attrs);
    // The affine tensors in the compute dtype, as the CPU kernel converts them.
    DType c = kir::compute_dtype(x.dtype());
    for (size_t i = 1; i < inputs.size(); ++i)
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

void register_row_programs(OpTable& table) {
  table.mutable_op("softmax").row_program = softmax_program;
  table.mutable_op("log_softmax").row_program = softmax_program;
  table.mutable_op("layer_norm").row_program = layer_norm_program;
}

}  // namespace kiln
