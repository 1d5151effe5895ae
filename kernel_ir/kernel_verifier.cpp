#include "kiln/kernel_ir/kernel_verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/base/dtype.h"
#include "kiln/base/error.h"
#include "kiln/kernel_ir/index_bounds.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"
#include "kiln/kernel_ir/kernel_printer.h"

namespace kiln::kir {
namespace {

// Where a variable stands in the walk: scoping is by statement position, so the verifier walks
// the statements in order and marks each variable as its definition comes into and goes out
// of scope.
enum class Scope : uint8_t { Undefined, InScope, OutOfScope };

struct VarInfo {
  Scope scope = Scope::Undefined;
  StmtKind def = StmtKind::Let;
  ReduceOp reduce = ReduceOp::Sum;
  size_t parallel_depth = 0;  // Parallel loops around the definition
  std::string def_path;
};

class Verifier {
 public:
  explicit Verifier(const Kernel& k)
      : k_(k), vars_(k.vars.size()), checked_(k.exprs.size()), seen_(k.exprs.size()), bounds_(k) {}

  void run() {
    check_names();
    // Size parameters are defined at entry and in scope everywhere (Note [Size parameters]).
    for (VarId v : k_.sizes())
      vars_[static_cast<size_t>(v)] = {Scope::InScope, StmtKind::Let, ReduceOp::Sum, 0,
                                       "the kernel's size parameters"};
    block(k_.body, "body");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    std::string where = path_str();
    KILN_ERROR("kernel-IR verifier: kernel {}: {}: {}", k_.name, where.empty() ? "kernel" : where,
               problem);
  }

  std::string path_str() const { return fmt::format("{}", fmt::join(path_, " > ")); }

  std::string quote(ExprId e) const {
    std::string s = expr_str(k_, e);
    if (s.size() > 160) s.replace(157, std::string::npos, "...");
    return fmt::format("`{}`", s);
  }
  std::string var_name(VarId v) const {
    return fmt::format("%{}", k_.vars[static_cast<size_t>(v)].name);
  }
  const Expr& expr(ExprId e) const { return k_.exprs[static_cast<size_t>(e)]; }

  void check_names() {
    path_ = {"buffers"};
    std::unordered_set<std::string> names;
    bool sized = !k_.sizes().empty();
    for (const Buffer& b : k_.buffers) {
      if (b.name.empty()) fail("a buffer has an empty name");
      if (!names.insert(b.name).second) fail(fmt::format("two buffers are named %{}", b.name));
      if (b.extent == kRuntimeExtent && !sized)
        fail(fmt::format("buffer %{} has a runtime extent in a kernel without size parameters",
                         b.name));
      if (b.extent < 0 && b.extent != kRuntimeExtent)
        fail(fmt::format("buffer %{} has negative extent {}", b.name, b.extent));
      if (!valid_dtype(b.dtype)) fail(fmt::format("buffer %{} has an unknown dtype", b.name));
    }
    names.clear();
    path_ = {"variables"};
    for (const Var& v : k_.vars) {
      if (v.name.empty()) fail("a variable has an empty name");
      if (!names.insert(v.name).second) fail(fmt::format("two variables are named %{}", v.name));
      if (!valid_dtype(v.dtype)) fail(fmt::format("variable %{} has an unknown dtype", v.name));
      if (v.size && v.dtype != kInt64)
        fail(fmt::format("size parameter %{} is {}; it must be i64", v.name,
                         dtype_short_name(v.dtype)));
    }
    path_.clear();
  }

  void check_var_id(VarId v) const {
    if (v < 0 || static_cast<size_t>(v) >= k_.vars.size())
      fail(fmt::format("variable id {} is out of range (the kernel has {})", v, k_.vars.size()));
  }

  // Defines v at this statement; a variable is defined once in the whole kernel.
  void define(VarId v, StmtKind kind, std::vector<VarId>& block_vars) {
    check_var_id(v);
    VarInfo& info = vars_[static_cast<size_t>(v)];
    if (info.scope != Scope::Undefined)
      fail(fmt::format("{} is defined twice (first at {})", var_name(v), info.def_path));
    std::string where = path_str();
    info = {Scope::InScope, kind, ReduceOp::Sum, parallel_.size(), std::move(where)};
    block_vars.push_back(v);
  }

  // Checks the expressions reachable from `root` (the statement's `what` operand): ids, typing
  // rules, variables in scope, and the bounds of every load's index.
  void operand(ExprId root, std::string_view what) {
    if (root < 0 || static_cast<size_t>(root) >= k_.exprs.size()) {
      fail(fmt::format("{} is expression {}, out of range (the kernel has {})", what, root,
                       k_.exprs.size()));
    }
    ++stamp_;
    visit(root);
  }

