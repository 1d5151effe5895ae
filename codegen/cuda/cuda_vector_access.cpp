#include "kiln/codegen/cuda/cuda_vector_access.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

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
// takes the scalar walk when one is off.
// In a kernel with size parameters (Note [Size parameters]) a coefficient or the constant may
// be a product of sizes (the row stride s1 in i0 * s1 + i1), and so may the innermost extent:
// the plan names one size of each such product that must be a multiple of `width`, and the
// kernel checks those with the pointers, so one kernel takes the vector walk at the sizes that
// allow it and the scalar walk at the others. Bodies with If statements keep the scalar walk: a
// conditional store cannot join a vector store.

namespace {

using kir::BinaryOp;
using kir::ExprId;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtKind;
using kir::VarId;

// factor * (the product of the size parameters `sizes`); factor 0 is zero.
struct Term {
  int64_t factor = 0;
  std::vector<VarId> sizes;

  bool is_one() const { return factor == 1 && sizes.empty(); }
};

// a + sign * b, when both are multiples of the same product of sizes (or one is zero).
std::optional<Term> add_terms(const Term& a, const Term& b, int64_t sign) {
  if (b.factor == 0) return a;
  if (a.factor == 0) return Term{sign * b.factor, b.sizes};
  if (a.sizes != b.sizes) return std::nullopt;
  return Term{a.factor + sign * b.factor, a.sizes};
}

Term multiply(const Term& a, const Term& b) {
  Term r{a.factor * b.factor, a.sizes};
  r.sizes.insert(r.sizes.end(), b.sizes.begin(), b.sizes.end());
  std::sort(r.sizes.begin(), r.sizes.end());
  if (r.factor == 0) r.sizes.clear();
  return r;
}

struct Affine {
  std::map<VarId, Term> coef;
  Term constant;
};

std::optional<Affine> affine(const kir::Kernel& k, ExprId id, const std::set<VarId>& loop_vars) {
  const kir::Expr& e = k.exprs[static_cast<size_t>(id)];
  if (is_floating(e.dtype)) return std::nullopt;
  switch (e.kind) {
    case ExprKind::Const:
      return Affine{{}, Term{e.ivalue, {}}};
    case ExprKind::Var:
      if (k.vars[static_cast<size_t>(e.var)].size) return Affine{{}, Term{1, {e.var}}};
      if (!loop_vars.count(e.var)) return std::nullopt;
      return Affine{{{e.var, Term{1, {}}}}, Term{}};
    case ExprKind::Binary: {
      auto op = static_cast<BinaryOp>(e.op);
      if (op != BinaryOp::Add && op != BinaryOp::Sub && op != BinaryOp::Mul) return std::nullopt;
      std::optional<Affine> a = affine(k, e.args[0], loop_vars);
      std::optional<Affine> b = affine(k, e.args[1], loop_vars);
      if (!a || !b) return std::nullopt;
      if (op == BinaryOp::Mul) {
        if (!a->coef.empty() && !b->coef.empty()) return std::nullopt;
        const Affine& scaled = a->coef.empty() ? *b : *a;
        const Term& factor = a->coef.empty() ? a->constant : b->constant;
        Affine r{{}, multiply(scaled.constant, factor)};
        for (const auto& [v, c] : scaled.coef)
          r.coef[v] = multiply(c, factor);
        return r;
      }
      int64_t sign = op == BinaryOp::Sub ? -1 : 1;
      Affine r = *a;
      std::optional<Term> constant = add_terms(a->constant, b->constant, sign);
      if (!constant) return std::nullopt;
      r.constant = *constant;
      for (const auto& [v, c] : b->coef) {
        std::optional<Term> sum = add_terms(r.coef[v], c, sign);
        if (!sum) return std::nullopt;
        r.coef[v] = *sum;
      }
      return r;
    }
    default:
      return std::nullopt;
  }
}

// Whether t is a multiple of `width`: always (true, -1), never (false, -1), or when the size
// parameter `size` is (true, size).
std::pair<bool, VarId> multiple_of(const Term& t, int64_t width) {
  if (t.factor % width == 0) return {true, -1};
  if (t.sizes.empty()) return {false, -1};
  return {true, t.sizes.front()};
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
    if (f && f->coef.count(inner) && f->coef.at(inner).is_one())
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
  if (width < 2) return none;
  VectorPlan plan;
  plan.width = static_cast<int>(width);
  if (flat.back()->extent_size >= 0)
    plan.divisible_sizes.insert(flat.back()->extent_size);
  else if (flat.back()->extent % width != 0)
    return none;

  for (const Candidate& c : candidates) {
    std::set<VarId> needs;
    bool aligned = true;
    auto require = [&](const Term& t) {
      auto [ok, size] = multiple_of(t, width);
      aligned = aligned && ok;
      if (size >= 0) needs.insert(size);
    };
    require(c.form.constant);
    for (const auto& [v, coef] : c.form.coef)
      if (v != inner) require(coef);
    if (!aligned) continue;
    plan.divisible_sizes.insert(needs.begin(), needs.end());
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
