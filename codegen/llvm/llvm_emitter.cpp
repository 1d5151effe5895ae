#include "kiln/codegen/llvm/llvm_emitter.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/codegen/llvm/llvm_loop_analysis.h"
#include "kiln/codegen/llvm/llvm_math.h"
#include "kiln/codegen/llvm/llvm_streaming_stores.h"
#include "kiln/codegen/llvm/llvm_value_lowering.h"
#include "kiln/kernel_ir/kernel_printer.h"

namespace kiln::codegen::llvm_backend {
namespace {

using kir::BinaryOp;
using kir::ExprId;
using kir::ExprKind;
using kir::LoopKind;
using kir::ReduceOp;
using kir::Stmt;
using kir::StmtKind;
using kir::UnaryOp;
using kir::VarId;

class Emitter {
 public:
  Emitter(const kir::Kernel& k, const std::string& symbol, llvm::LLVMContext& ctx,
          unsigned vector_bits)
      : k_(k), symbol_(symbol), ctx_(ctx), b_(ctx), vector_bits_(vector_bits) {
    // No fast-math flags: every float operation rounds as the kernel-IR interpreter's does, so
    // the two agree bit for bit (Note [LLVM agrees with the interpreter]).
    module_ = std::make_unique<llvm::Module>(symbol, ctx);
    sizes_ = k.sizes();
    streaming_ = streaming_buffers(k);
    if (std::find(streaming_.begin(), streaming_.end(), true) != streaming_.end())
      module_->addModuleFlag(llvm::Module::Warning, kStreamingFlag, 1);
  }

  std::unique_ptr<llvm::Module> run() {
    llvm::Type* ptr = b_.getPtrTy();
    auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false);
    llvm::Function* entry =
        llvm::Function::Create(entry_ty, llvm::Function::ExternalLinkage, symbol_, module_.get());
    entry->setDoesNotThrow();
    llvm::Value* args = entry->getArg(0);
    args->setName("args");

    // Top-level statements other than loops define variables that later statements read, so
    // such a kernel is one function; otherwise each top-level loop is its own (parallel or not).
    bool all_loops = std::all_of(k_.body.begin(), k_.body.end(),
                                 [](const Stmt& s) { return s.kind == StmtKind::Loop; });
    std::vector<llvm::Function*> parts;
    if (all_loops) {
      for (size_t i = 0; i < k_.body.size(); ++i)
        parts.push_back(emit_part({&k_.body[i]}, fmt::format("{}.part{}", symbol_, i), true));
    } else {
      std::vector<const Stmt*> all;
      for (const Stmt& s : k_.body)
        all.push_back(&s);
      parts.push_back(emit_part(all, symbol_ + ".part0", false));
    }

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    for (size_t i = 0; i < parts.size(); ++i) {
      llvm::Function* body = parts[i];
      const Stmt* loop = all_loops ? &k_.body[i] : nullptr;
      // A loop that runs to a size goes through the thread pool too, which runs a short one
      // inline.
      bool parallel = loop != nullptr && loop->loop_kind == LoopKind::Parallel &&
                      (loop->extent > 1 || loop->extent_size >= 0);
      llvm::Value* extent = loop == nullptr          ? b_.getInt64(1)
                            : loop->extent_size >= 0 ? load_size(b_, args, loop->extent_size)
                                                     : b_.getInt64(loop->extent);
      if (parallel) {
        int64_t grain = kir::parallel_grain(loop->body);
        b_.CreateCall(parallel_for(), {ranged_wrapper(body, i), args, extent, b_.getInt64(grain)});
      } else {
        b_.CreateCall(ranged_wrapper(body, i), {args, b_.getInt64(0), extent});
      }
    }
    b_.CreateRetVoid();
    return std::move(module_);
  }

 private:
  // ---- functions ----