  void visit(ExprId e) {
    if (seen_[static_cast<size_t>(e)] == stamp_) return;
    seen_[static_cast<size_t>(e)] = stamp_;
    const Expr& x = expr(e);
    if (!checked_[static_cast<size_t>(e)]) {
      std::string problem = expr_problem(k_, e, x);
      if (!problem.empty()) fail(fmt::format("expression {}: {}", quote(e), problem));
    }
    for (int i = 0; i < expr_arity(x.kind); ++i)
      visit(x.args[i]);
    if (x.kind == ExprKind::Var) {
      const VarInfo& info = vars_[static_cast<size_t>(x.var)];
      if (info.scope == Scope::Undefined)
        fail(fmt::format("{} is used before its definition", var_name(x.var)));
      if (info.scope == Scope::OutOfScope)
        fail(fmt::format("{} is used outside its scope (defined at {})", var_name(x.var),
                         info.def_path));
    }
    if (!checked_[static_cast<size_t>(e)] && x.kind == ExprKind::Load)
      check_index(x.args[0], x.buffer, "load from");
    checked_[static_cast<size_t>(e)] = 1;
  }

  void check_index(ExprId index, BufferId buffer, std::string_view what) {
    const Buffer& b = k_.buffers[static_cast<size_t>(buffer)];
    // Bounded at launch, where the sizes and the buffers' extents are known.
    if (b.extent == kRuntimeExtent) return;
    const IndexRange& r = bounds_.range(index);
    if (!r.bounded()) {
      fail(fmt::format("index {} of {} %{} cannot be bounded: {}", quote(index), what, b.name,
                       r.why));
    }
    if (r.lo < 0 || r.hi >= b.extent) {
      fail(fmt::format("index {} of {} %{} ranges over [{}, {}], outside the buffer's extent {}",
                       quote(index), what, b.name, r.lo, r.hi, b.extent));
    }
  }

  static bool contains_loop(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Loop) return true;
      if (s.kind == StmtKind::If && (contains_loop(s.body) || contains_loop(s.else_body)))
        return true;
    }
    return false;
  }

  void block(const std::vector<Stmt>& body, std::string_view name) {
    std::vector<VarId> block_vars;
    for (size_t i = 0; i < body.size(); ++i) {
      path_.push_back(fmt::format("{}[{}].{}", name, i, stmt_label(body[i])));
      stmt(body[i], block_vars);
      path_.pop_back();
    }
    for (VarId v : block_vars)
      vars_[static_cast<size_t>(v)].scope = Scope::OutOfScope;
  }

  std::string stmt_label(const Stmt& s) const {
    bool named = s.var >= 0 && static_cast<size_t>(s.var) < k_.vars.size();
    std::string var = named ? fmt::format(" {}", var_name(s.var)) : std::string();
    switch (s.kind) {
      case StmtKind::Loop:
        return fmt::format("loop{}", var);
      case StmtKind::Store:
        return "store";
      case StmtKind::Let:
        return fmt::format("let{}", var);
      case StmtKind::Accumulator:
        return fmt::format("acc{}", var);
      case StmtKind::Accumulate:
        return fmt::format("accumulate{}", var);
      case StmtKind::If:
        return "if";
    }
    return fmt::format("<statement kind {}>", static_cast<int>(s.kind));
  }

  void stmt(const Stmt& s, std::vector<VarId>& block_vars) {
    switch (s.kind) {
      case StmtKind::Loop:
        return loop(s, block_vars);
      case StmtKind::Store:
        return store(s);
      case StmtKind::Let: {
        operand(s.value, "the value");
        define(s.var, StmtKind::Let, block_vars);
        const Var& v = k_.vars[static_cast<size_t>(s.var)];
        DType t = expr(s.value).dtype;
        if (t != v.dtype) {
          fail(fmt::format("let {}: {} is given a {} value", var_name(s.var),
                           dtype_short_name(v.dtype), dtype_short_name(t)));
        }
        if (!is_compute_dtype(v.dtype)) {
          fail(fmt::format("let {} is typed {}; variables are b8, i32, i64, f32 or f64",
                           var_name(s.var), dtype_short_name(v.dtype)));
        }
        if (is_integral(t, true)) bounds_.define(s.var, bounds_.range(s.value));
        return;
      }
      case StmtKind::Accumulator: {
        check_reduce(s);
        define(s.var, StmtKind::Accumulator, block_vars);
        VarInfo& info = vars_[static_cast<size_t>(s.var)];
        info.reduce = s.reduce;
        const Var& v = k_.vars[static_cast<size_t>(s.var)];
        if (!is_compute_dtype(v.dtype)) {
          fail(fmt::format("accumulator {} is typed {}; variables are b8, i32, i64, f32 or f64",
                           var_name(s.var), dtype_short_name(v.dtype)));
        }
        bounds_.define(s.var, {0, 0, fmt::format("it reads accumulator {}", var_name(s.var))});
        return;
      }
      case StmtKind::Accumulate:
        return accumulate(s);
      case StmtKind::If:
        operand(s.cond, "the condition");
        if (expr(s.cond).dtype != kBool) {
          fail(fmt::format("the condition {} is {}; it must be b8", quote(s.cond),
                           dtype_short_name(expr(s.cond).dtype)));
        }
        block(s.body, "body");
        block(s.else_body, "else");
        return;
    }
    fail(fmt::format("unknown statement kind {}", static_cast<int>(s.kind)));
  }

