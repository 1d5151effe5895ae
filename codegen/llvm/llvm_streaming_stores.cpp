#include "kiln/codegen/llvm/llvm_streaming_stores.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "kiln/base/dtype.h"

namespace kiln::codegen::llvm_backend {

std::vector<bool> streaming_buffers(const kir::Kernel& k) {
  std::vector<bool> streaming(k.buffers.size(), false);
  if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86()) return streaming;
  std::vector<bool> loaded(k.buffers.size(), false);
  for (const kir::Expr& e : k.exprs)
    if (e.kind == kir::ExprKind::Load) loaded[static_cast<size_t>(e.buffer)] = true;
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const kir::Buffer& b = k.buffers[i];
    streaming[i] = b.output && !loaded[i] && b.extent != kir::kRuntimeExtent &&
                   b.extent * static_cast<int64_t>(element_size(b.dtype)) >= kStreamingBytes;
  }
  return streaming;
}

void mark_streaming_stores(llvm::Module& m) {
  if (m.getModuleFlag(kStreamingFlag) == nullptr) return;
  llvm::MDNode* one =
      llvm::MDNode::get(m.getContext(), llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                            llvm::Type::getInt32Ty(m.getContext()), 1)));
  const llvm::DataLayout& dl = m.getDataLayout();
  for (llvm::Function& f : m) {
    for (llvm::BasicBlock& bb : f) {
      for (llvm::Instruction& inst : bb) {
        auto* st = llvm::dyn_cast<llvm::StoreInst>(&inst);
        if (st == nullptr || !st->getValueOperand()->getType()->isVectorTy()) continue;
        uint64_t bytes = dl.getTypeStoreSize(st->getValueOperand()->getType());
        if (bytes < 16 || st->getAlign().value() < bytes) continue;
        if (llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(st->getPointerOperand())))
          continue;
        st->setMetadata(llvm::LLVMContext::MD_nontemporal, one);
      }
    }
  }
}

}  // namespace kiln::codegen::llvm_backend
