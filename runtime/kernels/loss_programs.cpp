#include "kiln/runtime/kernels/loss_programs.h"

#include <fmt/format.h>

#include <limits>

#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln {

// Note [The nll_loss program]
// nll_loss reads one element of each row of its log-probabilities: x[i, target[i]]. The index
// depends on data, which the verifier cannot bound, so the program clamps it into [0, c) and
// keeps a separate flag of whether the target was in range: a loss is -x[i, t] (in float64, as
// the CPU kernel forms it) for a target in range and not ignore_index, and 0 otherwise. Targets
// out of range (and not ignored) are counted into the `bad` output with the largest of them, for
// the caller to raise torch's "Target t is out of bounds" error after the launch. "none" stores
// each loss; "sum" and "mean" accumulate the losses and the count of counted targets over one
// vector loop (a block on CUDA), mean dividing in float64, NaN when nothing was counted.

using kir::Val;

namespace {
Val both(Val a, Val b) {
  return kir::MathScope::builder().binary(kir::BinaryOp::And, a.id(), b.id());
}
}  // namespace

kir::Kernel nll_loss_program(const NllLossAttrs& a, DType input, DType output) {
  KILN_CHECK(a.reduction == "none" || a.reduction == "sum" || a.reduction == "mean",
             "nll_loss program: unknown reduction \"{}\"", a.reduction);
  kir::Kernel k;
  k.name = fmt::format("nll_loss_{}_{}_{}", a.reduction, dtype_short_name(input),
                       dtype_short_name(output));
  kir::Builder b(k);
  kir::BufferId out = b.buffer("out", output, true, kir::kRuntimeExtent);
  kir::BufferId x = b.buffer("x", input, false, kir::kRuntimeExtent);
  kir::BufferId target = b.buffer("target", kInt64, false, kir::kRuntimeExtent);
  kir::BufferId bad = b.buffer("bad", kInt64, true, 2);
  kir::VarId n = b.size("n"), c = b.size("c");
  kir::VarId i = b.var("i", kInt64), t = b.var("t", kInt64), ok = b.var("counted", kBool),
             loss = b.var("loss", kFloat64);
  kir::VarId total = b.var("total", kFloat64), count = b.var("count", kInt64),
             nbad = b.var("nbad", kInt64), worst = b.var("worst_target", kInt64);
  kir::MathScope scope(b, kFloat64);
  Val vi = b.var_ref(i), vt = b.var_ref(t), vc = b.var_ref(c), vok = b.var_ref(ok);
  Val ignore = b.iconstant(a.ignore_index);
  Val zero = b.iconstant(0), one = b.iconstant(1);
  Val in_range = both(vt >= zero, vt < vc);
  Val clamped = b.binary(kir::BinaryOp::Min, b.binary(kir::BinaryOp::Max, vt.id(), zero.id()),
                         (vc - one).id());
  Val element = cast(Val(b.load(x, (vi * vc + clamped).id())), kFloat64);

  std::vector<kir::Stmt> row;
  row.push_back(kir::stmt::let(t, b.load(target, vi.id())));
  row.push_back(kir::stmt::let(ok, both(vt != ignore, in_range).id()));
  row.push_back(kir::stmt::let(loss, select(vok, -element, Val(b.constant(0.0, kFloat64))).id()));
  Val is_bad = both(vt != ignore, !in_range);
  row.push_back(kir::stmt::accumulate(nbad, kir::ReduceOp::Sum, select(is_bad, one, zero).id()));
  row.push_back(kir::stmt::accumulate(
      worst, kir::ReduceOp::Max,
      select(is_bad, vt, Val(b.iconstant(std::numeric_limits<int64_t>::min()))).id()));
  if (a.reduction == "none") {
    row.push_back(kir::stmt::store(out, vi.id(), cast(Val(b.var_ref(loss)), output).id()));
  } else {
    row.push_back(kir::stmt::accumulate(total, kir::ReduceOp::Sum, b.var_ref(loss)));
    row.push_back(kir::stmt::accumulate(count, kir::ReduceOp::Sum, select(vok, one, zero).id()));
  }
  std::vector<kir::Stmt> body;
  body.push_back(kir::stmt::accumulator(nbad, kir::ReduceOp::Sum));
  body.push_back(kir::stmt::accumulator(worst, kir::ReduceOp::Max));
  if (a.reduction != "none") {
    body.push_back(kir::stmt::accumulator(total, kir::ReduceOp::Sum));
    body.push_back(kir::stmt::accumulator(count, kir::ReduceOp::Sum));
  }
  body.push_back(kir::stmt::sized_loop(i, n, std::move(row), kir::LoopKind::Vector));
  if (a.reduction != "none") {
    Val vtotal = b.var_ref(total), vcount = b.var_ref(count);
    Val result = vtotal;
    if (a.reduction == "mean") {
      Val nan = b.constant(std::numeric_limits<double>::quiet_NaN(), kFloat64);
      result = select(vcount == zero, nan, vtotal / cast(vcount, kFloat64));
    }
    body.push_back(kir::stmt::store(out, zero.id(), cast(result, output).id()));
  }
  body.push_back(kir::stmt::store(bad, zero.id(), b.var_ref(nbad)));
  body.push_back(kir::stmt::store(bad, one.id(), b.var_ref(worst)));
  k.body = std::move(body);
  return k;
}

NllLossCall nll_loss_call(std::span<const Tensor> inputs, const Tensor& out) {
  KILN_CHECK(out.is_contiguous(), "nll_loss: expected a contiguous output");
  const Tensor& x = inputs[0];
  int64_t n = x.dim() == 2 ? x.size(0) : 1;
  int64_t c = x.size(x.dim() - 1);
  NllLossCall call;
  call.buffers = {out, x.contiguous(), inputs[1].contiguous(),
                  empty_tensor({2}, kInt64, out.device())};
  call.sizes = {n, c};
  return call;
}

}  // namespace kiln
