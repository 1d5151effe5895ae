// The dispatcher: picks the kernel for a call from the op's kernels and the call's key set
// (Note [Dispatch key order]), and runs the structured backend path shared by all ops:
// shape and dtype rules -> allocate (or alias, for views and in-place ops) -> device kernel.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "kiln/runtime/op_def.h"

namespace kiln {

std::vector<Tensor> call_op(const OpDef& op, std::span<const Tensor> inputs, const void* attrs);

template <class Attrs>
Tensor call_op1(const OpDef& op, std::initializer_list<Tensor> inputs, const Attrs& attrs) {
  return std::move(call_op(op, std::span<const Tensor>(inputs.begin(), inputs.size()), &attrs)[0]);
}

// The keys a call would dispatch on (before the thread-local include/exclude sets).
DispatchKeySet call_key_set(const OpDef& op, std::span<const Tensor> inputs, const void* attrs);

// The backend part of a call, without wrapper keys: rules, allocation, device kernel. Meta
// tensors stop after allocation.
std::vector<Tensor> run_backend(const OpDef& op, DispatchKey backend,
                                std::span<const Tensor> inputs, const void* attrs);

// Allocation used by the backend path and factories.
Tensor empty_tensor(const Shape& sizes, DType dtype, Device device);

}  // namespace kiln
