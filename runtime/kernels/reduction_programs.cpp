#include "kiln/runtime/kernels/reduction_programs.h"

#include <fmt/format.h>

#include <string>

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/reduction_strategy.h"
#include "kiln/runtime/op_def.h"

namespace kiln {

// Note [Reduction programs]
// A reduction over dims is one kernel-IR program per op, dtypes and layout rank: the output's
// elements are a nest of parallel loops over the kept dims, each a size parameter, and each
// output's reduced elements a loop over their count, whose index splits into the reduced dims
// (sizes and strides also size parameters: any strided input, broadcasts included, with no
// copy). The caller merges dims first (make_eager_reduction_layout), so the common layouts
// (a contiguous row, a column, everything) have one dim a side and no division. The combine,
// its identity and the conversions are the kernel IR's, so a generated sum reduces exactly as
// a fused one. mean multiplies by 1 / count formed in float64 (NaN for no elements, as
// 0 * inf). On CUDA the vector form is a block per output and the serial form a thread per
// output; the CUDA ops pick one per launch.

using kir::Val;

std::vector<int64_t> ReductionLayout::sizes() const {
  std::vector<int64_t> out;
  for (const auto* v :
       {&kept_sizes, &out_strides, &in_kept_strides, &reduced_sizes, &in_reduced_strides})
    out.insert(out.end(), v->begin(), v->end());
  out.push_back(reduced_numel());
  return out;
}

int64_t ReductionLayout::kept_numel() const {
  int64_t n = 1;
  for (int64_t s : kept_sizes)
    n *= s;
  return n;
}

int64_t ReductionLayout::reduced_numel() const {
  int64_t n = 1;
  for (int64_t s : reduced_sizes)
    n *= s;
  return n;
}

ReductionProgramSpec reduction_spec(const OpDef& op, DType input, DType output) {
  ReductionProgramSpec s;
  s.op = op.name == "prod"   ? kir::ReduceOp::Prod
         : op.name == "amax" ? kir::ReduceOp::Max
         : op.name == "amin" ? kir::ReduceOp::Min
                             : kir::ReduceOp::Sum;
  KILN_CHECK(op.name == "sum" || op.name == "mean" || s.op != kir::ReduceOp::Sum,
             "{}: not a reduction with a program", op.name);
  s.input = input;
  s.output = output;
  bool extremum = s.op == kir::ReduceOp::Max || s.op == kir::ReduceOp::Min;
  s.accumulate = is_floating(output) && !extremum ? kFloat64 : reduction_compute_dtype(output);
  s.mean = op.name == "mean";
  return s;
}

kir::Kernel reduction_program(const ReductionProgramSpec& spec) {
  KILN_CHECK(!spec.mean || is_floating(spec.accumulate),
             "reduction program: a mean accumulates in a floating dtype, not {}", spec.accumulate);
  kir::Kernel k;
  k.name = fmt::format("{}_{}_{}_k{}_r{}{}", spec.mean ? "mean" : reduce_op_name(spec.op),
                       dtype_short_name(spec.input), dtype_short_name(spec.output), spec.kept_dims,
                       spec.reduced_dims, spec.serial ? "_serial" : "");
  kir::Builder b(k);
  kir::BufferId out = b.buffer("out", spec.output, true, kir::kRuntimeExtent);
  kir::BufferId in = b.buffer("x", spec.input, false, kir::kRuntimeExtent);
  auto sizes = [&](const char* prefix, int n) {
    std::vector<kir::VarId> v;
    for (int d = 0; d < n; ++d)
      v.push_back(b.size(fmt::format("{}{}", prefix, d)));
    return v;
  };
  std::vector<kir::VarId> kept = sizes("k", spec.kept_dims);
  std::vector<kir::VarId> out_stride = sizes("os", spec.kept_dims);
  std::vector<kir::VarId> in_stride = sizes("is", spec.kept_dims);
  std::vector<kir::VarId> red = sizes("r", spec.reduced_dims);
  std::vector<kir::VarId> red_stride = sizes("rs", spec.reduced_dims);
  kir::VarId count = b.size("count");

  kir::MathScope scope(b, spec.accumulate);
  // The kept dims' loop variables, outermost first, and the offsets they give.
  std::vector<kir::VarId> idx;
  Val out_at = b.iconstant(0), in_at = b.iconstant(0);
  for (int d = 0; d < spec.kept_dims; ++d) {
    idx.push_back(b.var(fmt::format("o{}", d), kInt64));
    Val i = b.var_ref(idx.back());
    out_at = out_at + i * Val(b.var_ref(out_stride[static_cast<size_t>(d)]));
    in_at = in_at + i * Val(b.var_ref(in_stride[static_cast<size_t>(d)]));
  }
  // The reduced element `r`'s offset: r split into the reduced dims, innermost last.
  kir::VarId r = b.var("r", kInt64);
  Val rest = b.var_ref(r), red_at = b.iconstant(0);
  for (int d = spec.reduced_dims - 1; d >= 0; --d) {
    Val size = b.var_ref(red[static_cast<size_t>(d)]);
    Val stride = b.var_ref(red_stride[static_cast<size_t>(d)]);
    Val i = d == 0 ? rest : Val(b.binary(kir::BinaryOp::Rem, rest.id(), size.id()));
    red_at = red_at + i * stride;
    if (d > 0) rest = b.binary(kir::BinaryOp::Div, rest.id(), size.id());
  }
  kir::VarId acc = b.var("acc", spec.accumulate);
  Val x = cast(Val(b.load(in, (in_at + red_at).id())), spec.accumulate);
  std::vector<kir::Stmt> body;
  body.push_back(kir::stmt::accumulator(acc, spec.op));
  body.push_back(
      kir::stmt::sized_loop(r, count, {kir::stmt::accumulate(acc, spec.op, x.id())},
                            spec.serial ? kir::LoopKind::Serial : kir::LoopKind::Vector));
  Val result = b.var_ref(acc);
  if (spec.mean)
    result = result * (Val(b.constant(1.0, kFloat64)) / cast(Val(b.var_ref(count)), kFloat64));
  body.push_back(kir::stmt::store(out, out_at.id(), cast(result, spec.output).id()));
  for (int d = spec.kept_dims - 1; d >= 0; --d) {
    kir::Stmt loop =
        kir::stmt::sized_loop(idx[static_cast<size_t>(d)], kept[static_cast<size_t>(d)],
                              std::move(body), kir::LoopKind::Parallel);
    body.clear();
    body.push_back(std::move(loop));
  }
  k.body = std::move(body);
  return k;
}

}  // namespace kiln
