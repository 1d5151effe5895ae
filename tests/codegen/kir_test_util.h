// Helpers for the kernel-IR tests: statement constructors, and a one-loop pointwise kernel
// around a function of kir::Val operands.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/config.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/runtime/kernel_args.h"
#if KILN_WITH_LLVM
#include "kiln/codegen/llvm/llvm_backend.h"
#endif
#include "kiln/kiln.h"

#include "float_accuracy.h"

namespace kir_test {

namespace kir = kiln::kir;

// Index arithmetic shorthands: x + y, and x * c with a constant c.
inline kir::ExprId add(kir::Builder& b, kir::ExprId x, kir::ExprId y) {
  return b.binary(kir::BinaryOp::Add, x, y);
}
inline kir::ExprId mul(kir::Builder& b, kir::ExprId x, int64_t c) {
  return b.binary(kir::BinaryOp::Mul, x, b.iconstant(c));
}

// The statement constructors, unqualified in the tests: loop, store, let, accumulator,
// accumulate, if_.
using namespace kiln::kir::stmt;  // NOLINT(google-build-using-namespace)

using PointwiseFn = std::function<kir::Val(std::span<const kir::Val>)>;

// kernel NAME(%in0, ..., %out0 out) { vector for %i in 0..n { store %out0[%i] =
// f(to_compute(load %in0[%i], result), ...) } }: the inputs are converted as an eager kernel
// whose result dtype is `result` converts them, and f runs in result's compute dtype.
inline kir::Kernel pointwise_kernel(const std::string& name, const std::vector<kiln::DType>& ins,
                                    kiln::DType result, kiln::DType out, int64_t n,
                                    const PointwiseFn& f) {
  kir::Kernel k;
  k.name = name;
  kir::Builder b(k);
  std::vector<kir::BufferId> in_ids;
  for (size_t i = 0; i < ins.size(); ++i)
    in_ids.push_back(b.buffer("in" + std::to_string(i), ins[i], false, n));
  kir::BufferId o = b.buffer("out0", out, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);
  kir::ExprId index = b.var_ref(i);
  kir::ExprId value;
  {
    kir::MathScope scope(b, kir::compute_dtype(result));
    std::vector<kir::Val> args;
    for (kir::BufferId id : in_ids)
      args.push_back(kir::to_compute(kir::Val(b.load(id, index)), result));
    value = f(args).id();
  }
  k.body.push_back(loop(i, n, {store(o, index, value)}, kir::LoopKind::Vector));
  return k;
}

// The executors of kernel IR: the interpreter (the reference) and each compiled backend built
// in. Tests of kernel semantics run on every one of them (TEST_P over executors()).
enum class Executor { Interpreter, Llvm };

inline std::vector<Executor> executors() {
#if KILN_WITH_LLVM
  return {Executor::Interpreter, Executor::Llvm};
#else
  return {Executor::Interpreter};
#endif
}

inline std::string executor_name(const testing::TestParamInfo<Executor>& info) {
  return info.param == Executor::Interpreter ? "interpreter" : "llvm";
}

#if KILN_WITH_LLVM
// A compiled kernel run on tensors, bound as kir::run_kernel binds them.
inline void llvm_run_tensors(const kiln::codegen::LlvmKernel& compiled, const kir::Kernel& k,
                             std::span<const kiln::Tensor> args) {
  kiln::codegen::llvm_run(compiled, k, kir::bind_arguments(k, args, "llvm backend"));
}
#endif

// Runs `k` on `args` (bound as kir::run_kernel binds them) with executor `e`.
inline void run_on(Executor e, const kir::Kernel& k, std::span<const kiln::Tensor> args) {
#if KILN_WITH_LLVM
  if (e == Executor::Llvm) {
    kiln::codegen::LlvmCompileOptions o;
    o.disk_cache = false;  // hermetic: the cache has its own tests
    llvm_run_tensors(*kiln::codegen::llvm_compile(k, o), k, args);
    return;
  }
#endif
  (void)e;
  kir::run_kernel(k, args);
}

// Runs `k` on the inputs with executor `e`, writing a fresh output of `out_dtype` and shape {n}.
inline kiln::Tensor run_pointwise(const kir::Kernel& k, const std::vector<kiln::Tensor>& ins,
                                  kiln::DType out_dtype, Executor e = Executor::Interpreter) {
  int64_t n = k.buffers.back().extent;
  kiln::Tensor out = kiln::empty({n}, kiln::TensorOptions().dtype(out_dtype));
  std::vector<kiln::Tensor> args = ins;
  args.push_back(out);
  run_on(e, k, args);
  return out;
}

// The accuracy tests' ulp distance (0 when equal, for NaN against NaN and for 0 against -0).
using kiln_test::ulp_distance;

}  // namespace kir_test
