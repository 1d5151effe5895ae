#include "kiln/passes/lower_fusion_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/base/options.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/passes/fusion_space.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_def.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln::passes {
namespace {

using kir::ExprId;
using kir::Stmt;
using kir::VarId;

// Elements addressable from a value's first element: the kernel-IR verifier's bound; bound at
// launch for a symbolic type (Note [Size parameters]).
int64_t buffer_extent(const ir::TensorType& t) {
  if (t.is_symbolic()) return kir::kRuntimeExtent;
  if (t.numel() == 0) return 0;
  Shape strides = t.effective_strides();
  int64_t e = 1;
  for (size_t d = 0; d < t.sizes.size(); ++d)
    e += (t.sizes[d] - 1) * strides[d];
  return e;
}

struct Geometry {
  const ir::Value* root;
  SymShape sizes;
  SymShape strides;
  SymInt offset;
};

class Lowering {
 public:
  Lowering(const ir::Graph& g, std::string name) : g_(g) { k_.name = std::move(name); }

  // What each of kernel `k`'s size parameters is over the symbols, in launch order.
  std::vector<SymInt> size_args(const kir::Kernel& k) const {
    std::vector<SymInt> out;
    for (VarId v : k.sizes())
      out.push_back(size_meaning_.at(v));
    return out;
  }

  kir::Kernel run() {
    std::vector<const ir::Node*> members;
    for (const ir::Node* n : g_.nodes())
      if (n->kind() != ir::NodeKind::Param) members.push_back(n);
    std::string why;
    auto is_member = [](const ir::Node* n) { return n->kind() != ir::NodeKind::Param; };
    std::optional<GroupAnalysis> a = analyze_group(members, is_member, &why);
    KILN_CHECK(a.has_value(), "lower {}: the fusion group is not one kernel: {}", k_.name, why);
    a_ = std::move(*a);
    declare_buffers();
    declare_sizes();
    dim_vars_.assign(a_.space.full.size(), -1);

    std::vector<Stmt> kbody;
    kbody_ = &kbody;
    std::vector<std::pair<size_t, VarId>> kept_loops = make_vars(false, "i");
    for (const ir::Node* n : members)
      lower_kept_member(*n, kbody);
    for (size_t j = 0; j < g_.outputs().size(); ++j)
      if (role(g_.outputs()[j]) == SpaceRole::Kept) kbody.push_back(store(j, SpaceRole::Kept));
    std::vector<size_t> full_outputs;
    for (size_t j = 0; j < g_.outputs().size(); ++j)
      if (role(g_.outputs()[j]) == SpaceRole::Full) full_outputs.push_back(j);
    if (!full_outputs.empty()) {
      std::vector<std::pair<size_t, VarId>> loops = make_vars(true, "r");
      memo_.clear();
      current_nest_ = -1;
      std::vector<Stmt> body;
      for (size_t j : full_outputs) {
        Stmt st = store(j, SpaceRole::Full);  // may pick the row cache
        // An output that is the cached value itself was stored whole by an earlier walk; this
        // store would copy each element onto itself.
        if (cache_ && cache_->output == j && cache_->value == g_.outputs()[j]) continue;
        body.push_back(std::move(st));
      }
      // The row cache's own store goes last: the other stores may still read the cached value.
      std::stable_partition(body.begin(), body.end(), [&](const Stmt& st) {
        return !cache_ || st.buffer != out_buffers_[cache_->output];
      });
      if (!body.empty()) {
        for (Stmt& s : wrap(std::move(body), loops, false, true))
          kbody.push_back(std::move(s));
      }
    }
    bool pointwise = !a_.space.has_reduction();
    k_.body = wrap(std::move(kbody), kept_loops, true, pointwise);
    return std::move(k_);
  }

