// Derivative formulas of the shape family (Note [Gradient shapes] in derivative.h): the views
// (view, expand, transpose, permute, squeeze, unsqueeze, slice, select), the out-of-place
// gradients of slice and select, data movement (copy_, fill_, convert, clone) and cat.
#include <optional>

#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;

// A view's gradient reshaped back to the input's sizes. view's and squeeze's outputs hold the
// input's elements in the same row-major order, so a reshape is their exact inverse.
std::vector<Tensor> reshape_back(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  return {args.grad().reshape_symint(args.input_sym_sizes(0))};
}

// expand: the gradient has the expanded shape; the engine sums it down to the input's.
std::vector<Tensor> expand_backward(const GradArgs& args) {
  return {args.needs(0) ? args.grad() : Tensor()};
}

std::vector<Tensor> transpose_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<TransposeAttrs>();
  return {args.grad().transpose(a.dim0, a.dim1)};
}

std::vector<Tensor> permute_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const Shape& dims = args.attrs_as<DimsAttrs>().dims;
  auto nd = static_cast<int64_t>(dims.size());
  Shape inverse(dims.size());
  for (int64_t i = 0; i < nd; ++i)
    inverse[static_cast<size_t>(wrap_dim("permute", dims[static_cast<size_t>(i)], nd))] = i;
  return {args.grad().permute(std::move(inverse))};
}

std::vector<Tensor> unsqueeze_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  // The dim was wrapped against the output's rank, which is the gradient's.
  return {args.grad().squeeze(args.attrs_as<DimAttrs>().dim)};
}

std::vector<Tensor> slice_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SliceAttrs>();
  return {call_op1(KILN_OP("slice_backward"), {args.grad()},
                   SliceBackwardAttrs{args.input_sym_sizes(0), a.dim, a.start, a.end, a.step})};
}

std::vector<Tensor> select_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SelectAttrs>();
  return {call_op1(KILN_OP("select_backward"), {args.grad()},
                   SelectBackwardAttrs{args.input_sym_sizes(0), a.dim, a.index})};
}

// slice_backward is linear in its input: its adjoint picks the same region out again.
std::vector<Tensor> slice_backward_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SliceBackwardAttrs>();
  return {args.grad().slice_symint(a.dim, a.start, a.end, a.step)};
}

std::vector<Tensor> select_backward_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor()};
  const auto& a = args.attrs_as<SelectBackwardAttrs>();
  return {args.grad().select(a.dim, a.index)};
}

// copy_: self's old values are overwritten, so they get no gradient; src gets the gradient of
// the destination (the engine sums it down over the broadcast and casts it to src's dtype).
std::vector<Tensor> copy_backward(const GradArgs& args) {
  return {Tensor(), args.needs(1) ? args.grad() : Tensor()};
}

// fill_: the result does not depend on self's old values.
std::vector<Tensor> fill_backward(const GradArgs&) {
  return {Tensor()};
}

// convert and clone: the identity on values (the engine casts the gradient to the input's
// dtype for convert).
std::vector<Tensor> identity_backward(const GradArgs& args) {
  return {args.needs(0) ? args.grad() : Tensor()};
}

// cat: each input's gradient is its slab of the output's gradient along the dim, sliced
// between the sums of the sizes before it and through it. Over symbols these bounds are
// expressions (Note [Symbolic slice bounds]) that lie within the gradient for every value of
// the symbols, so the slices assume nothing and read no size.
std::vector<Tensor> cat_backward(const GradArgs& args) {
  const Tensor& g = args.grad();
  int64_t d = wrap_dim("cat", args.attrs_as<DimAttrs>().dim, g.dim());
  std::vector<Tensor> out(args.input_meta.size());
  SymInt offset = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    SymInt next = offset + args.input_sym_sizes(i)[static_cast<size_t>(d)];
    if (args.needs(i)) out[i] = g.slice_symint(d, offset, next);
    offset = next;
  }
  return out;
}

}  // namespace

void register_shape_derivatives(OpTable& table) {
  // Every formula here reads only the gradient, the attributes and the inputs' metadata.
  table.set_derivative("view", reshape_back);
  table.set_derivative("squeeze", reshape_back);
  table.set_derivative("expand", expand_backward);
  table.set_derivative("transpose", transpose_backward);
  table.set_derivative("permute", permute_backward);
  table.set_derivative("unsqueeze", unsqueeze_backward);
  table.set_derivative("slice", slice_backward);
  table.set_derivative("select", select_backward);
  table.set_derivative("slice_backward", slice_backward_backward);
  table.set_derivative("select_backward", select_backward_backward);
  table.set_derivative("copy_", copy_backward);
  table.set_derivative("fill_", fill_backward);
  table.set_derivative("convert", identity_backward);
  table.set_derivative("clone", identity_backward);
  table.set_derivative("cat", cat_backward);
}

}  // namespace kiln
