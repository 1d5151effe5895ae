// OpDef: one entry of the op table (DESIGN.md principle 1). Every layer reads it: the
// dispatcher (kernels per key), the Meta backend and the IR verifier (shape and dtype rules),
// autograd (derivative, in its issue), the tracer and fusion (flags, attributes).
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/sym_int.h"
#include "kiln/runtime/attrs.h"
#include "kiln/runtime/autograd/derivative.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/tensor.h"

namespace kiln {

namespace kir {
class Val;
struct Kernel;
}  // namespace kir

enum OpFlag : uint32_t {
  kPointwise = 1u << 0,
  kReduction = 1u << 1,
  kView = 1u << 2,    // output 0.. alias input 0's storage with the shape rule's geometry
  kRandom = 1u << 3,  // reads the generator state through its seed/offset attributes
  kRecomputable = 1u << 4,
  kNonTraceable = 1u << 5,
  kInPlace = 1u << 6,  // output 0 is input 0, modified; bumps its version counter
  kFactory = 1u << 7,  // no tensor inputs; device and dtype come from the attributes
  kNonDifferentiable = 1u << 8,
  // eq/ne/lt/le/gt/ge of two tensors: the operands are compared in result_type, where a zero-dim
  // operand ranks below a dimensioned one, so kernels built from the expression convert them first
  kTensorComparison = 1u << 9,
  // A helper other ops' derivatives call (gelu_backward, slice_backward, ...): callable through
  // kiln.ops in Python, but not a public function or Tensor method there.
  kInternal = 1u << 10,
};

// What a shape or dtype rule sees of an input: enough for Meta tensors and IR types alike.
struct MetaRef {
  ShapeRef sizes;
  ShapeRef strides;
  int64_t storage_offset = 0;
  DType dtype = kFloat32;
  Device device;

  static MetaRef of(const Tensor& t) {
    const TensorImpl* i = t.impl();
    return {i->sizes(), i->strides(), i->storage_offset(), i->dtype(), i->device()};
  }
};

// One output's geometry. For a new buffer `strides` is empty (contiguous); for a view it holds
// the view's strides and offset into input 0's storage.
struct OutputGeometry {
  Shape sizes;
  Shape strides;
  int64_t storage_offset = 0;
};

// The same for graphs with symbolic sizes (Note [Symbolic sizes], base/sym_int.h).
struct SymMetaRef {
  std::span<const SymInt> sizes;
  std::span<const SymInt> strides;
  SymInt storage_offset = 0;
  DType dtype = kFloat32;
  Device device;
};
struct SymOutputGeometry {
  SymShape sizes;
  SymShape strides;
  SymInt storage_offset = 0;
};

struct OpDef;
using ShapeRule = std::vector<OutputGeometry> (*)(const OpDef& op, std::span<const MetaRef> inputs,
                                                  const void* attrs);
using SymShapeRule = std::vector<SymOutputGeometry> (*)(const OpDef& op,
                                                        std::span<const SymMetaRef> inputs,
                                                        const void* attrs);
using DTypeRule = DType (*)(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs,
                            size_t output_index);
// A device kernel writes the outputs that the rules describe (already allocated).
using ComputeKernel = void (*)(const OpDef& op, std::span<const Tensor> outputs,
                               std::span<const Tensor> inputs, const void* attrs);
// A boxed kernel takes the whole call; wrapper keys (Tracer, Autograd) register these.
using BoxedKernel = std::vector<Tensor> (*)(const OpDef& op, std::span<const Tensor> inputs,
                                            const void* attrs);
// Pointwise ops: the op's scalar math as a kernel-IR expression (kernel_ir/kernel_ir.h),
// built from the same math template the eager kernel instantiates. `inputs` are the operands as
// loaded (each in its tensor's dtype) and `result` is the output's dtype; the expression converts
// the operands as the eager kernel does and returns the value in result's compute dtype (Bool for
// comparisons and logical ops), which the caller converts to `result` when it stores it.
using PointwiseExpr = kir::Val (*)(const OpDef& op, std::span<const kir::Val> inputs,
                                   const void* attrs, DType result);
// Row ops (softmax, log_softmax, layer_norm): the op as kernel IR over rows of runtime length,
// for inputs of `dtype` (Note [Row programs] in runtime/kernels/row_programs.cpp).
using RowProgram = kir::Kernel (*)(const OpDef& op, DType dtype, const void* attrs);
// For factories: the device named by the attributes.
using AttrDevice = Device (*)(const void* attrs);

struct OpDef {
  std::string name;
  std::vector<std::string> input_names;  // the schema's tensor inputs
  bool variadic = false;                 // takes any number of inputs (cat, stack)
  // With `variadic`: the last of input_names stands for any number of tensors after the others
  // (index's indices, Note [Advanced index schema]) instead of optional trailing inputs.
  bool variadic_list_tail = false;
  // The order of the arguments when called positionally from Python: the names of tensor
  // inputs and attribute fields. Empty: the tensor inputs, then the attribute fields in their
  // declaration order. Set where torch orders them otherwise (index_select(self, dim, index)).
  std::vector<std::string> python_order;
  // The most outputs one call returns (max and min over a dim: values and indices). Read by the
  // Python binding for its type stubs.
  uint32_t max_outputs = 1;
  uint32_t flags = 0;
  const AttrVTable* attrs = nullptr;
  std::string attrs_type;  // the attribute struct's name, for messages and the IR
  ShapeRule shape = nullptr;
  // `shape` over symbolic sizes, for graphs whose sizes are symbols (Note [Symbolic sizes]):
  // both instantiate one rule template, so they cannot disagree. Null where an op's rule has
  // not been written over symbols yet; the IR verifier then rejects a symbolic input.
  SymShapeRule sym_shape = nullptr;
  DTypeRule dtype = nullptr;
  AttrDevice attr_device = nullptr;
  PointwiseExpr expr = nullptr;                           // set for every fusible pointwise op
  RowProgram row_program = nullptr;                       // set for the row ops
  std::array<ComputeKernel, kNumDispatchKeys> compute{};  // per backend key
  std::array<BoxedKernel, kNumDispatchKeys> boxed{};      // per key; overrides compute

  // Autograd (runtime/autograd/derivative.h). Every op has a derivative or kNonDifferentiable;
  // an in-place op uses its out-of-place twin's formula. The masks name the forward inputs and
  // outputs the formula reads, which the backward Node saves.
  autograd::DerivativeFn derivative = nullptr;
  uint32_t save_inputs = autograd::kSaveNone;
  uint32_t save_outputs = autograd::kSaveNone;

  bool has(OpFlag f) const { return (flags & f) != 0; }
  std::string attrs_str(const void* a) const { return attrs->print(a); }
};

}  // namespace kiln