 private:
  // ---- buffers and roles ----
  void declare_buffers() {
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const ir::TensorType& t = g_.input(i)->type();
      int64_t extent = read_symbolically(g_.input(i)) ? kir::kRuntimeExtent : buffer_extent(t);
      buffers_[g_.input(i)] = b_.buffer(fmt::format("in{}", i), t.dtype, false, extent);
    }
    for (size_t j = 0; j < g_.outputs().size(); ++j) {
      const ir::TensorType& t = g_.outputs()[j]->type();
      out_buffers_.push_back(b_.buffer(fmt::format("out{}", j), t.dtype, true, buffer_extent(t)));
      SpaceRole r = role(g_.outputs()[j]).value_or(SpaceRole::ExtView);
      KILN_CHECK(r != SpaceRole::ExtView,
                 "lower {}: output {} is not computed in the group (a view of an input)", k_.name,
                 j);
    }
  }

  // Whether a view inside the group reads `input` with symbolic sizes, strides or offset
  // (pos[:s0] of an integer-sized pos): its indices then depend on size parameters, so its
  // bound is checked at launch (Note [Size parameters]), as for an input of symbolic type.
  bool read_symbolically(const ir::Value* input) const {
    for (const auto& [v, view] : a_.views)
      if (view.root == input &&
          (!is_static(view.sizes) || !is_static(view.strides) || view.offset.is_symbolic()))
        return true;
    return false;
  }

  std::optional<SpaceRole> role(const ir::Value* v) const {
    auto it = a_.roles.find(v);
    return it == a_.roles.end() ? std::nullopt : std::optional(it->second);
  }

  Geometry geometry(const ir::Value* v) const {
    auto it = a_.views.find(v);
    if (it != a_.views.end())
      return {it->second.root, it->second.sizes, it->second.strides, it->second.offset};
    return {v, v->type().symbolic_sizes(), v->type().symbolic_strides(), 0};
  }

