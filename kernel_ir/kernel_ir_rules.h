// The typing rules of kernel-IR expressions (Note [Kernel IR]), shared by the Builder, which
// checks each expression as it is added, and the verifier, which checks whole kernels that may
// have been assembled or edited by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

// Note [Kernel IR dtypes]
// Expressions compute in Bool, Int32, Int64, Float32 and Float64 (the eager kernels' compute
// types). Float16, BFloat16, UInt8, Int8 and Int16 values exist only as loads and casts: a Load
// from such a buffer or a Cast to such a dtype, whose value is read by a Cast (to_compute) or
// written by a Store. Constants, variables and arithmetic are never of these dtypes: the half
// types compute in f32 and the small integers in i32 (compute_dtype), and a Cast to a small
// integer wraps (two's complement) as the eager CPU kernels' narrowing stores do (Note [Small
// integer dtypes] in base/dtype.h).
bool is_compute_dtype(DType t);

// How many of Expr::args an expression of this kind uses (the rest are ignored); -1 for a value
// outside the enum.
int expr_arity(ExprKind kind);

// What is wrong with expression `e`, which has (or is about to get) id `self` in kernel `k`;
// empty when nothing is. Operands must have smaller ids, so the arena is acyclic.
std::string expr_problem(const Kernel& k, ExprId self, const Expr& e);

// Whether expression `e` reads variable `v`.
bool reads_var(const Kernel& k, ExprId e, VarId v);

// The coefficient c of an index e = c * v + (terms without v), or nullopt when e is not of that
// form. A nonzero c means distinct iterations of loop v touch distinct elements.
std::optional<int64_t> affine_coefficient(const Kernel& k, ExprId e, VarId v);

}  // namespace kiln::kir
