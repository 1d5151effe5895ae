#include "kiln/kernel_ir/kernel_passes.h"

#include <algorithm>
#include <vector>

#include "kiln/base/error.h"
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

std::span<const KernelPass> kernel_passes() {
  return kPasses;
}

const KernelPass* find_kernel_pass(std::string_view name) {
  for (const KernelPass& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kiln::kir
