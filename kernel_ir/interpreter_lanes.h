// The kernel-IR interpreter's arithmetic: every operation applied to a batch of lanes (one value
// per iteration of an innermost loop), each a tight loop the compiler vectorizes. The math is
// the eager kernels' for the same dtype (kiln::math:: primitives, wrapping integers), so that the
// interpreter is the reference the compiled backends are tested against.
//
// Lane values are stored per dtype as: b8 -> uint8_t (0 or 1), u8, i8, i16 and i32 -> int32_t
// (a small integer is held as its value), i64 -> int64_t, f16, bf16 and f32 -> float (a 16-bit
// value is held exactly, as its float), f64 -> double.
#pragma once

#include <cstdint>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir::lanes {

inline constexpr int kMaxLanes = 256;
// Storage for one batch of any dtype's lanes (bytes: the lanes are objects of the lane type).
struct Buf {
  alignas(64) unsigned char slot[kMaxLanes * 8];
};

// n copies of a constant.
void fill_const(const Expr& e, void* out, int n);
// n copies of lane 0 of `in`.
void broadcast(DType t, const void* in, void* out, int n);
void copy(DType t, const void* in, void* out, int n);

// out[i] = buffer[index[i]] (base: the buffer's element 0, of dtype `buffer`).
void load(const char* base, DType buffer, const int64_t* index, void* out, int n);
// buffer[index[i]] = value[i] converted to the buffer's dtype, for the active lanes (mask null:
// all n), in lane order.
void store(char* base, DType buffer, const int64_t* index, DType value_dtype, const void* value,
           int n, const uint8_t* mask);

// The conversion of a static_cast between the C++ types. Floating values outside an integer
// dtype's range, NaN included, become its minimum (x86's cvtt* result, which the eager kernels
// get), where C++ leaves the conversion undefined.
void cast(DType from, const void* in, DType to, void* out, int n);
void unary(UnaryOp op, DType t, const void* a, void* out, int n);
// Returns the first active lane whose integer divisor is zero (the operation is not done), or
// -1. Inactive lanes divide by 1 instead.
int binary(BinaryOp op, DType t, const void* a, const void* b, void* out, int n,
           const uint8_t* mask);
void select(DType t, const uint8_t* cond, const void* a, const void* b, void* out, int n);

// n lanes of op's identity.
void identity(ReduceOp op, DType t, void* out, int n);
// acc[i] = op(acc[i], v[i]) for the active lanes.
void combine(ReduceOp op, DType t, void* acc, const void* v, int n, const uint8_t* mask);
// acc[0] = op(... op(op(acc[0], v[0]), v[1]) ..., v[n-1]) over the active lanes, in order.
void fold(ReduceOp op, DType t, void* acc, const void* v, int n, const uint8_t* mask);

}  // namespace kiln::kir::lanes
