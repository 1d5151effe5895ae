#include "kiln/kernel_ir/kernel_visitor.h"

#include "kiln/base/error.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"

namespace kiln::kir {

// ---- Visitor ----

void Visitor::visit_block(const std::vector<Stmt>& block) {
  for (const Stmt& s : block)
    visit_stmt(s);
}

void Visitor::visit_stmt(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Loop:
      return visit_loop(s);
    case StmtKind::Store:
      return visit_store(s);
    case StmtKind::Let:
      return visit_let(s);
    case StmtKind::Accumulator:
      return visit_accumulator(s);
    case StmtKind::Accumulate:
      return visit_accumulate(s);
    case StmtKind::If:
      return visit_if(s);
  }
}

void Visitor::visit_expr(ExprId e) {
  if (e == kNoExpr) return;
  const Expr& x = expr(e);
  if (walk_ == Walk::Once) {
    if (seen_.size() < kernel_.exprs.size()) seen_.resize(kernel_.exprs.size(), false);
    if (seen_[static_cast<size_t>(e)]) return;
    seen_[static_cast<size_t>(e)] = true;
  }
  switch (x.kind) {
    case ExprKind::Const:
      return visit_const(e, x);
    case ExprKind::Var:
      return visit_var(e, x);
    case ExprKind::Load:
      return visit_load(e, x);
    case ExprKind::Unary:
      return visit_unary(e, x);
    case ExprKind::Binary:
      return visit_binary(e, x);
    case ExprKind::Select:
      return visit_select(e, x);
    case ExprKind::Cast:
      return visit_cast(e, x);
  }
}

void Visitor::visit_loop(const Stmt& s) {
  visit_block(s.body);
}
void Visitor::visit_store(const Stmt& s) {
  visit_expr(s.index);
  visit_expr(s.value);
}
void Visitor::visit_let(const Stmt& s) {
  visit_expr(s.value);
}
void Visitor::visit_accumulator(const Stmt&) {}
void Visitor::visit_accumulate(const Stmt& s) {
  visit_expr(s.value);
}
void Visitor::visit_if(const Stmt& s) {
  visit_expr(s.cond);
  visit_block(s.body);
  visit_block(s.else_body);
}

void Visitor::visit_operands(const Expr& x) {
  for (int i = 0; i < expr_arity(x.kind); ++i)
    visit_expr(x.args[i]);
}
void Visitor::visit_const(ExprId, const Expr&) {}
void Visitor::visit_var(ExprId, const Expr&) {}
void Visitor::visit_load(ExprId, const Expr& x) {
  visit_operands(x);
}
void Visitor::visit_unary(ExprId, const Expr& x) {
  visit_operands(x);
}
void Visitor::visit_binary(ExprId, const Expr& x) {
  visit_operands(x);
}
void Visitor::visit_select(ExprId, const Expr& x) {
  visit_operands(x);
}
void Visitor::visit_cast(ExprId, const Expr& x) {
  visit_operands(x);
}

// ---- Mutator ----

void Mutator::mutate_block(std::vector<Stmt>& block) {
  for (Stmt& s : block)
    mutate_stmt(s);
}

void Mutator::mutate_stmt(Stmt& s) {
  switch (s.kind) {
    case StmtKind::Loop:
      return mutate_loop(s);
    case StmtKind::Store:
      return mutate_store(s);
    case StmtKind::Let:
      return mutate_let(s);
    case StmtKind::Accumulator:
      return mutate_accumulator(s);
    case StmtKind::Accumulate:
      return mutate_accumulate(s);
    case StmtKind::If:
      return mutate_if(s);
  }
}

ExprId Mutator::mutate_expr(ExprId e) {
  if (e == kNoExpr) return e;
  KILN_CHECK(e >= 0 && static_cast<size_t>(e) < kernel_.exprs.size(),
             "kernel-IR mutator: kernel {}: expression {} is out of range", kernel_.name, e);
  if (memoize_) {
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
  }
  // A copy: the arena may grow (and move) while the operands are rewritten.
  const Expr x = kernel_.exprs[static_cast<size_t>(e)];
  ExprId out = e;
  switch (x.kind) {
    case ExprKind::Const:
      out = mutate_const(e, x);
      break;
    case ExprKind::Var:
      out = mutate_var(e, x);
      break;
    case ExprKind::Load:
      out = mutate_load(e, x);
      break;
    case ExprKind::Unary:
      out = mutate_unary(e, x);
      break;
    case ExprKind::Binary:
      out = mutate_binary(e, x);
      break;
    case ExprKind::Select:
      out = mutate_select(e, x);
      break;
    case ExprKind::Cast:
      out = mutate_cast(e, x);
      break;
  }
  if (out != e) changed_ = true;
  if (memoize_) memo_.emplace(e, out);
  return out;
}

ExprId Mutator::mutate_operands(ExprId e, const Expr& x) {
  Expr y = x;
  bool any = false;
  for (int i = 0; i < expr_arity(x.kind); ++i) {
    y.args[i] = mutate_expr(x.args[i]);
    any = any || y.args[i] != x.args[i];
  }
  if (!any) return e;
  kernel_.exprs.push_back(y);
  return static_cast<ExprId>(kernel_.exprs.size() - 1);
}

void Mutator::mutate_loop(Stmt& s) {
  mutate_block(s.body);
}
void Mutator::mutate_store(Stmt& s) {
  s.index = mutate_expr(s.index);
  s.value = mutate_expr(s.value);
}
void Mutator::mutate_let(Stmt& s) {
  s.value = mutate_expr(s.value);
}
void Mutator::mutate_accumulator(Stmt&) {}
void Mutator::mutate_accumulate(Stmt& s) {
  s.value = mutate_expr(s.value);
}
void Mutator::mutate_if(Stmt& s) {
  s.cond = mutate_expr(s.cond);
  mutate_block(s.body);
  mutate_block(s.else_body);
}

ExprId Mutator::mutate_const(ExprId e, const Expr&) {
  return e;
}
ExprId Mutator::mutate_var(ExprId e, const Expr&) {
  return e;
}
ExprId Mutator::mutate_load(ExprId e, const Expr& x) {
  return mutate_operands(e, x);
}
ExprId Mutator::mutate_unary(ExprId e, const Expr& x) {
  return mutate_operands(e, x);
}
ExprId Mutator::mutate_binary(ExprId e, const Expr& x) {
  return mutate_operands(e, x);
}
ExprId Mutator::mutate_select(ExprId e, const Expr& x) {
  return mutate_operands(e, x);
}
ExprId Mutator::mutate_cast(ExprId e, const Expr& x) {
  return mutate_operands(e, x);
}

}  // namespace kiln::kir
