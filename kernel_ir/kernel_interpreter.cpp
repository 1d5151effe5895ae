#include "kiln/kernel_ir/kernel_interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kiln/base/dtype.h"
#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/kernel_ir/interpreter_lanes.h"
#include "kiln/kernel_ir/interpreter_plan.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"

namespace kiln::kir {
namespace {

using lanes::kMaxLanes;

// A variable's current value: one lane when it was defined outside a batched loop (`uniform`,
// the same for every lane of a batch), else one per lane of the current batch.
struct VarSlot {
  std::vector<unsigned char> lanes;  // kMaxLanes values of the variable's lane type
  bool uniform = true;
};

// Note [Interpreter evaluation]
// Statements run in order. An innermost loop runs in batches (Note [Batched innermost loops]):
// its index holds n consecutive values, and every expression evaluates to n lanes at once into
// a per-expression buffer. Outside innermost loops everything runs with n = 1. An expression's
// lanes are reused (memoized) until the `epoch` changes: at each iteration or batch, after each
// loop, and at each Accumulator or Accumulate statement (which change a variable's value). An
// If runs its branches under lane masks; lanes computed under a mask are reused only under the
// same mask, since masked-off lanes of an integer division hold placeholders.
class Executor {
 public:
  Executor(const Kernel& k, std::span<const BoundBuffer> buffers,
           const std::unordered_map<const Stmt*, int>& widths)
      : k_(k), buffers_(buffers), widths_(widths), vars_(k.vars.size()) {
    reset_memo();
  }

  // For one chunk of a parallel loop: the variables defined so far, nothing cached.
  Executor(const Executor& parent)
      : k_(parent.k_), buffers_(parent.buffers_), widths_(parent.widths_), vars_(parent.vars_) {
    reset_memo();
  }

  void block(const std::vector<Stmt>& body) {
    for (const Stmt& s : body)
      stmt(s);
  }

  void loop_range(const Stmt& s, int64_t begin, int64_t end) {
    auto it = widths_.find(&s);
    VarSlot& v = slot(s.var);
    if (it == widths_.end()) {
      auto* index = reinterpret_cast<int64_t*>(v.lanes.data());
      for (int64_t i = begin; i < end; ++i) {
        index[0] = i;
        v.uniform = true;
        ++epoch_;
        block(s.body);
      }
    } else {
      auto* index = reinterpret_cast<int64_t*>(v.lanes.data());
      bool was_batched = batched_;
      batched_ = true;
      for (int64_t b = begin; b < end; b += it->second) {
        n_ = static_cast<int>(std::min<int64_t>(it->second, end - b));
        for (int i = 0; i < n_; ++i)
          index[i] = b + i;
        v.uniform = false;
        ++epoch_;
        block(s.body);
      }
      n_ = 1;
      batched_ = was_batched;
    }
    ++epoch_;
  }

 private:
  void reset_memo() {
    size_t n = k_.exprs.size();
    buf_.resize(n);
    memo_epoch_.assign(n, 0);
    memo_mask_.assign(n, 0);
    memo_ptr_.assign(n, nullptr);
  }

  VarSlot& slot(VarId v) {
    VarSlot& s = vars_[static_cast<size_t>(v)];
    if (s.lanes.empty()) s.lanes.resize(sizeof(lanes::Buf));
    return s;
  }
  void* buffer(ExprId e) {
    auto& b = buf_[static_cast<size_t>(e)];
    if (!b) b = std::make_unique<lanes::Buf>();
    return b->slot;
  }
  const Expr& expr(ExprId e) const { return k_.exprs[static_cast<size_t>(e)]; }

  const void* eval(ExprId id) {
    auto i = static_cast<size_t>(id);
    if ((memo_epoch_[i] == epoch_ || memo_epoch_[i] == kForever) &&
        (memo_mask_[i] == 0 || memo_mask_[i] == mask_id_)) {
      return memo_ptr_[i];
    }
    const Expr& e = expr(id);
    void* out = nullptr;
    uint64_t epoch = epoch_;
    switch (e.kind) {
      case ExprKind::Const:
        out = buffer(id);
        lanes::fill_const(e, out, kMaxLanes);
        epoch = kForever;
        break;
      case ExprKind::Var: {
        VarSlot& v = slot(e.var);
        if (!v.uniform || n_ == 1) return v.lanes.data();  // current by construction
        out = buffer(id);
        lanes::broadcast(e.dtype, v.lanes.data(), out, n_);
        break;
      }
      case ExprKind::Load: {
        const auto* index = static_cast<const int64_t*>(eval(e.args[0]));
        const BoundBuffer& b = buffers_[static_cast<size_t>(e.buffer)];
        out = buffer(id);
        lanes::load(b.data, b.dtype, index, out, n_);
        break;
      }
      case ExprKind::Unary: {
        const void* a = eval(e.args[0]);
        out = buffer(id);
        lanes::unary(static_cast<UnaryOp>(e.op), e.dtype, a, out, n_);
        break;
      }
      case ExprKind::Binary: {
        const void* a = eval(e.args[0]);
        const void* b = eval(e.args[1]);
        out = buffer(id);
        DType t = expr(e.args[0]).dtype;
        if (lanes::binary(static_cast<BinaryOp>(e.op), t, a, b, out, n_, mask_) >= 0) {
          KILN_ERROR("kernel-IR interpreter: kernel {}: integer division by zero in `{}`", k_.name,
                     expr_str(k_, id));
        }
        break;
      }
      case ExprKind::Select: {
        const auto* c = static_cast<const uint8_t*>(eval(e.args[0]));
        const void* a = eval(e.args[1]);
        const void* b = eval(e.args[2]);
        out = buffer(id);
        lanes::select(e.dtype, c, a, b, out, n_);
        break;
      }
      case ExprKind::Cast: {
        const void* a = eval(e.args[0]);
        out = buffer(id);
        lanes::cast(expr(e.args[0]).dtype, a, e.dtype, out, n_);
        break;
      }
    }
    memo_epoch_[i] = epoch;
    memo_mask_[i] = epoch == kForever ? 0 : mask_id_;
    memo_ptr_[i] = out;
    return out;
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Loop:
        return loop(s);
      case StmtKind::Store: {
        const auto* index = static_cast<const int64_t*>(eval(s.index));
        const void* value = eval(s.value);
        const BoundBuffer& b = buffers_[static_cast<size_t>(s.buffer)];
        lanes::store(b.data, b.dtype, index, expr(s.value).dtype, value, n_, mask_);
        return;
      }
      case StmtKind::Let: {
        const void* value = eval(s.value);
        VarSlot& v = slot(s.var);
        lanes::copy(expr(s.value).dtype, value, v.lanes.data(), n_);
        v.uniform = !batched_;
        return;
      }
      case StmtKind::Accumulator: {
        VarSlot& v = slot(s.var);
        lanes::identity(s.reduce, k_.vars[static_cast<size_t>(s.var)].dtype, v.lanes.data(), n_);
        v.uniform = !batched_;
        ++epoch_;
        return;
      }
      case StmtKind::Accumulate: {
        const void* value = eval(s.value);
        VarSlot& v = slot(s.var);
        DType t = k_.vars[static_cast<size_t>(s.var)].dtype;
        if (v.uniform) {
          lanes::fold(s.reduce, t, v.lanes.data(), value, n_, mask_);
        } else {
          lanes::combine(s.reduce, t, v.lanes.data(), value, n_, mask_);
        }
        ++epoch_;
        return;
      }
      case StmtKind::If:
        return branch(s);
    }
  }

