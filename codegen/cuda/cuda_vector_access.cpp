#include "kiln/codegen/cuda/cuda_vector_access.h"

#include <algorithm>
#include <map>
#include <optional>

namespace kiln::codegen::cuda {

// Note [CUDA vector accesses]
// A memory-bound Elementwise kernel reaches the copy bandwidth only when its loads and stores
// move 16 bytes each (ld.global.v4 and friends). So an Elementwise entry gets a second walk in
// which each thread runs `width` consecutive iterations of the innermost flat loop:
// - An access whose index is affine in the flat loop variables, with coefficient 1 on the
//   innermost one and every other coefficient and the constant a multiple of `width`, touches
//   `width` consecutive elements starting at a multiple of `width`: it becomes one 16-byte (or,
//   for buffers of narrower elements than the widest, 8-, 4- or 2-byte) access through a local
//   array, and each lane reads or writes its element of that array.
// - Every other access (a broadcast, a transposed read, a non-affine index) is made per lane,
//   as in the scalar walk, so the vector walk is correct for any body; it only pays off when
//   some accesses are contiguous, and is emitted only then.
// - `width` is 16 bytes over the widest element among the contiguous accesses, and must divide
//   the innermost loop's extent, so every thread's group lies within one row of the nest.
// The element index is width-aligned, but the buffer's first element need not be (a view with
// a storage offset): the kernel checks every vectorized pointer's alignment at run time and
// takes the scalar walk when one is off. Bodies with If statements keep the scalar walk: a
// conditional store cannot join a vector store.

namespace {

using kir::BinaryOp;
using kir::ExprId;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtKind;
using kir::VarId;

struct Affine {
  std::map<VarId, int64_t> coef;
  int64_t constant = 0;
};

std::optional<Affine> affine(const kir::Kernel& k, ExprId id, const std::set<VarId>& loop_vars) {
  const kir::Expr& e = k.exprs[static_cast<size_t>(id)];
  if (is_floating(e.dtype)) return std::nullopt;
  switch (e.kind) {
    case ExprKind::Const:
      return Affine{{}, e.ivalue};
    case ExprKind::Var:
      if (!loop_vars.count(e.var)) return std::nullopt;
      return Affine{{{e.var, 1}}, 0};
    case ExprKind::Binary: {
      auto op = static_cast<BinaryOp>(e.op);
      if (op != BinaryOp::Add && op != BinaryOp::Sub && op != BinaryOp::Mul) return std::nullopt;
      std::optional<Affine> a = affine(k, e.args[0], loop_vars);
      std::optional<Affine> b = affine(k, e.args[1], loop_vars);
      if (!a || !b) return std::nullopt;
      if (op == BinaryOp::Mul) {
        if (!a->coef.empty() && !b->coef.empty()) return std::nullopt;
        const Affine& scaled = a->coef.empty() ? *b : *a;
        int64_t factor = a->coef.empty() ? a->constant : b->constant;
        Affine r{{}, scaled.constant * factor};
        for (auto [v, c] : scaled.coef)
          r.coef[v] = c * factor;
        return r;
      }
      int64_t sign = op == BinaryOp::Sub ? -1 : 1;
      Affine r = *a;
      r.constant += sign * b->constant;
      for (auto [v, c] : b->coef)
        r.coef[v] += sign * c;
      return r;
    }
    default:
      return std::nullopt;
  }
}

// An access whose elements along the innermost loop are consecutive: coefficient 1 there.
struct Candidate {
  kir::BufferId buffer;
  ExprId index;
  const Stmt* store = nullptr;  // null for a load
  Affine form;
};

}  // namespace

VectorPlan plan_vector_access(const kir::Kernel& k, const std::vector<const Stmt*>& flat,
                              const std::vector<Stmt>& body) {
  VectorPlan none;
  if (flat.empty()) return none;
  for (const Stmt& s : body) {
    if (s.kind != StmtKind::Let && s.kind != StmtKind::Store) return none;
  }
  std::set<VarId> loop_vars;
  for (const Stmt* l : flat)
    loop_vars.insert(l->var);
  VarId inner = flat.back()->var;

  // Every load the body's expressions reach, each expression visited once.
  std::vector<Candidate> candidates;
  std::vector<bool> seen(k.exprs.size(), false);
  std::vector<ExprId> stack;
  auto consider = [&](kir::BufferId buffer, ExprId index, const Stmt* store) {
    std::optional<Affine> f = affine(k, index, loop_vars);
    if (f && f->coef.count(inner) && f->coef.at(inner) == 1)
      candidates.push_back({buffer, index, store, *f});
  };
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store) {
      consider(s.buffer, s.index, &s);
      stack.push_back(s.index);
    }
    stack.push_back(s.value);
  }
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (id == kir::kNoExpr || seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    const kir::Expr& e = k.exprs[static_cast<size_t>(id)];
    if (e.kind == ExprKind::Load) consider(e.buffer, e.args[0], nullptr);
    for (ExprId a : e.args)
      stack.push_back(a);
  }
  if (candidates.empty()) return none;

  size_t widest = 1;
  for (const Candidate& c : candidates)
    widest = std::max(widest, element_size(k.buffers[static_cast<size_t>(c.buffer)].dtype));
  auto width = static_cast<int64_t>(16 / widest);
  if (width < 2 || flat.back()->extent % width != 0) return none;

  VectorPlan plan;
  plan.width = static_cast<int>(width);
  for (const Candidate& c : candidates) {
    bool aligned = c.form.constant % width == 0;
    for (auto [v, coef] : c.form.coef)
      aligned = aligned && (v == inner || coef % width == 0);
    if (!aligned) continue;
    if (c.store != nullptr) {
      plan.stores.insert(c.store);
    } else {
      plan.loads.insert({c.buffer, c.index});
    }
    plan.buffers.insert(c.buffer);
  }
  if (plan.buffers.empty()) return none;
  return plan;
}

}  // namespace kiln::codegen::cuda