  static bool valid_dtype(DType t) {
    return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumDTypes;
  }
  void check_reduce(const Stmt& s) const {
    if (s.reduce > ReduceOp::Min)
      fail(fmt::format("unknown reduction {}", static_cast<int>(s.reduce)));
  }

  void loop(const Stmt& s, std::vector<VarId>& block_vars) {
    if (s.loop_kind > LoopKind::Vector)
      fail(fmt::format("unknown loop kind {}", static_cast<int>(s.loop_kind)));
    define(s.var, StmtKind::Loop, block_vars);
    const Var& v = k_.vars[static_cast<size_t>(s.var)];
    if (v.dtype != kInt64)
      fail(fmt::format("loop index {} is {}; it must be i64", var_name(s.var),
                       dtype_short_name(v.dtype)));
    if (s.extent_size >= 0) {
      check_var_id(s.extent_size);
      if (!k_.vars[static_cast<size_t>(s.extent_size)].size)
        fail(fmt::format("loop {} runs to {}, which is not a size parameter", var_name(s.var),
                         var_name(s.extent_size)));
    } else if (s.extent <= 0) {
      fail(fmt::format("loop {} has extent {}; it must be positive", var_name(s.var), s.extent));
    }
    if (s.loop_kind == LoopKind::Vector && contains_loop(s.body))
      fail(fmt::format("vector loop {} is not innermost: its body contains a loop",
                       var_name(s.var)));
    if (s.extent_size < 0) bounds_.define(s.var, {0, s.extent - 1, {}});
    if (s.loop_kind == LoopKind::Parallel) parallel_.push_back(s.var);
    block(s.body, "body");
    if (s.loop_kind == LoopKind::Parallel) parallel_.pop_back();
    // A loop index is in scope in its body only.
    vars_[static_cast<size_t>(s.var)].scope = Scope::OutOfScope;
  }

  void store(const Stmt& s) {
    if (s.buffer < 0 || static_cast<size_t>(s.buffer) >= k_.buffers.size()) {
      fail(fmt::format("store into buffer id {}, out of range (the kernel has {})", s.buffer,
                       k_.buffers.size()));
    }
    const Buffer& b = k_.buffers[static_cast<size_t>(s.buffer)];
    if (!b.output) fail(fmt::format("store into input buffer %{}", b.name));
    operand(s.index, "the index");
    operand(s.value, "the value");
    if (expr(s.index).dtype != kInt64) {
      fail(fmt::format("the index {} of store into %{} is {}; indices are i64", quote(s.index),
                       b.name, dtype_short_name(expr(s.index).dtype)));
    }
    check_index(s.index, s.buffer, "store into");
  }

  void accumulate(const Stmt& s) {
    check_reduce(s);
    check_var_id(s.var);
    const VarInfo& info = vars_[static_cast<size_t>(s.var)];
    if (info.scope != Scope::InScope)
      fail(fmt::format("accumulate into {}, which is not in scope", var_name(s.var)));
    if (info.def != StmtKind::Accumulator)
      fail(fmt::format("accumulate into {}, which is not an accumulator", var_name(s.var)));
    if (info.reduce != s.reduce) {
      fail(fmt::format("{} accumulate into {}, declared as a {} accumulator",
                       reduce_op_name(s.reduce), var_name(s.var), reduce_op_name(info.reduce)));
    }
    if (parallel_.size() > info.parallel_depth) {
      fail(
          fmt::format("accumulate into {}, declared outside the parallel loop {} (parallel "
                      "iterations must be independent)",
                      var_name(s.var), var_name(parallel_[info.parallel_depth])));
    }
    operand(s.value, "the value");
    const Var& v = k_.vars[static_cast<size_t>(s.var)];
    DType t = expr(s.value).dtype;
    if (t != v.dtype) {
      fail(fmt::format("accumulate of a {} value into {}: {}", dtype_short_name(t), var_name(s.var),
                       dtype_short_name(v.dtype)));
    }
  }

  const Kernel& k_;
  std::vector<VarInfo> vars_;
  std::vector<uint8_t> checked_;  // per expression: its own rules and load bounds hold
  std::vector<uint32_t> seen_;    // per expression: the last operand() walk that reached it
  uint32_t stamp_ = 0;
  IndexBounds bounds_;
  std::vector<std::string> path_;
  std::vector<VarId> parallel_;  // enclosing Parallel loops, outermost first
};

}  // namespace

void verify(const Kernel& kernel) {
  Verifier(kernel).run();
}

}  // namespace kiln::kir
