// The input signature a compiled plan is specialized to, and how two signatures differ (for the
// recompile log).
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln::compile_detail {

// Note [Input signature]
// A plan is valid for inputs with the same dtypes, devices, sizes, strides and requires_grad as
// the inputs it was captured from, under the same grad mode: ops such as reshape choose what to
// record by layout (a view, or a copy), so strides are part of the key. Data never is.
//
// Note [Aliased inputs]
// Capture traces copies of the inputs, so a plan assumes its inputs do not share memory. Which
// inputs share a storage is part of the signature (as torch.compile guards on aliasing): a call
// with {a, a} gets its own plan, and when that function writes into an input, the plan runs
// eagerly, since an in-place write to one alias must be seen through the other.
struct TensorSignature {
  DType dtype = kFloat32;
  Device device;
  Shape sizes;
  Shape strides;
  bool requires_grad = false;
  bool defined = true;
  // The first earlier input that shares this input's storage, or -1 (Note [Aliased inputs]).
  int64_t shares_storage_with = -1;
  friend bool operator==(const TensorSignature&, const TensorSignature&) = default;
};

// Whether `a` and `b` agree in everything but their sizes and strides (Note [Symbolic plans]:
// what a symbolic plan and automatic dynamic shapes let vary).
bool same_but_geometry(const TensorSignature& a, const TensorSignature& b);

struct Signature {
  std::vector<TensorSignature> inputs;
  bool grad_mode = true;

  static Signature of(const std::vector<Tensor>& inputs);
  bool has_aliased_inputs() const;
  size_t hash() const;
  std::string str() const;  // "(f32[4, 3] requires_grad, i64[4]) grad_mode=on"
  friend bool operator==(const Signature&, const Signature&) = default;
};

// What changed from `before` to `after`, for KILN_LOGS=recompiles:
// "input 0: sizes [4, 3] -> [8, 3]; grad mode on -> off".
std::string describe_change(const Signature& before, const Signature& after);

}  // namespace kiln::compile_detail
