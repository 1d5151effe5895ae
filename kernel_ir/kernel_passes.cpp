#include "kiln/kernel_ir/kernel_passes.h"

#include <algorithm>
#include <vector>

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

std::span<const KernelPass> kernel_passes() {
  return kPasses;
}

const KernelPass* find_kernel_pass(std::string_view name) {
  for (const KernelPass& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kiln::kir