  // ---- symbolic sizes ----
  // Note [Size parameters] (kernel_ir.h): a group with symbolic types takes each symbol it
  // mentions as a size parameter named after it, and builds its extents, strides and offsets
  // from them, so one kernel serves every value of the symbols.
  void declare_sizes() {
    std::vector<int64_t> ids;
    auto add = [&](const SymShape& shape) {
      for (const SymInt& x : shape)
        for (int64_t id : x.symbols())
          ids.push_back(id);
    };
    for (const ir::Node* n : g_.nodes()) {
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        add(n->output(i)->type().sym_sizes);
        add(n->output(i)->type().sym_strides);
      }
    }
    for (const auto& [v, view] : a_.views) {
      add(view.sizes);
      add(view.strides);
      add(SymShape{view.offset});
    }
    add(a_.space.full);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (int64_t id : ids) {
      size_vars_[id] = b_.size(fmt::format("s{}", id));
      size_meaning_[size_vars_[id]] = SymInt::symbol(id);
    }
  }

  // A size parameter whose value is `extent`, an expression of the symbols: the launcher
  // evaluates it (FusionGroupAttrs::size_args), so the loop runs to a parameter as any other.
  VarId derived_size(const SymInt& extent) {
    for (const auto& [v, meaning] : size_meaning_)
      if (meaning == extent) return v;
    VarId v = b_.size(fmt::format("e{}", derived_count_++));
    size_meaning_[v] = extent;
    return v;
  }

  // `x` as an Int64 expression of the size parameters.
  ExprId sym(const SymInt& x) {
    if (std::optional<int64_t> c = x.maybe_int()) return b_.iconstant(*c);
    ExprId sum = b_.iconstant(0);
    for (const SymTerm& t : x.terms()) {
      ExprId term = b_.iconstant(t.coeff);
      for (const SymInt& f : t.factors)
        term = b_.binary(kir::BinaryOp::Mul, term, atom(f));
      sum = b_.binary(kir::BinaryOp::Add, sum, term);
    }
    return sum;
  }

  ExprId atom(const SymInt& f) {
    if (std::optional<int64_t> id = f.symbol_id()) return b_.var_ref(size_vars_.at(*id));
    SymDivision d = f.division().value();
    // The canonical form divides non-negative numerators (symbols are at least 2, and the
    // coefficients left inside are in [0, c)) by positive constants, where the kernel IR's
    // truncating division is floor division. Other divisions do not arise from the rules yet.
    std::optional<int64_t> den = d.den.maybe_int();
    bool nonnegative = den && *den > 0;
    for (const SymTerm& t : d.num.terms())
      nonnegative = nonnegative && t.coeff >= 0;
    KILN_CHECK(nonnegative, "lower {}: the size {} divides by a symbol or a negative number",
               k_.name, f.str());
    return b_.binary(d.is_mod ? kir::BinaryOp::Rem : kir::BinaryOp::Div, sym(d.num),
                     b_.iconstant(*den));
  }

  // ---- loops ----
  // Fresh loop variables for the kept (reduced = false) or reduced dims of size > 1.
  std::vector<std::pair<size_t, VarId>> make_vars(bool reduced, const char* prefix) {
    std::vector<std::pair<size_t, VarId>> loops;
    int nest = reduced ? reduction_nests_++ : 0;
    for (size_t d = 0; d < a_.space.full.size(); ++d) {
      if (a_.space.reduced[d] != reduced || a_.space.full[d] == 1) continue;
      std::string name =
          nest == 0 ? fmt::format("{}{}", prefix, d) : fmt::format("{}{}_{}", prefix, d, nest);
      VarId v = b_.var(std::move(name), kInt64);
      dim_vars_[d] = v;
      loops.emplace_back(d, v);
    }
    return loops;
  }

  std::vector<Stmt> wrap(std::vector<Stmt> body, const std::vector<std::pair<size_t, VarId>>& loops,
                         bool parallel_outer, bool vector_inner) {
    for (size_t q = loops.size(); q-- > 0;) {
      Stmt loop;
      loop.kind = kir::StmtKind::Loop;
      loop.var = loops[q].second;
      const SymInt& extent = a_.space.full[loops[q].first];
      if (std::optional<int64_t> c = extent.maybe_int()) {
        loop.extent = *c;
      } else if (std::optional<int64_t> id = extent.symbol_id()) {
        loop.extent_size = size_vars_.at(*id);
      } else {
        loop.extent_size = derived_size(extent);
      }
      if (q == 0 && parallel_outer) {
        loop.loop_kind = kir::LoopKind::Parallel;
      } else if (q + 1 == loops.size() && vector_inner) {
        loop.loop_kind = kir::LoopKind::Vector;
      }
      loop.body = std::move(body);
      body.clear();
      body.push_back(std::move(loop));
    }
    return body;
  }

  ExprId coord(size_t d) { return dim_vars_[d] < 0 ? b_.iconstant(0) : b_.var_ref(dim_vars_[d]); }

  // The coordinates, in sizes `shape`, of the current point of `space`: the loop variables
  // when `shape` is the space's own, else the point's row-major position unflattened.
  std::vector<ExprId> coords(const SymShape& shape, SpaceRole space) {
    SymShape base = space == SpaceRole::Full ? a_.space.full : a_.space.kept_keepdim();
    std::vector<ExprId> c(shape.size());
    if (shape == base) {
      for (size_t d = 0; d < shape.size(); ++d)
        c[d] = base[d] == SymInt(1) ? b_.iconstant(0) : coord(d);
      return c;
    }
    SymShape bs = contiguous_strides(base);
    ExprId linear = b_.iconstant(0);
    for (size_t d = 0; d < base.size(); ++d) {
      if (base[d] == SymInt(1)) continue;
      linear = b_.binary(kir::BinaryOp::Add, linear,
                         b_.binary(kir::BinaryOp::Mul, coord(d), sym(bs[d])));
    }
    SymShape ss = contiguous_strides(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == SymInt(1)) {
        c[d] = b_.iconstant(0);
        continue;
      }
      ExprId q = b_.binary(kir::BinaryOp::Div, linear, sym(ss[d]));
      c[d] = d == 0 ? q : b_.binary(kir::BinaryOp::Rem, q, sym(shape[d]));
    }
    return c;
  }

  // Element index of geometry `g` read (or written) at coordinates `c` of a shape `g` broadcasts
  // to (right-aligned; broadcast dims read index 0).
  ExprId index(const Geometry& g, const std::vector<ExprId>& c) {
    ExprId idx = sym(g.offset);
    size_t lead = c.size() - g.sizes.size();
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      if (g.sizes[d] == SymInt(1)) continue;
      idx = b_.binary(kir::BinaryOp::Add, idx,
                      b_.binary(kir::BinaryOp::Mul, c[lead + d], sym(g.strides[d])));
    }
    return idx;
  }

  // ---- values ----
  // Input `u` of a member whose output has sizes `shape`, computed in `space`.
  ExprId operand(const ir::Value* u, const SymShape& shape, SpaceRole space) {
    std::optional<SpaceRole> r = role(u);
    if (!r || *r == SpaceRole::ExtView) {
      Geometry g = geometry(u);
      KILN_CHECK(g.sizes.size() <= shape.size(), "lower {}: operand of rank {} read at rank {}",
                 k_.name, g.sizes.size(), shape.size());
      return b_.load(buffers_.at(g.root), index(g, coords(shape, space)));
    }
    if (*r == SpaceRole::Kept) return kept_.at(u);
    KILN_CHECK(space == SpaceRole::Full, "lower {}: a full-space value read per kept point",
               k_.name);
    return full_value(u);
  }

  ExprId full_value(const ir::Value* v) {
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    const ir::Node& n = *v->node();
    ExprId e;
    if (n.op()->has(kView)) {
      e = operand(n.input(0), v->type().symbolic_sizes(), SpaceRole::Full);
    } else if (std::optional<ExprId> c = cached(v)) {
      e = *c;
    } else {
      e = compute(n, SpaceRole::Full);
      if (current_nest_ >= 0) first_computed_.try_emplace(v, current_nest_, e);
    }
    memo_[v] = e;
    return e;
  }

  // ---- the row cache ----
  // Note [Row cache]
  // A reduction group walks each kept point's row once per reduction and once more for its
  // full-space outputs, and each walk recomputes the full-space values it reads: softmax would
  // evaluate exp(x - max) in its sum loop and again in its output loop. When a walk needs a
  // value an earlier walk computed, and that value is expensive (a transcendental), the earlier
  // walk also stores it into a full-space output buffer of the same dtype, and later walks load
  // it from there; the output's own store, in the last walk, overwrites it at the same element.
  // The round trip is exact (same dtype), so the results are bit-identical to recomputing. One
  // value per kernel, and only rows small enough to stay in cache between the walks.
  struct Cache {
    const ir::Value* value;
    size_t output;
  };
  struct Nest {
    size_t position;            // of the nest's outer loop in the kept-point body
    std::vector<VarId> coords;  // dim_vars_ inside the nest
  };
  static constexpr int64_t kRowCacheBytes = 64 * 1024;

  // The value `v` as loaded from the row cache (assigning it when `v` qualifies), or nullopt.
  std::optional<ExprId> cached(const ir::Value* v) {
    auto first = first_computed_.find(v);
    if (first == first_computed_.end() || first->second.first == current_nest_) return std::nullopt;
    if (!cache_) {
      std::optional<size_t> j = cache_output_for(v, first->second.second);
      if (!j) return std::nullopt;
      cache_ = Cache{v, *j};
      // The earlier walk stores the value it computed, indexed by that walk's loop variables.
      const Nest& nest = nests_[static_cast<size_t>(first->second.first)];
      std::vector<VarId> here = dim_vars_;
      dim_vars_ = nest.coords;
      Stmt st = store_at(*j, first->second.second);
      dim_vars_ = std::move(here);
      innermost_body(*kbody_, nest.position).push_back(std::move(st));
    }
    if (cache_->value != v) return std::nullopt;
    const ir::TensorType& t = g_.outputs()[cache_->output]->type();
    Geometry g{g_.outputs()[cache_->output], t.symbolic_sizes(), t.symbolic_strides(), 0};
    return b_.load(out_buffers_[cache_->output], index(g, coords(g.sizes, SpaceRole::Full)));
  }

  // A contiguous full-space output of `v`'s dtype, when `v` (computed as `e`) is worth caching.
  std::optional<size_t> cache_output_for(const ir::Value* v, ExprId e) const {
    const ir::TensorType& vt = v->type();
    // Only rows of a known length: whether a row stays in cache is decided per kernel.
    std::optional<int64_t> row = a_.space.reduced_numel().maybe_int();
    if (!row || *row <= 1 || *row * static_cast<int64_t>(element_size(vt.dtype)) > kRowCacheBytes)
      return std::nullopt;
    if (!is_transcendental(e)) return std::nullopt;
    SymInt full = 1;
    for (const SymInt& s : a_.space.full)
      full = full * s;
    for (size_t j = 0; j < g_.outputs().size(); ++j) {
      const ir::TensorType& t = g_.outputs()[j]->type();
      if (role(g_.outputs()[j]) != SpaceRole::Full || t.dtype != vt.dtype ||
          !(symbolic_numel(t) == full))
        continue;
      if (ir::symbolic_strides_are_contiguous(t.symbolic_sizes(), t.symbolic_strides())) return j;
    }
    return std::nullopt;
  }

  bool is_transcendental(ExprId root) const {
    std::vector<ExprId> pending{root};
    std::unordered_map<ExprId, bool> seen;
    while (!pending.empty()) {
      ExprId e = pending.back();
      pending.pop_back();
      if (!seen.emplace(e, true).second) continue;
      const kir::Expr& x = k_.exprs[static_cast<size_t>(e)];
      if (x.kind == kir::ExprKind::Unary) {
        auto op = static_cast<kir::UnaryOp>(x.op);
        if (op != kir::UnaryOp::Neg && op != kir::UnaryOp::Abs && op != kir::UnaryOp::Not)
          return true;
      }
      if (x.kind == kir::ExprKind::Binary && static_cast<kir::BinaryOp>(x.op) == kir::BinaryOp::Pow)
        return true;
      if (x.kind == kir::ExprKind::Load) continue;
      for (int i = 0; i < kir::expr_arity(x.kind); ++i)
        pending.push_back(x.args[i]);
    }
    return false;
  }

  static std::vector<Stmt>& innermost_body(std::vector<Stmt>& kbody, size_t position) {
    Stmt* s = &kbody[position];
    while (s->body.size() == 1 && s->body[0].kind == kir::StmtKind::Loop)
      s = &s->body[0];
    return s->body;
  }

  // A pointwise member's value: its op's expression (OpDef::expr) over its operands, rounded to
  // its dtype as the eager kernel's store rounds it.
  ExprId compute(const ir::Node& n, SpaceRole space) {
    const ir::TensorType& out = n.output(0)->type();
    SymShape out_sizes = out.symbolic_sizes();
    std::vector<kir::Val> args;
    for (const ir::Value* u : n.inputs())
      args.emplace_back(operand(u, out_sizes, space));
    if (n.op()->has(kTensorComparison)) {
      // Eager compares in result_type, where a zero-dim operand ranks below a dimensioned one
      // (f32[N] == f64[] compares in f32); the expression sees only dtypes, so convert first.
      std::vector<MetaRef> metas;
      for (const ir::Value* u : n.inputs())
        metas.push_back(MetaRef{u->type().sizes, {}, 0, u->type().dtype, u->type().device});
      DType promoted = result_type(metas);
      for (kir::Val& a : args)
        a = kir::Val(b_.cast(a.id(), promoted));
    }
    kir::MathScope scope(b_, kir::compute_dtype(out.dtype));
    kir::Val r = n.op()->expr(*n.op(), args, n.attrs(), out.dtype);
    return b_.cast(r.id(), out.dtype);
  }

  // ---- per kept point ----
  void lower_kept_member(const ir::Node& n, std::vector<Stmt>& kbody) {
    const ir::Value* v = n.output(0);
    if (role(v) != SpaceRole::Kept) return;
    if (n.op()->has(kView)) {
      kept_[v] = kept_.at(n.input(0));
      return;
    }
    ExprId e = is_fusible_reduction(n) ? reduce(n, kbody) : compute(n, SpaceRole::Kept);
    // Variables hold compute dtypes (Note [Kernel IR dtypes]): a 16-bit float value is kept
    // widened, which is exact, after the rounding to its dtype that `compute` applied.
    DType held = kir::compute_dtype(v->type().dtype);
    e = b_.cast(e, held);
    VarId var = b_.var(fmt::format("v{}", lets_++), held);
    Stmt let;
    let.kind = kir::StmtKind::Let;
    let.var = var;
    let.value = e;
    kbody.push_back(std::move(let));
    kept_[v] = b_.var_ref(var);
  }

  // One accumulation over the reduced dims of `f`'s value at each full point.
  template <class F>
  ExprId accumulate(kir::ReduceOp op, DType dtype, const F& f, std::vector<Stmt>& kbody) {
    VarId acc = b_.var(fmt::format("acc{}", accs_++), dtype);
    Stmt decl;
    decl.kind = kir::StmtKind::Accumulator;
    decl.var = acc;
    decl.reduce = op;
    kbody.push_back(std::move(decl));
    std::vector<std::pair<size_t, VarId>> loops = make_vars(true, "r");
    memo_.clear();
    current_nest_ = static_cast<int>(nests_.size());
    nests_.push_back(Nest{kbody.size(), dim_vars_});
    Stmt upd;
    upd.kind = kir::StmtKind::Accumulate;
    upd.var = acc;
    upd.reduce = op;
    upd.value = f();
    std::vector<Stmt> body;
    body.push_back(std::move(upd));
    for (Stmt& s : wrap(std::move(body), loops, false, true))
      kbody.push_back(std::move(s));
    return b_.var_ref(acc);
  }

  // Note [Fused reduction accuracy]: a float32 sum accumulates in float64 (one accumulator
  // per kept point, so without the pairwise summation of the eager kernels), which keeps its
  // error at one float32 rounding of the result; var's two passes run in float64 as well.
  ExprId reduce(const ir::Node& n, std::vector<Stmt>& kbody) {
    DType dtype = n.output(0)->type().dtype;
    const std::string& name = n.op()->name;
    bool extremum = name == "amax" || name == "amin";
    DType acc = dtype == kFloat32 && !extremum ? kFloat64 : dtype;
    const ir::Value* in = n.input(0);
    // Operands accumulate in the accumulator's dtype (a bool mask's count in int64).
    auto x = [&] { return b_.cast(operand(in, a_.space.full, SpaceRole::Full), acc); };
    // The element count: a constant, or computed from the size parameters.
    SymInt reduced = a_.space.reduced_numel();
    std::optional<int64_t> known = reduced.maybe_int();
    auto count_minus = [&](double correction) {
      if (known) return b_.constant(std::max(0.0, static_cast<double>(*known) - correction), acc);
      ExprId c =
          b_.binary(kir::BinaryOp::Sub, b_.cast(sym(reduced), acc), b_.constant(correction, acc));
      return b_.binary(kir::BinaryOp::Max, c, b_.constant(0.0, acc));
    };
    auto div = [&](ExprId a, ExprId c) { return b_.binary(kir::BinaryOp::Div, a, c); };
    if (extremum)
      return accumulate(name == "amax" ? kir::ReduceOp::Max : kir::ReduceOp::Min, acc, x, kbody);
    ExprId sum = accumulate(kir::ReduceOp::Sum, acc, x, kbody);
    if (name == "sum") return b_.cast(sum, dtype);
    if (name == "mean") return b_.cast(div(sum, count_minus(0.0)), dtype);
    // var: the two-pass formula, sum((x - mean)^2) / max(0, n - correction).
    VarId mean = b_.var(fmt::format("v{}", lets_++), acc);
    Stmt let;
    let.kind = kir::StmtKind::Let;
    let.var = mean;
    let.value = div(sum, count_minus(0.0));
    kbody.push_back(std::move(let));
    auto sq = [&] {
      ExprId d = b_.binary(kir::BinaryOp::Sub, x(), b_.var_ref(mean));
      return b_.binary(kir::BinaryOp::Mul, d, d);
    };
    ExprId ss = accumulate(kir::ReduceOp::Sum, acc, sq, kbody);
    double correction = n.attrs_as<VarAttrs>().correction;
    return b_.cast(div(ss, count_minus(correction)), dtype);
  }

  Stmt store(size_t j, SpaceRole space) {
    const ir::Value* v = g_.outputs()[j];
    if (space == SpaceRole::Kept) return store_at(j, kept_.at(v), space);
    return store_at(j, full_value(v), space);
  }

  // Output `j` at the current point of `space` (its loop variables in dim_vars_) set to `value`.
  Stmt store_at(size_t j, ExprId value, SpaceRole space = SpaceRole::Full) {
    const ir::Value* v = g_.outputs()[j];
    const ir::TensorType& t = v->type();
    Geometry g{v, t.symbolic_sizes(), t.symbolic_strides(), 0};
    Stmt s;
    s.kind = kir::StmtKind::Store;
    s.buffer = out_buffers_[j];
    s.index = index(g, coords(g.sizes, space));
    s.value = value;
    return s;
  }

  const ir::Graph& g_;
  kir::Kernel k_;
  kir::Builder b_{k_};
  GroupAnalysis a_;
  std::unordered_map<const ir::Value*, kir::BufferId> buffers_;
  std::vector<kir::BufferId> out_buffers_;
  std::vector<VarId> dim_vars_;  // the loop variable of each full dim; -1: coordinate 0
  std::unordered_map<int64_t, VarId> size_vars_;  // symbol id -> its size parameter
  std::map<VarId, SymInt> size_meaning_;          // size parameter -> its value over symbols
  int derived_count_ = 0;
  std::unordered_map<const ir::Value*, ExprId> kept_;
  std::unordered_map<const ir::Value*, ExprId> memo_;  // Full values in the current loop nest
  int reduction_nests_ = 0;
  std::vector<Stmt>* kbody_ = nullptr;  // the kept-point body, which holds the nests
  std::vector<Nest> nests_;             // the reduction nests, in order
  int current_nest_ = -1;               // the nest being built; -1: the output nest
  // Full values by the nest that first computed them, with the expression it computed.
  std::unordered_map<const ir::Value*, std::pair<int, ExprId>> first_computed_;
  std::optional<Cache> cache_;
  int lets_ = 0;
  int accs_ = 0;
};

