#include "kiln/kernel_ir/interpreter_plan.h"

#include <cstring>
#include <limits>
#include <optional>
#include <unordered_set>
#include <vector>

#include "kiln/kernel_ir/interpreter_lanes.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"

namespace kiln::kir {
namespace {

bool contains_loop(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Loop) return true;
    if (s.kind == StmtKind::If && (contains_loop(s.body) || contains_loop(s.else_body)))
      return true;
  }
  return false;
}

bool same_expr(const Kernel& k, ExprId a, ExprId b) {
  if (a == b) return true;
  const Expr& x = k.exprs[static_cast<size_t>(a)];
  const Expr& y = k.exprs[static_cast<size_t>(b)];
  if (x.kind != y.kind || x.dtype != y.dtype || x.op != y.op || x.var != y.var ||
      x.buffer != y.buffer || x.ivalue != y.ivalue ||
      std::memcmp(&x.value, &y.value, sizeof(double)) != 0) {
    return false;
  }
  for (int i = 0; i < expr_arity(x.kind); ++i)
    if (!same_expr(k, x.args[i], y.args[i])) return false;
  return true;
}

bool overlap(const BoundBuffer& a, const BoundBuffer& b) {
  if (a.extent == 0 || b.extent == 0) return false;
  auto lo_a = reinterpret_cast<uintptr_t>(a.data), lo_b = reinterpret_cast<uintptr_t>(b.data);
  uintptr_t hi_a = lo_a + static_cast<uintptr_t>(a.extent) * element_size(a.dtype);
  uintptr_t hi_b = lo_b + static_cast<uintptr_t>(b.extent) * element_size(b.dtype);
  return lo_a < hi_b && lo_b < hi_a;
}

struct Access {
  BufferId buffer;
  ExprId index;
  bool store;
};

// What one innermost loop body touches.
class BodyScan {
 public:
  explicit BodyScan(const Kernel& k) : k_(k), seen_(k.exprs.size()) {}

  void block(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      switch (s.kind) {
        case StmtKind::Store:
          accesses.push_back({s.buffer, s.index, true});
          expr(s.index);
          expr(s.value);
          break;
        case StmtKind::Let:
          expr(s.value);
          break;
        case StmtKind::Accumulator:
          declared.insert(s.var);
          break;
        case StmtKind::Accumulate:
          accumulated.insert(s.var);
          expr(s.value);
          break;
        case StmtKind::If:
          expr(s.cond);
          block(s.body);
          block(s.else_body);
          break;
        case StmtKind::Loop:
          break;  // not in an innermost loop
      }
    }
  }

  std::vector<Access> accesses;
  std::unordered_set<VarId> declared, accumulated, read;

 private:
  void expr(ExprId e) {
    if (seen_[static_cast<size_t>(e)]) return;
    seen_[static_cast<size_t>(e)] = 1;
    const Expr& x = k_.exprs[static_cast<size_t>(e)];
    if (x.kind == ExprKind::Var) read.insert(x.var);
    if (x.kind == ExprKind::Load) accesses.push_back({x.buffer, x.args[0], false});
    for (int i = 0; i < expr_arity(x.kind); ++i)
      expr(x.args[i]);
  }

  const Kernel& k_;
  std::vector<uint8_t> seen_;
};

bool needs_sequential(const Kernel& k, const Stmt& loop, std::span<const BoundBuffer> buffers) {
  VarId loop_var = loop.var;
  BodyScan scan(k);
  scan.block(loop.body);
  for (VarId v : scan.accumulated)
    if (!scan.declared.count(v) && scan.read.count(v)) return true;
  for (size_t i = 0; i < scan.accesses.size(); ++i) {
    const Access& a = scan.accesses[i];
    if (!a.store) continue;
    for (size_t j = 0; j < scan.accesses.size(); ++j) {
      const Access& b = scan.accesses[j];
      if (i == j) continue;
      const BoundBuffer& ba = buffers[static_cast<size_t>(a.buffer)];
      const BoundBuffer& bb = buffers[static_cast<size_t>(b.buffer)];
      if (!overlap(ba, bb)) continue;
      // Identical indices that move with the loop index touch one element per iteration, the
      // same one in both accesses.
      if (ba.data != bb.data || ba.dtype != bb.dtype || !same_expr(k, a.index, b.index))
        return true;
      auto c = affine_coefficient(k, a.index, loop_var);
      if (!c || *c == 0) return true;
    }
  }
  return false;
}

void plan_block(const Kernel& k, const std::vector<Stmt>& body,
                std::span<const BoundBuffer> buffers, std::unordered_map<const Stmt*, int>& out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Loop) {
      if (contains_loop(s.body)) {
        plan_block(k, s.body, buffers, out);
      } else {
        out[&s] = needs_sequential(k, s, buffers) ? 1 : lanes::kMaxLanes;
      }
    } else if (s.kind == StmtKind::If) {
      plan_block(k, s.body, buffers, out);
      plan_block(k, s.else_body, buffers, out);
    }
  }
}

}  // namespace

std::unordered_map<const Stmt*, int> plan_loops(const Kernel& k,
                                                std::span<const BoundBuffer> buffers) {
  std::unordered_map<const Stmt*, int> out;
  plan_block(k, k.body, buffers, out);
  return out;
}

}  // namespace kiln::kir
