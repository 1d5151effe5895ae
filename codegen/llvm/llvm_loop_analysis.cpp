#include "kiln/codegen/llvm/llvm_loop_analysis.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "kiln/kernel_ir/kernel_ir_rules.h"

namespace kiln::codegen::llvm_backend {
namespace {

using kir::ExprId;
using kir::ExprKind;
using kir::LoopKind;
using kir::Stmt;
using kir::StmtKind;

// Calls f(expr) once for each expression reachable from `pending`, operands included.
template <class F>
void for_each_reachable(const kir::Kernel& k, std::vector<ExprId> pending, const F& f) {
  std::vector<uint8_t> seen(k.exprs.size(), 0);
  while (!pending.empty()) {
    ExprId e = pending.back();
    pending.pop_back();
    if (seen[static_cast<size_t>(e)]++) continue;
    const kir::Expr& x = k.exprs[static_cast<size_t>(e)];
    f(x);
    for (int i = 0; i < kir::expr_arity(x.kind); ++i)
      pending.push_back(x.args[i]);
  }
}

template <class F>
void for_each_expr_of(const kir::Kernel& k, ExprId root, const F& f) {
  for_each_reachable(k, {root}, f);
}

// Calls f(expr) once for each expression that the statements of `body` (and the blocks in them)
// use, operands included.
template <class F>
void for_each_expr(const kir::Kernel& k, const std::vector<Stmt>& body, const F& f) {
  std::vector<ExprId> roots;
  std::function<void(const std::vector<Stmt>&)> collect = [&](const std::vector<Stmt>& b) {
    for (const Stmt& s : b) {
      for (ExprId e : {s.value, s.index, s.cond})
        if (e != kir::kNoExpr) roots.push_back(e);
      collect(s.body);
      collect(s.else_body);
    }
  };
  collect(body);
  for_each_reachable(k, std::move(roots), f);
}

}  // namespace

bool has_accumulate(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Accumulate) return true;
    if (has_accumulate(s.body) || has_accumulate(s.else_body)) return true;
  }
  return false;
}

bool widens_into_f64(const kir::Kernel& k, const std::vector<Stmt>& body) {
  std::function<bool(const std::vector<Stmt>&)> f64_acc = [&](const std::vector<Stmt>& b) {
    return std::any_of(b.begin(), b.end(), [&](const Stmt& s) {
      return (s.kind == StmtKind::Accumulate &&
              k.vars[static_cast<size_t>(s.var)].dtype == kFloat64) ||
             f64_acc(s.body) || f64_acc(s.else_body);
    });
  };
  if (!f64_acc(body)) return false;
  bool narrow_load = false;
  for_each_expr(k, body, [&](const kir::Expr& x) {
    if (x.kind == ExprKind::Load && is_floating(x.dtype) && element_size(x.dtype) <= 4)
      narrow_load = true;
  });
  return narrow_load;
}

std::vector<std::pair<const Stmt*, RowPrefetch>> plan_row_prefetches(const kir::Kernel& k,
                                                                     const Stmt& outer) {
  std::vector<std::pair<const Stmt*, RowPrefetch>> plan;
  std::unordered_map<kir::BufferId, int> walks;
  for (const Stmt& s : outer.body) {
    if (s.kind != StmtKind::Loop || s.loop_kind != LoopKind::Vector) continue;
    std::map<kir::BufferId, ExprId> rows;  // the first row load of each input
    for_each_expr(k, s.body, [&](const kir::Expr& x) {
      if (x.kind == ExprKind::Load && !k.buffers[static_cast<size_t>(x.buffer)].output &&
          kir::reads_var(k, x.args[0], outer.var) && kir::reads_var(k, x.args[0], s.var))
        rows.try_emplace(x.buffer, x.args[0]);
    });
    for (const auto& [buffer, index] : rows) {
      if (++walks[buffer] != 2) continue;
      // The index is evaluated before the walk, so it may read only the two loop variables.
      bool only_loop_vars = true;
      for_each_expr_of(k, index, [&](const kir::Expr& x) {
        if (x.kind == ExprKind::Var && x.var != outer.var && x.var != s.var) only_loop_vars = false;
      });
      std::optional<int64_t> step = kir::affine_coefficient(k, index, outer.var);
      std::optional<int64_t> unit = kir::affine_coefficient(k, index, s.var);
      if (only_loop_vars && step && *step > 0 && unit == 1)
        plan.emplace_back(&s, RowPrefetch{buffer, index, s.var, *step, s.extent});
    }
  }
  return plan;
}

}  // namespace kiln::codegen::llvm_backend