// "fused_3_mul_add_tanh": the group's index and its first few ops.
std::string kernel_name(const ir::Graph& subgraph, size_t index) {
  std::string name = fmt::format("fused_{}", index);
  int shown = 0;
  for (const ir::Node* n : subgraph.nodes()) {
    if (n->kind() != ir::NodeKind::Op || n->op()->has(kView)) continue;
    if (shown++ == 3) {
      name += "_etc";
      break;
    }
    name += "_" + n->op()->name;
  }
  return name;
}

}  // namespace

kir::Kernel lower_fusion_group(const ir::Graph& subgraph, std::string name,
                               std::vector<SymInt>* size_args) {
  Lowering lowering(subgraph, std::move(name));
  kir::Kernel k = lowering.run();
  if (size_args != nullptr) *size_args = lowering.size_args(k);
  return k;
}

static std::string first_line_of(const char* text) {
  std::string s = text;
  s.resize(std::min(s.size(), s.find('\n')));
  return s;
}

bool lower_fusion_groups(ir::Graph& graph) {
  bool changed = false;
  size_t index = 0;
  for (ir::Node* n : graph.nodes()) {
    if (n->kind() != ir::NodeKind::FusionGroup) continue;
    size_t i = index++;
    if (n->fusion_group().kernel) continue;
    const ir::Graph& sub = *n->fusion_group().subgraph;
    std::shared_ptr<const kir::Kernel> kernel;
    std::vector<SymInt> size_args;
    try {
      kernel = std::make_shared<const kir::Kernel>(
          lower_fusion_group(sub, kernel_name(sub, i), &size_args));
    } catch (const Error& e) {
      // A symbolic group whose sizes the kernel IR cannot express (a division by a symbol,
      // docs/dynamic_shapes.md) stays a subgraph: the plan interpreter runs its ops one by one,
      // at the call's symbols. A static group that fails to lower is a bug: it throws.
      if (!sub.has_symbolic_types()) throw;
      log_line("fallbacks", fmt::format("{}: not lowered to one kernel; its ops run one by one",
                                        first_line_of(e.what())));
      continue;
    }
    kir::verify(*kernel);
    n->fusion_group().kernel = std::move(kernel);
    n->fusion_group().size_args = std::move(size_args);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