  llvm::FunctionCallee parallel_for() {
    llvm::Type* ptr = b_.getPtrTy();
    llvm::Type* i64 = b_.getInt64Ty();
    return module_->getOrInsertFunction(
        kParallelForSymbol, llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64, i64}, false));
  }

  // Size parameter `v`'s value, loaded from the array args[n + 1] points to (Note [LLVM kernel
  // ABI]).
  llvm::Value* load_size(llvm::IRBuilder<>& b, llvm::Value* args, VarId v) {
    size_t slot = 0;
    while (sizes_[slot] != v)
      ++slot;
    llvm::Value* at = b.CreateConstInBoundsGEP1_64(b.getPtrTy(), args, k_.buffers.size() + 1);
    llvm::Value* array = b.CreateLoad(b.getPtrTy(), at, "sizes");
    llvm::Value* elem = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), array, slot);
    return b.CreateLoad(b.getInt64Ty(), elem, k_.vars[static_cast<size_t>(v)].name);
  }

  // void NAME.range(void** args, i64 begin, i64 end): loads the buffer addresses (and the sizes)
  // and calls the part, whose parameters are noalias. The callback signature of
  // kiln_llvm_parallel_for.
  llvm::Function* ranged_wrapper(llvm::Function* part, size_t index) {
    llvm::Type* ptr = b_.getPtrTy();
    llvm::Type* i64 = b_.getInt64Ty();
    auto* ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false);
    llvm::Function* f =
        llvm::Function::Create(ty, llvm::Function::InternalLinkage,
                               fmt::format("{}.range{}", symbol_, index), module_.get());
    f->setDoesNotThrow();
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", f));
    std::vector<llvm::Value*> call_args;
    size_t n = k_.buffers.size();
    for (size_t i = 0; i <= n; ++i) {
      llvm::Value* slot = b.CreateConstInBoundsGEP1_64(ptr, f->getArg(0), i);
      call_args.push_back(b.CreateLoad(ptr, slot, i < n ? k_.buffers[i].name : "status"));
    }
    for (VarId v : sizes_)
      call_args.push_back(load_size(b, f->getArg(0), v));
    call_args.push_back(f->getArg(1));
    call_args.push_back(f->getArg(2));
    b.CreateCall(part, call_args);
    b.CreateRetVoid();
    return f;
  }

  // void NAME.partI(noalias buffers..., i32* status, i64 sizes..., i64 begin, i64 end): the
  // statements, the first loop (when `ranged`) restricted to [begin, end).
  llvm::Function* emit_part(const std::vector<const Stmt*>& stmts, const std::string& name,
                            bool ranged) {
    std::vector<llvm::Type*> params(k_.buffers.size() + 1, b_.getPtrTy());
    params.insert(params.end(), sizes_.size() + 2, b_.getInt64Ty());
    auto* ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(ty, llvm::Function::InternalLinkage, name, module_.get());
    fn_->setDoesNotThrow();
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    buffers_.clear();
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      llvm::Argument* a = fn_->getArg(static_cast<unsigned>(i));
      a->setName(k_.buffers[i].name);
      a->addAttr(llvm::Attribute::NoAlias);
      if (!k_.buffers[i].output) a->addAttr(llvm::Attribute::ReadOnly);
      buffers_.push_back(a);
    }
    status_ = fn_->getArg(static_cast<unsigned>(k_.buffers.size()));
    status_->setName("status");
    auto first_size = static_cast<unsigned>(k_.buffers.size() + 1);
    auto after_sizes = static_cast<unsigned>(first_size + sizes_.size());
    llvm::Value* begin = fn_->getArg(after_sizes);
    llvm::Value* end = fn_->getArg(after_sizes + 1);

    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    alloca_builder_ = std::make_unique<llvm::IRBuilder<>>(entry);
    b_.SetInsertPoint(entry);
    vars_.clear();
    nan_flags_.clear();
    div_by_zero_ = nullptr;
    vector_depth_ = 0;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      llvm::Argument* a = fn_->getArg(first_size + static_cast<unsigned>(i));
      a->setName(k_.vars[static_cast<size_t>(sizes_[i])].name);
      write_var(sizes_[i], a);
    }
    auto statements = [&](llvm::Value* first) {
      for (size_t i = 0; i < stmts.size(); ++i) {
        if (ranged && i == 0) {
          loop(*stmts[0], first, end);
        } else {
          stmt(*stmts[i]);
        }
      }
    };
    if (std::find(streaming_.begin(), streaming_.end(), true) == streaming_.end()) {
      statements(begin);
    } else {
      // Note [Streaming stores]: an aligned copy of the statements and a plain one. The aligned
      // copy reads the streaming buffers through ptrmask(p, -64) and starts a thread's range at
      // begin & -16, values equal to p and begin on that path whose alignment LLVM can see, so
      // that the vectorized stores get it. (A range starts at a multiple of 16 elements when
      // the thread pool splits a large loop evenly.)
      llvm::Value* aligned =
          ranged ? b_.CreateICmpEQ(b_.CreateAnd(begin, 15), b_.getInt64(0)) : b_.getTrue();
      for (size_t i = 0; i < streaming_.size(); ++i) {
        if (!streaming_[i]) continue;
        llvm::Value* low = b_.CreateAnd(b_.CreatePtrToInt(buffers_[i], b_.getInt64Ty()), 63);
        aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(low, b_.getInt64(0)));
      }
      llvm::BasicBlock* streaming = llvm::BasicBlock::Create(ctx_, "streaming", fn_);
      llvm::BasicBlock* plain = llvm::BasicBlock::Create(ctx_, "plain", fn_);
      llvm::BasicBlock* joined = llvm::BasicBlock::Create(ctx_, "joined", fn_);
      b_.CreateCondBr(aligned, streaming, plain);
      b_.SetInsertPoint(streaming);
      std::vector<llvm::Value*> unmasked = buffers_;
      for (size_t i = 0; i < streaming_.size(); ++i) {
        if (!streaming_[i]) continue;
        buffers_[i] = b_.CreateIntrinsic(llvm::Intrinsic::ptrmask, {b_.getPtrTy(), b_.getInt64Ty()},
                                         {buffers_[i], b_.getInt64(-64)});
        // InstCombine drops the mask where the branch proves it redundant; the assumption keeps
        // the alignment known after that.
        b_.CreateAlignmentAssumption(module_->getDataLayout(), buffers_[i], 64);
      }
      statements(ranged ? b_.CreateAnd(begin, -16) : begin);
      buffers_ = unmasked;
      b_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
      b_.CreateBr(joined);
      b_.SetInsertPoint(plain);
      memo_.clear();
      statements(begin);
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
      memo_.clear();
    }
    if (div_by_zero_ != nullptr) {
      // Report once per call: the flag is updated per division (a select, which the vectorizer
      // keeps as a reduction) and written to the status word at the end.
      llvm::Value* code = b_.CreateLoad(b_.getInt32Ty(), div_by_zero_);
      llvm::Value* hit = b_.CreateICmpNE(code, b_.getInt32(0));
      llvm::BasicBlock* report = llvm::BasicBlock::Create(ctx_, "report_div_by_zero", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "done", fn_);
      b_.CreateCondBr(hit, report, done);
      b_.SetInsertPoint(report);
      llvm::StoreInst* st = b_.CreateStore(code, status_);
      st->setAtomic(llvm::AtomicOrdering::Monotonic);
      st->setAlignment(llvm::Align(4));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    }
    b_.CreateRetVoid();
    alloca_builder_.reset();
    return fn_;
  }

  // ---- variables ----

  llvm::AllocaInst* var_slot(VarId v) {
    auto it = vars_.find(v);
    if (it != vars_.end()) return it->second;
    const kir::Var& var = k_.vars.at(static_cast<size_t>(v));
    llvm::AllocaInst* slot = entry_alloca(lane_type(b_, var.dtype), var.name);
    vars_.emplace(v, slot);
    return slot;
  }
  // Allocas go at the top of the entry block (which may already end in its branch), where SROA
  // promotes them to registers.
  llvm::AllocaInst* entry_alloca(llvm::Type* type, const std::string& name) {
    llvm::BasicBlock& entry = fn_->getEntryBlock();
    alloca_builder_->SetInsertPoint(&entry, entry.getFirstInsertionPt());
    return alloca_builder_->CreateAlloca(type, nullptr, name);
  }
  llvm::Value* read_var(VarId v) {
    llvm::AllocaInst* slot = var_slot(v);
    return b_.CreateLoad(slot->getAllocatedType(), slot);
  }
  void write_var(VarId v, llvm::Value* x) { b_.CreateStore(x, var_slot(v)); }

  // A float max or min accumulator, whose NaN lives in a flag beside it (Note [NaN flags]).
  bool has_nan_flag(ReduceOp op, DType t) const {
    return is_floating(t) && (op == ReduceOp::Max || op == ReduceOp::Min);
  }
  llvm::AllocaInst* nan_flag(VarId v) {
    auto it = nan_flags_.find(v);
    if (it != nan_flags_.end()) return it->second;
    llvm::BasicBlock& entry = fn_->getEntryBlock();
    alloca_builder_->SetInsertPoint(&entry, entry.getFirstInsertionPt());
    llvm::AllocaInst* slot = alloca_builder_->CreateAlloca(
        b_.getInt1Ty(), nullptr, k_.vars.at(static_cast<size_t>(v)).name + ".nan");
    nan_flags_.emplace(v, slot);
    return slot;
  }
  // A variable as the kernel reads it: a flagged accumulator gives NaN once a NaN was combined.
  llvm::Value* read_value(VarId v) {
    llvm::Value* x = read_var(v);
    auto it = nan_flags_.find(v);
    if (it == nan_flags_.end()) return x;
    llvm::Value* flag = b_.CreateLoad(b_.getInt1Ty(), it->second);
    return b_.CreateSelect(flag, llvm::ConstantFP::getNaN(x->getType()), x);
  }

  // ---- statements ----

  void block(const std::vector<Stmt>& body) {
    for (const Stmt& s : body)
      stmt(s);
  }

  void stmt(const Stmt& s) {
    memo_.clear();  // an expression's value is reused within one statement only
    switch (s.kind) {
      case StmtKind::Loop:
        return loop(s, b_.getInt64(0),
                    s.extent_size >= 0 ? read_var(s.extent_size) : b_.getInt64(s.extent));
      case StmtKind::Store:
        return store(s);
      case StmtKind::Let:
        return write_var(s.var, expr(s.value));
      case StmtKind::Accumulator: {
        DType t = k_.vars[static_cast<size_t>(s.var)].dtype;
        if (has_nan_flag(s.reduce, t)) b_.CreateStore(b_.getFalse(), nan_flag(s.var));
        return write_var(s.var, identity(s.reduce, t));
      }
      case StmtKind::Accumulate:
        return accumulate(s);
      case StmtKind::If:
        return branch(s);
    }
  }

  // Note [Reduced-range LLVM loops]
  // kiln::math::sin and cos branch to libm beyond the polynomial's range (Note [sin and cos by
  // one polynomial]), and a branch to a call keeps the loop vectorizer away: compiled sin ran
  // one element at a time. The eager loop checks each block once (Note [Reduced-range float
  // loops]); an innermost loop does the same over its whole range. It runs first with the
  // polynomial alone, ORing "beyond the range" into a flag (a reduction the vectorizer keeps),
  // and only if the flag is set runs again as before, branching per element, which overwrites
  // every value with kiln::math's. Running twice gives what running once does because such a
  // loop only stores (Store and Let statements: no accumulate into an outer variable, no nested
  // loop), at indices that do not depend on sin or cos, reads no output buffer, divides no
  // integers (whose division by zero would be reported), and its outputs overlap no input (Note
  // [LLVM kernel ABI]).
  bool runs_reduced_first(const Stmt& s) const {
    if (beyond_flag_ != nullptr) return false;
    std::vector<VarId> lets;
    for (const Stmt& st : s.body) {
      if (st.kind != StmtKind::Store && st.kind != StmtKind::Let) return false;
      if (st.kind == StmtKind::Let) lets.push_back(st.var);
    }
    bool trig = false;
    for (const Stmt& st : s.body) {
      // A Store's index must not depend on the first run's values (directly or through a Let):
      // that run could write elements the second one never rewrites.
      if (st.kind == StmtKind::Store && scan_for_reduced_range(st.index, lets) != Scan::Plain)
        return false;
      switch (scan_for_reduced_range(st.value, {})) {
        case Scan::Ineligible:
          return false;
        case Scan::HasReducedRange:
          trig = true;
          break;
        case Scan::Plain:
          break;
      }
    }
    return trig;
  }
  // Ineligible: the expression reads an output buffer or one of `lets`, or divides integers
  // (the first run's values beyond the range could raise a division by zero that running once
  // never would).
  enum class Scan { Plain, HasReducedRange, Ineligible };
  Scan scan_for_reduced_range(ExprId root, const std::vector<VarId>& lets) const {
    std::vector<bool> seen(k_.exprs.size());
    std::vector<ExprId> todo{root};
    Scan found = Scan::Plain;
    while (!todo.empty()) {
      ExprId id = todo.back();
      todo.pop_back();
      if (id == kir::kNoExpr || seen[static_cast<size_t>(id)]) continue;
      seen[static_cast<size_t>(id)] = true;
      const kir::Expr& e = k_.exprs[static_cast<size_t>(id)];
      if (e.kind == ExprKind::Load && k_.buffers[static_cast<size_t>(e.buffer)].output)
        return Scan::Ineligible;
      if (e.kind == ExprKind::Var && std::find(lets.begin(), lets.end(), e.var) != lets.end())
        return Scan::Ineligible;
      if (e.kind == ExprKind::Binary && !is_floating(e.dtype) &&
          (static_cast<BinaryOp>(e.op) == BinaryOp::Div ||
           static_cast<BinaryOp>(e.op) == BinaryOp::Rem) &&
          !nonzero_constant(e.args[1]))
        return Scan::Ineligible;
      if (e.kind == ExprKind::Unary && reduced_range_op(static_cast<UnaryOp>(e.op), e.dtype))
        found = Scan::HasReducedRange;
      for (ExprId a : e.args)
        todo.push_back(a);
    }
    return found;
  }
  // A divisor that can never be zero (the index arithmetic of broadcast operands divides by
  // dimension sizes).
  bool nonzero_constant(ExprId id) const {
    const kir::Expr& e = k_.exprs[static_cast<size_t>(id)];
    return e.kind == ExprKind::Const && e.ivalue != 0;
  }
  static bool reduced_range_op(UnaryOp op, DType t) {
    return (op == UnaryOp::Sin || op == UnaryOp::Cos) && is_floating(t) && t != kFloat64;
  }

  void loop(const Stmt& s, llvm::Value* begin, llvm::Value* end) {
    if (!runs_reduced_first(s)) return loop_once(s, begin, end);
    beyond_flag_ = entry_alloca(b_.getInt1Ty(), "beyond_range");
    b_.CreateStore(b_.getFalse(), beyond_flag_);
    loop_once(s, begin, end);
    llvm::Value* beyond = b_.CreateLoad(b_.getInt1Ty(), beyond_flag_);
    beyond_flag_ = nullptr;
    llvm::BasicBlock* again = llvm::BasicBlock::Create(ctx_, "beyond_range", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "within_range", fn_);
    b_.CreateCondBr(beyond, again, done);
    b_.SetInsertPoint(again);
    loop_once(s, begin, end);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  void loop_once(const Stmt& s, llvm::Value* begin, llvm::Value* end) {
    if (s.loop_kind == LoopKind::Parallel)
      for (auto& [walk, p] : plan_row_prefetches(k_, s))
        prefetch_before_[walk].push_back(p);
    if (auto it = prefetch_before_.find(&s); it != prefetch_before_.end())
      for (const RowPrefetch& p : it->second)
        prefetch_next_row(p);
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "after", fn_);
    write_var(s.var, begin);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::Value* i = read_var(s.var);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, exit);
    b_.SetInsertPoint(body);
    bool vector = s.loop_kind == LoopKind::Vector;
    vector_depth_ += vector ? 1 : 0;
    block(s.body);
    vector_depth_ -= vector ? 1 : 0;
    llvm::Value* next = b_.CreateAdd(read_var(s.var), b_.getInt64(1), "", true, true);
    write_var(s.var, next);
    llvm::BranchInst* back = b_.CreateBr(header);
    if (vector) back->setMetadata(llvm::LLVMContext::MD_loop, vector_loop_md(s));
    b_.SetInsertPoint(exit);
    memo_.clear();
  }

  // Note [Row prefetch] (llvm_loop_analysis.h): one prefetch per 64-byte line of the next row.
  void prefetch_next_row(const RowPrefetch& p) {
    const kir::Buffer& buf = k_.buffers.at(static_cast<size_t>(p.buffer));
    write_var(p.inner, b_.getInt64(0));
    memo_.clear();
    llvm::Value* first = b_.CreateAdd(expr(p.index), b_.getInt64(p.next_row));
    memo_.clear();
    // Plain (not inbounds) arithmetic: the last row's next row lies past the buffer.
    llvm::Value* row =
        b_.CreateGEP(storage_type(b_, buf.dtype), buffers_[static_cast<size_t>(p.buffer)], first);
    int64_t bytes = p.extent * static_cast<int64_t>(element_size(buf.dtype));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "prefetch", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "prefetched", fn_);
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    llvm::PHINode* offset = b_.CreatePHI(b_.getInt64Ty(), 2);
    offset->addIncoming(b_.getInt64(0), pre);
    llvm::Value* line = b_.CreateGEP(b_.getInt8Ty(), row, offset);
    // read, high locality (to L1), data cache
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                       {line, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
    llvm::Value* next = b_.CreateAdd(offset, b_.getInt64(64));
    offset->addIncoming(next, body);
    llvm::BranchInst* back =
        b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(bytes)), body, exit);
    llvm::Metadata* ops[] = {
        nullptr, llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}),
        llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                 llvm::ConstantAsMetadata::get(b_.getFalse())})};
    llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    back->setMetadata(llvm::LLVMContext::MD_loop, md);
    b_.SetInsertPoint(exit);
  }

  // A Vector loop's promise (its iterations may run in SIMD lanes, its accumulates split over
  // partial accumulators) as the loop vectorizer's hints; a reduction also gets several partial
  // vector accumulators (interleaving), so that the adds do not wait on each other.
  llvm::MDNode* vector_loop_md(const Stmt& s) {
    std::vector<llvm::Metadata*> ops;
    ops.push_back(nullptr);  // the self reference
    auto hint = [&](const char* name, llvm::Metadata* v) {
      ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name), v}));
    };
    hint("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(b_.getTrue()));
    if (has_accumulate(k_, s.body))
      hint("llvm.loop.interleave.count", llvm::ConstantAsMetadata::get(b_.getInt32(4)));
    // The vectorizer sizes a loop by its widest type, so a float32 row summed in float64 would
    // run its float32 math (exp, say) at half the lanes; a full register of float32 lanes
    // instead costs one more add and conversion per vector.
    if (widens_into_f64(k_, s.body))
      hint("llvm.loop.vectorize.width",
           llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<int32_t>(vector_bits_ / 32))));
    // Interleaving already unrolls the vector body; O3's full unrolling of a known 1024-trip
    // row would add 64 copies that spill registers and slow the row down.
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    return md;
  }

  void branch(const Stmt& s) {
    llvm::Value* c = expr(s.cond);
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
    b_.CreateCondBr(c, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    block(s.body);
    b_.CreateBr(join);
    b_.SetInsertPoint(else_bb);
    block(s.else_body);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    memo_.clear();
  }

  void store(const Stmt& s) {
    const kir::Buffer& buf = k_.buffers.at(static_cast<size_t>(s.buffer));
    llvm::Value* index = expr(s.index);
    llvm::Value* v =
        convert(b_, expr(s.value), k_.exprs[static_cast<size_t>(s.value)].dtype, buf.dtype);
    llvm::Value* stored = to_storage(b_, v, buf.dtype);
    llvm::Value* addr = b_.CreateInBoundsGEP(storage_type(b_, buf.dtype),
                                             buffers_[static_cast<size_t>(s.buffer)], index);
    b_.CreateStore(stored, addr);
  }

  void accumulate(const Stmt& s) {
    DType t = k_.vars[static_cast<size_t>(s.var)].dtype;
    llvm::Value* v = expr(s.value);
    llvm::Value* acc = read_var(s.var);
    if (has_nan_flag(s.reduce, t)) return write_var(s.var, combine_flagged(s, acc, v));
    write_var(s.var, combine(s.reduce, t, acc, v, vector_depth_ > 0));
  }

  // Note [NaN flags]
  // Float max and min propagate NaN (lanes::reduce). llvm.maximum does that in one operation,
  // but x86 has no such instruction: it expands to a sign blend, a compare and two masked moves
  // in the loop-carried chain, which made a row max four times slower than a row sum. Instead
  // the accumulator never holds a NaN: each accumulate ORs "the operand is NaN" into a flag
  // beside it and combines with maxnum/minnum marked nnan nsz, one vmaxps/vminps, which the
  // vectorizer reduces in lanes like a sum (a NaN operand makes that lane poison, and the flag
  // then selects NaN over it); reading the accumulator gives NaN when the flag is set. Outside
  // Vector loops the combine skips NaN operands, keeping the first of two equal values. The
  // result is the same but for the NaN's payload (a canonical quiet NaN) and, in Vector loops,
  // the sign of a zero maximum (nsz: max(-0, +0) may be either).
  llvm::Value* combine_flagged(const Stmt& s, llvm::Value* acc, llvm::Value* v) {
    llvm::AllocaInst* flag = nan_flag(s.var);
    llvm::Value* nan = b_.CreateFCmpUNO(v, v);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), flag), nan), flag);
    bool max = s.reduce == ReduceOp::Max;
    if (vector_depth_ > 0) {
      auto id = max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
      auto* r = llvm::cast<llvm::Instruction>(b_.CreateBinaryIntrinsic(id, acc, v));
      llvm::FastMathFlags fmf;
      fmf.setNoNaNs();
      fmf.setNoSignedZeros();
      r->setFastMathFlags(fmf);
      return r;
    }
    llvm::Value* better = max ? b_.CreateFCmpOGT(v, acc) : b_.CreateFCmpOLT(v, acc);
    return b_.CreateSelect(better, v, acc);
  }

  llvm::Value* identity(ReduceOp op, DType t) {
    llvm::Type* ty = lane_type(b_, t);
    if (t == kBool) return b_.getInt1(op == ReduceOp::Prod || op == ReduceOp::Min);
    if (is_floating(t)) {
      double inf = std::numeric_limits<double>::infinity();
      switch (op) {
        case ReduceOp::Sum:
          return llvm::ConstantFP::get(ty, 0.0);
        case ReduceOp::Prod:
          return llvm::ConstantFP::get(ty, 1.0);
        case ReduceOp::Max:
          return llvm::ConstantFP::get(ty, -inf);
        case ReduceOp::Min:
          return llvm::ConstantFP::get(ty, inf);
      }
    }
    unsigned bits = ty->getIntegerBitWidth();
    switch (op) {
      case ReduceOp::Sum:
        return llvm::ConstantInt::get(ty, 0);
      case ReduceOp::Prod:
        return llvm::ConstantInt::get(ty, 1);
      case ReduceOp::Max:
        return llvm::ConstantInt::get(ctx_, llvm::APInt::getSignedMinValue(bits));
      case ReduceOp::Min:
        return llvm::ConstantInt::get(ctx_, llvm::APInt::getSignedMaxValue(bits));
    }
    return nullptr;
  }

  // acc `op` v as lanes::reduce computes it (float max and min: combine_flagged). In a Vector
  // loop a float sum or product may be reassociated (the loop's promise), which lets the
  // vectorizer keep partial sums.
  llvm::Value* combine(ReduceOp op, DType t, llvm::Value* acc, llvm::Value* v, bool in_vector) {
    if (t == kBool) {
      return op == ReduceOp::Sum || op == ReduceOp::Max ? b_.CreateOr(acc, v)
                                                        : b_.CreateAnd(acc, v);
    }
    if (is_floating(t)) {
      llvm::FastMathFlags fmf = b_.getFastMathFlags();
      if (in_vector) fmf.setAllowReassoc(true);
      switch (op) {
        case ReduceOp::Sum: {
          auto* r = llvm::cast<llvm::Instruction>(b_.CreateFAdd(acc, v));
          r->setFastMathFlags(fmf);
          return r;
        }
        case ReduceOp::Prod: {
          auto* r = llvm::cast<llvm::Instruction>(b_.CreateFMul(acc, v));
          r->setFastMathFlags(fmf);
          return r;
        }
        case ReduceOp::Max:
        case ReduceOp::Min:
          break;  // combine_flagged
      }
    }
    switch (op) {
      case ReduceOp::Sum:
        return b_.CreateAdd(acc, v);
      case ReduceOp::Prod:
        return b_.CreateMul(acc, v);
      case ReduceOp::Max:
        return b_.CreateSelect(b_.CreateICmpSGT(v, acc), v, acc);
      case ReduceOp::Min:
        return b_.CreateSelect(b_.CreateICmpSLT(v, acc), v, acc);
    }
    return acc;
  }

  // ---- expressions ----

  llvm::Value* expr(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    const kir::Expr& e = k_.exprs.at(static_cast<size_t>(id));
    llvm::Value* v = nullptr;
    switch (e.kind) {
      case ExprKind::Const:
        if (is_floating(e.dtype)) {
          v = llvm::ConstantFP::get(lane_type(b_, e.dtype), e.value);
        } else if (e.dtype == kBool) {
          v = b_.getInt1(e.ivalue != 0);
        } else {
          v = llvm::ConstantInt::get(lane_type(b_, e.dtype), static_cast<uint64_t>(e.ivalue), true);
        }
        break;
      case ExprKind::Var:
        v = read_value(e.var);
        break;
      case ExprKind::Load: {
        const kir::Buffer& buf = k_.buffers.at(static_cast<size_t>(e.buffer));
        llvm::Value* addr = b_.CreateInBoundsGEP(
            storage_type(b_, buf.dtype), buffers_[static_cast<size_t>(e.buffer)], expr(e.args[0]));
        v = from_storage(b_, b_.CreateLoad(storage_type(b_, buf.dtype), addr), buf.dtype);
        break;
      }
      case ExprKind::Unary: {
        auto op = static_cast<UnaryOp>(e.op);
        if (beyond_flag_ != nullptr && reduced_range_op(op, e.dtype)) {
          // The polynomial-only run (Note [Reduced-range LLVM loops]).
          auto [value, beyond] = emit_sin_cos_reduced(b_, op, expr(e.args[0]));
          llvm::Value* seen = b_.CreateLoad(b_.getInt1Ty(), beyond_flag_);
          b_.CreateStore(b_.CreateOr(seen, beyond), beyond_flag_);
          v = value;
        } else {
          v = emit_unary(b_, *module_, k_.name, op, dtype_of(e.args[0]), expr(e.args[0]));
        }
        break;
      }
      case ExprKind::Binary:
        v = binary(id, static_cast<BinaryOp>(e.op), dtype_of(e.args[0]), expr(e.args[0]),
                   expr(e.args[1]));
        break;
      case ExprKind::Select:
        v = b_.CreateSelect(expr(e.args[0]), expr(e.args[1]), expr(e.args[2]));
        break;
      case ExprKind::Cast:
        v = convert(b_, expr(e.args[0]), dtype_of(e.args[0]), e.dtype);
        break;
    }
    memo_.emplace(id, v);
    return v;
  }

  DType dtype_of(ExprId e) const { return k_.exprs[static_cast<size_t>(e)].dtype; }

  llvm::Value* binary(ExprId id, BinaryOp op, DType t, llvm::Value* x, llvm::Value* y) {
    if (t == kBool) return emit_bool_binary(b_, k_.name, op, x, y);
    if (is_floating(t)) return emit_float_binary(b_, *module_, k_.name, op, t, x, y);
    return binary_int(id, op, t, x, y);
  }

  llvm::Value* binary_int(ExprId id, BinaryOp op, DType t, llvm::Value* x, llvm::Value* y) {
    llvm::Type* ty = x->getType();
    llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
    llvm::Value* one = llvm::ConstantInt::get(ty, 1);
    llvm::Value* minus_one = llvm::ConstantInt::getSigned(ty, -1);
    switch (op) {
      case BinaryOp::Add:
        return b_.CreateAdd(x, y);
      case BinaryOp::Sub:
        return b_.CreateSub(x, y);
      case BinaryOp::Mul:
        return b_.CreateMul(x, y);
      case BinaryOp::Div:
      case BinaryOp::Rem: {
        // Division by zero is flagged (the launcher throws) and divides by 1; MIN / -1 wraps to
        // -x with remainder 0, as the interpreter computes them. sdiv sees neither.
        llvm::Value* is_zero = b_.CreateICmpEQ(y, zero);
        note_div_by_zero(is_zero, id);
        llvm::Value* is_m1 = b_.CreateICmpEQ(y, minus_one);
        llvm::Value* safe = b_.CreateSelect(b_.CreateOr(is_zero, is_m1), one, y);
        if (op == BinaryOp::Div)
          return b_.CreateSelect(is_m1, b_.CreateSub(zero, x), b_.CreateSDiv(x, safe));
        return b_.CreateSelect(b_.CreateOr(is_zero, is_m1), zero, b_.CreateSRem(x, safe));
      }
      case BinaryOp::Pow:
        return emit_int_pow(b_, *module_, t, x, y);
      case BinaryOp::Max:
        return b_.CreateSelect(b_.CreateICmpSGT(x, y), x, y);
      case BinaryOp::Min:
        return b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y);
      case BinaryOp::Eq:
        return b_.CreateICmpEQ(x, y);
      case BinaryOp::Ne:
        return b_.CreateICmpNE(x, y);
      case BinaryOp::Lt:
        return b_.CreateICmpSLT(x, y);
      case BinaryOp::Le:
        return b_.CreateICmpSLE(x, y);
      case BinaryOp::And:
      case BinaryOp::Or:
        break;
    }
    KILN_ERROR("llvm backend: kernel {}: binary '{}' on {} has no lowering", k_.name,
               kir::binary_op_name(op), dtype_name(t));
  }

  // Records a division by zero of expression `id` (when is_zero): the part's flag holds the
  // failing expression's id + 1, 0 while none failed (Note [LLVM kernel ABI]).
  void note_div_by_zero(llvm::Value* is_zero, ExprId id) {
    if (div_by_zero_ == nullptr) {
      llvm::BasicBlock& entry = fn_->getEntryBlock();
      alloca_builder_->SetInsertPoint(&entry, entry.getFirstInsertionPt());
      div_by_zero_ = alloca_builder_->CreateAlloca(b_.getInt32Ty(), nullptr, "div_by_zero");
      // Initialized right after the alloca: the entry block has no terminator yet when the
      // first division is emitted in a later block.
      alloca_builder_->SetInsertPoint(div_by_zero_->getNextNode());
      alloca_builder_->CreateStore(b_.getInt32(0), div_by_zero_);
    }
    llvm::Value* old = b_.CreateLoad(b_.getInt32Ty(), div_by_zero_);
    b_.CreateStore(b_.CreateSelect(is_zero, b_.getInt32(static_cast<uint32_t>(id + 1)), old),
                   div_by_zero_);
  }

  const kir::Kernel& k_;
  std::vector<VarId> sizes_;  // the size parameters, in launch order
  std::string symbol_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::unique_ptr<llvm::Module> module_;
  llvm::Function* fn_ = nullptr;
  std::unique_ptr<llvm::IRBuilder<>> alloca_builder_;
  std::vector<llvm::Value*> buffers_;
  llvm::Value* status_ = nullptr;
  std::unordered_map<VarId, llvm::AllocaInst*> vars_;
  std::unordered_map<VarId, llvm::AllocaInst*> nan_flags_;  // Note [NaN flags]
  unsigned vector_bits_;                                    // the host's vector register width
  std::unordered_map<const Stmt*, std::vector<RowPrefetch>>
      prefetch_before_;  // Note [Row prefetch]
  std::unordered_map<ExprId, llvm::Value*> memo_;
  std::vector<bool> streaming_;              // per buffer (Note [Streaming stores])
  llvm::AllocaInst* div_by_zero_ = nullptr;  // i32: failing expression id + 1
  // i1, while a loop runs its polynomial-only pass (Note [Reduced-range LLVM loops]).
  llvm::AllocaInst* beyond_flag_ = nullptr;
  int vector_depth_ = 0;
};

}  // namespace

std::unique_ptr<llvm::Module> emit_kernel(const kir::Kernel& k, const std::string& symbol,
                                          llvm::LLVMContext& ctx, unsigned vector_bits) {
  return Emitter(k, symbol, ctx, vector_bits).run();
}

}  // namespace kiln::codegen::llvm_backend