  void branch(const Stmt& s) {
    const auto* cond = static_cast<const uint8_t*>(eval(s.cond));
    // Both masks are made before either branch runs: the branches may reuse cond's buffer.
    size_t depth = mask_depth_++;
    if (masks_.size() < 2 * (depth + 1)) masks_.resize(2 * (depth + 1));
    int active[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      auto& m = masks_[2 * depth + static_cast<size_t>(side)];
      if (m.empty()) m.resize(kMaxLanes);
      for (int i = 0; i < n_; ++i) {
        uint8_t on = (mask_ == nullptr || mask_[i]) && (cond[i] != 0) == (side == 0);
        m[static_cast<size_t>(i)] = on;
        active[side] += on;
      }
    }
    run_masked(s.body, masks_[2 * depth].data(), active[0]);
    run_masked(s.else_body, masks_[2 * depth + 1].data(), active[1]);
    --mask_depth_;
  }

  void run_masked(const std::vector<Stmt>& body, const uint8_t* mask, int active) {
    if (body.empty() || active == 0) return;
    const uint8_t* saved_mask = mask_;
    uint64_t saved_id = mask_id_;
    if (mask_ != nullptr || active < n_) {
      mask_ = mask;
      mask_id_ = ++mask_counter_;
    }
    block(body);
    mask_ = saved_mask;
    mask_id_ = saved_id;
  }

  void loop(const Stmt& s) {
    if (s.loop_kind == LoopKind::Parallel && s.extent > 1 && get_num_threads() > 1 &&
        !in_parallel_region()) {
      int64_t grain = parallel_grain(s.body);
      parallel_for(0, s.extent, grain, [&](int64_t begin, int64_t end) {
        Executor chunk(*this);
        chunk.loop_range(s, begin, end);
      });
      ++epoch_;
      return;
    }
    loop_range(s, 0, s.extent);
  }

  static constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

  const Kernel& k_;
  std::span<const BoundBuffer> buffers_;
  const std::unordered_map<const Stmt*, int>& widths_;
  std::vector<VarSlot> vars_;
  std::vector<std::unique_ptr<lanes::Buf>> buf_;
  std::vector<uint64_t> memo_epoch_, memo_mask_;
  std::vector<const void*> memo_ptr_;
  uint64_t epoch_ = 1, mask_id_ = 0, mask_counter_ = 0;
  int n_ = 1;
  bool batched_ = false;
  const uint8_t* mask_ = nullptr;
  size_t mask_depth_ = 0;
  std::vector<std::vector<uint8_t>> masks_;  // two per nesting depth of If
};

}  // namespace

void run_kernel(const Kernel& kernel, std::span<const BoundBuffer> buffers,
                std::span<const int64_t> sizes) {
  if (!kernel.sizes().empty() || !sizes.empty()) {
    // Note [Size parameters]: the launch's sizes make the kernel static, and the bound
    // buffers' extents make its indices checkable.
    KILN_CHECK(buffers.size() == kernel.buffers.size(),
               "kernel-IR interpreter: kernel {} takes {} buffers, got {}", kernel.name,
               kernel.buffers.size(), buffers.size());
    std::vector<int64_t> extents;
    for (size_t i = 0; i < buffers.size(); ++i)
      if (kernel.buffers[i].extent == kRuntimeExtent) extents.push_back(buffers[i].extent);
    Kernel fixed = specialize_sizes(kernel, sizes, extents);
    return run_kernel(fixed, buffers);
  }
  verify(kernel);
  KILN_CHECK(buffers.size() == kernel.buffers.size(),
             "kernel-IR interpreter: kernel {} takes {} buffers, got {}", kernel.name,
             kernel.buffers.size(), buffers.size());
  auto widths = plan_loops(kernel, buffers);
  Executor(kernel, buffers, widths).block(kernel.body);
}

}  // namespace kiln::kir
