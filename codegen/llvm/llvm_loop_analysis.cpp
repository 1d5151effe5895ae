#include "kiln/codegen/llvm/llvm_loop_analysis.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "kiln/kernel_ir/kernel_ir_rules.h"
#include "kiln/kernel_ir/kernel_visitor.h"

namespace kiln::codegen::llvm_backend {
namespace {

using kir::ExprId;
using kir::ExprKind;
using kir::LoopKind;
using kir::Stmt;
using kir::StmtKind;

// The accumulates of a statement list: whether there are any, and whether one is into float64.
class FindAccumulates : public kir::Visitor {
 public:
  using Visitor::Visitor;
  void visit_accumulate(const Stmt& s) override {
    any = true;
    if (kernel().vars[static_cast<size_t>(s.var)].dtype == kFloat64) into_f64 = true;
  }
  bool any = false;
  bool into_f64 = false;
};

}  // namespace

bool has_accumulate(const kir::Kernel& k, const std::vector<Stmt>& body) {
  FindAccumulates find(k);
  find.visit_block(body);
  return find.any;
}

bool widens_into_f64(const kir::Kernel& k, const std::vector<Stmt>& body) {
  FindAccumulates find(k);
  find.visit_block(body);
  if (!find.into_f64) return false;
  bool narrow_load = false;
  kir::for_each_expr(k, body, [&](ExprId, const kir::Expr& x) {
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
    // A row of runtime length has no constant span to prefetch.
    if (s.kind != StmtKind::Loop || s.loop_kind != LoopKind::Vector || s.extent_size >= 0) continue;
    std::map<kir::BufferId, ExprId> rows;  // the first row load of each input
    kir::for_each_expr(k, s.body, [&](ExprId, const kir::Expr& x) {
      if (x.kind == ExprKind::Load && !k.buffers[static_cast<size_t>(x.buffer)].output &&
          kir::reads_var(k, x.args[0], outer.var) && kir::reads_var(k, x.args[0], s.var))
        rows.try_emplace(x.buffer, x.args[0]);
    });
    for (const auto& [buffer, index] : rows) {
      if (++walks[buffer] != 2) continue;
      // The index is evaluated before the walk, so it may read only the two loop variables.
      bool only_loop_vars = true;
      kir::for_each_expr(k, index, [&](ExprId, const kir::Expr& x) {
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
