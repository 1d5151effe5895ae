#include "kiln/kernel_ir/kernel_passes.h"

#include <algorithm>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/kernel_ir/index_bounds.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/kernel_ir/kernel_visitor.h"

namespace kiln::kir {
namespace {

// Which variables some expression reads.
class ReadVariables : public Visitor {
 public:
  explicit ReadVariables(const Kernel& k) : Visitor(k), read(k.vars.size(), false) {}
  void visit_var(ExprId, const Expr& x) override {
    if (x.var >= 0 && static_cast<size_t>(x.var) < read.size())
      read[static_cast<size_t>(x.var)] = true;
  }
  std::vector<bool> read;
};

// Drops the statements that define, or only accumulate into, a variable nobody reads, and the
// loops and ifs that end up empty.
class DropDeadStatements : public Mutator {
 public:
  DropDeadStatements(Kernel& k, std::vector<bool> read) : Mutator(k), read_(std::move(read)) {}

  void mutate_block(std::vector<Stmt>& block) override {
    Mutator::mutate_block(block);  // the bodies first, so emptied loops go in this round
    size_t before = block.size();
    std::erase_if(block, [&](const Stmt& s) { return dead(s); });
    if (block.size() != before) set_changed();
  }

 private:
  bool unread(VarId v) const { return v >= 0 && !read_[static_cast<size_t>(v)]; }
  bool dead(const Stmt& s) const {
    switch (s.kind) {
      case StmtKind::Let:
      case StmtKind::Accumulator:
      case StmtKind::Accumulate:
        return unread(s.var);
      case StmtKind::Loop:
        return s.body.empty();
      case StmtKind::If:
        return s.body.empty() && s.else_body.empty();
      case StmtKind::Store:
        return false;
    }
    return false;
  }
  std::vector<bool> read_;
};

// Replaces reads of size parameters by constants and runs loops to their values.
class FixSizes : public Mutator {
 public:
  FixSizes(Kernel& k, std::vector<int64_t> value_of) : Mutator(k), value_of_(std::move(value_of)) {}

  ExprId mutate_var(ExprId e, const Expr& x) override {
    if (!kernel().vars[static_cast<size_t>(x.var)].size) return e;
    return Builder(kernel()).iconstant(value_of_[static_cast<size_t>(x.var)], x.dtype);
  }
  void mutate_block(std::vector<Stmt>& block) override {
    Mutator::mutate_block(block);
    std::erase_if(block, [](const Stmt& s) { return s.kind == StmtKind::Loop && s.extent == 0; });
  }
  void mutate_loop(Stmt& s) override {
    if (s.extent_size >= 0) {
      s.extent = value_of_[static_cast<size_t>(s.extent_size)];
      s.extent_size = -1;
      set_changed();
    }
    Mutator::mutate_loop(s);
  }

 private:
  std::vector<int64_t> value_of_;  // per variable
};

// For each buffer, one past the largest index the kernel's loads and stores reach (0 when none
// does), by the verifier's interval bounds; throws when an index cannot be bounded.
class AddressedExtents {
 public:
  explicit AddressedExtents(const Kernel& k) : k_(k), bounds_(k), extent_(k.buffers.size(), 0) {}
  std::vector<int64_t> run() {
    block(k_.body);
    return extent_;
  }

 private:
  void block(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      for (ExprId e : {s.index, s.value, s.cond})
        if (e != kNoExpr)
          for_each_expr(k_, e, [&](ExprId, const Expr& x) {
            if (x.kind == ExprKind::Load) reach(x.buffer, x.args[0]);
          });
      switch (s.kind) {
        case StmtKind::Loop:
          bounds_.define(s.var, {0, s.extent - 1, {}});
          break;
        case StmtKind::Store:
          reach(s.buffer, s.index);
          break;
        case StmtKind::Let:
          if (is_integral(k_.vars[static_cast<size_t>(s.var)].dtype, true))
            bounds_.define(s.var, bounds_.range(s.value));
          break;
        default:
          break;
      }
      block(s.body);
      block(s.else_body);
    }
  }
  void reach(BufferId b, ExprId index) {
    const IndexRange& r = bounds_.range(index);
    KILN_CHECK(r.bounded(), "kernel {}: the index of buffer %{} cannot be bounded: {}", k_.name,
               k_.buffers[static_cast<size_t>(b)].name, r.why);
    int64_t& e = extent_[static_cast<size_t>(b)];
    e = std::max(e, r.hi + 1);
  }
  const Kernel& k_;
  IndexBounds bounds_;
  std::vector<int64_t> extent_;
};

bool verify_pass(Kernel& kernel) {
  verify(kernel);
  return false;
}

constexpr KernelPass kPasses[] = {
    {"verify", "check the kernel against the kernel IR's rules (kernel_verifier.h)", verify_pass},
    {"dce", "remove unread lets and accumulators, and loops and ifs left empty",
     eliminate_dead_statements},
};

}  // namespace

bool eliminate_dead_statements(Kernel& kernel) {
  bool any = false;
  for (;;) {
    ReadVariables reads(kernel);
    reads.visit_kernel();
    DropDeadStatements drop(kernel, std::move(reads.read));
    drop.mutate_kernel();
    if (!drop.changed()) return any;
    any = true;
  }
}

Kernel specialize_sizes(const Kernel& kernel, std::span<const int64_t> sizes,
                        std::span<const int64_t> buffer_extents) {
  // The structure first: fixing the sizes could hide what the verifier rejects (a size defined
  // again by a statement, a loop that runs to a variable that is not a size).
  verify(kernel);
  std::vector<VarId> params = kernel.sizes();
  KILN_CHECK(sizes.size() == params.size(), "kernel {}: {} sizes given for {} size parameters",
             kernel.name, sizes.size(), params.size());
  Kernel out = kernel;
  std::vector<int64_t> value_of(kernel.vars.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    KILN_CHECK(sizes[i] >= 0, "kernel {}: size %{} is {}; sizes are at least 0", kernel.name,
               kernel.vars[static_cast<size_t>(params[i])].name, sizes[i]);
    value_of[static_cast<size_t>(params[i])] = sizes[i];
  }
  size_t next = 0;
  for (Buffer& b : out.buffers) {
    if (b.extent != kRuntimeExtent) continue;
    KILN_CHECK(next < buffer_extents.size(), "kernel {}: no extent given for buffer %{}",
               kernel.name, b.name);
    b.extent = buffer_extents[next++];
  }
  KILN_CHECK(next == buffer_extents.size(),
             "kernel {}: {} buffer extents given for {} buffers of runtime extent", kernel.name,
             buffer_extents.size(), next);
  FixSizes(out, std::move(value_of)).mutate_kernel();
  for (VarId v : params)
    out.vars[static_cast<size_t>(v)].size = false;
  return out;
}

Kernel specialize_sizes(const Kernel& kernel, std::span<const int64_t> sizes) {
  size_t runtime = 0;
  for (const Buffer& b : kernel.buffers)
    runtime += b.extent == kRuntimeExtent ? 1 : 0;
  std::vector<int64_t> placeholder(runtime, 0);
  Kernel out = specialize_sizes(kernel, sizes, placeholder);
  std::vector<int64_t> reached = AddressedExtents(out).run();
  for (size_t i = 0; i < out.buffers.size(); ++i)
    if (kernel.buffers[i].extent == kRuntimeExtent) out.buffers[i].extent = reached[i];
  return out;
}

std::span<const KernelPass> kernel_passes() {
  return kPasses;
}

const KernelPass* find_kernel_pass(std::string_view name) {
  for (const KernelPass& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kiln::kir
