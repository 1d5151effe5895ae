// Walking and rewriting kernel IR (Note [Kernel IR]) without writing the walk again: a Visitor
// reads a kernel, a Mutator rewrites one. Halide's IRVisitor and IRMutator are the model.
//
// Note [Kernel IR visitors]
// - One virtual per node kind, for statements (visit_loop ... visit_if) and for expressions
//   (visit_const ... visit_cast). Each default walks the node's children in a fixed order:
//   a statement's expressions in field order (index, value, cond), then its body, then its
//   else-body; an expression's operands in argument order. An override that still wants the
//   children calls the base class's method.
// - Expressions are an arena that statements share (a DAG). A Visitor walks them as trees, so
//   a shared expression is visited once per use, unless it is made with Walk::Once (each
//   expression visited the first time it is reached only); a Mutator memoizes by default (each
//   expression is rewritten once, and every use sees the same result), which is right for rewrites
//   that do not depend on where the expression is used.
// - A Mutator returns the same ExprId when nothing under an expression changed, and leaves a
//   statement untouched when none of its parts changed; changed() says whether anything did.
//   Rewritten expressions are appended to the arena (which only grows); mutate_block may also
//   drop statements or splice in several.
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

class Visitor {
 public:
  enum class Walk : uint8_t { EveryUse, Once };
  explicit Visitor(const Kernel& k, Walk walk = Walk::EveryUse) : kernel_(k), walk_(walk) {}
  virtual ~Visitor() = default;

  // The kernel's body.
  void visit_kernel() { visit_block(kernel_.body); }
  // A statement list of the kernel (a loop's body, say).
  void visit_block(const std::vector<Stmt>& block);
  void visit_stmt(const Stmt& s);  // dispatches on the kind
  void visit_expr(ExprId e);       // dispatches on the kind; kNoExpr is skipped

  virtual void visit_loop(const Stmt& s);
  virtual void visit_store(const Stmt& s);
  virtual void visit_let(const Stmt& s);
  virtual void visit_accumulator(const Stmt& s);
  virtual void visit_accumulate(const Stmt& s);
  virtual void visit_if(const Stmt& s);

  virtual void visit_const(ExprId e, const Expr& x);
  virtual void visit_var(ExprId e, const Expr& x);
  virtual void visit_load(ExprId e, const Expr& x);
  virtual void visit_unary(ExprId e, const Expr& x);
  virtual void visit_binary(ExprId e, const Expr& x);
  virtual void visit_select(ExprId e, const Expr& x);
  virtual void visit_cast(ExprId e, const Expr& x);

 protected:
  const Kernel& kernel() const { return kernel_; }
  const Expr& expr(ExprId e) const { return kernel_.exprs.at(static_cast<size_t>(e)); }
  void visit_operands(const Expr& x);

 private:
  const Kernel& kernel_;
  Walk walk_;
  std::vector<bool> seen_;  // Walk::Once: expressions already visited
};

// Calls f(id, expr) once for each expression that the statements of `body` (and the blocks in
// them) reach, operands included, in visiting order.
template <class F>
void for_each_expr(const Kernel& k, const std::vector<Stmt>& body, F f);
// The same for the expressions `root` reaches, itself included.
template <class F>
void for_each_expr(const Kernel& k, ExprId root, F f);

class Mutator {
 public:
  explicit Mutator(Kernel& k, bool memoize = true) : kernel_(k), memoize_(memoize) {}
  virtual ~Mutator() = default;

  // Rewrites the kernel's body in place.
  void mutate_kernel() { mutate_block(kernel_.body); }
  // Each statement in turn (mutate_stmt); an override may drop or splice statements.
  virtual void mutate_block(std::vector<Stmt>& block);
  void mutate_stmt(Stmt& s);     // dispatches on the kind
  ExprId mutate_expr(ExprId e);  // dispatches on the kind; kNoExpr stays kNoExpr

  virtual void mutate_loop(Stmt& s);
  virtual void mutate_store(Stmt& s);
  virtual void mutate_let(Stmt& s);
  virtual void mutate_accumulator(Stmt& s);
  virtual void mutate_accumulate(Stmt& s);
  virtual void mutate_if(Stmt& s);

  // Each returns `e` itself, or the expression that replaces it.
  virtual ExprId mutate_const(ExprId e, const Expr& x);
  virtual ExprId mutate_var(ExprId e, const Expr& x);
  virtual ExprId mutate_load(ExprId e, const Expr& x);
  virtual ExprId mutate_unary(ExprId e, const Expr& x);
  virtual ExprId mutate_binary(ExprId e, const Expr& x);
  virtual ExprId mutate_select(ExprId e, const Expr& x);
  virtual ExprId mutate_cast(ExprId e, const Expr& x);

  bool changed() const { return changed_; }

 protected:
  Kernel& kernel() const { return kernel_; }
  // `x` with its operands mutated: `e` when none changed, else a new expression.
  ExprId mutate_operands(ExprId e, const Expr& x);
  // Records that the caller changed something mutate_* cannot see (a dropped statement).
  void set_changed() { changed_ = true; }

 private:
  Kernel& kernel_;
  bool memoize_;
  bool changed_ = false;
  std::unordered_map<ExprId, ExprId> memo_;
};

}  // namespace kiln::kir

namespace kiln::kir {
namespace detail {
template <class F>
class EachExpr final : public Visitor {
 public:
  EachExpr(const Kernel& k, F& f) : Visitor(k, Walk::Once), f_(f) {}
  void visit_const(ExprId e, const Expr& x) override { f_(e, x); }
  void visit_var(ExprId e, const Expr& x) override { f_(e, x); }
  void visit_load(ExprId e, const Expr& x) override { call(e, x); }
  void visit_unary(ExprId e, const Expr& x) override { call(e, x); }
  void visit_binary(ExprId e, const Expr& x) override { call(e, x); }
  void visit_select(ExprId e, const Expr& x) override { call(e, x); }
  void visit_cast(ExprId e, const Expr& x) override { call(e, x); }

 private:
  void call(ExprId e, const Expr& x) {
    f_(e, x);
    visit_operands(x);
  }
  F& f_;
};
}  // namespace detail

template <class F>
void for_each_expr(const Kernel& k, const std::vector<Stmt>& body, F f) {
  detail::EachExpr<F> each(k, f);
  each.visit_block(body);
}

template <class F>
void for_each_expr(const Kernel& k, ExprId root, F f) {
  detail::EachExpr<F> each(k, f);
  each.visit_expr(root);
}

}  // namespace kiln::kir
