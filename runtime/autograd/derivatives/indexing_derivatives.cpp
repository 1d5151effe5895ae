// Derivative formulas of the indexing family (Note [Gradient shapes] in derivative.h). Each
// gradient that scatters is an out-of-place scatter_add into zeros (never an in-place write
// into a view), so it is differentiable again; index tensors get no gradient.
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

using autograd::GradArgs;
using autograd::kSaveNone;
using autograd::save_bit;

// embedding: row indices[j] of the weight receives grad[j, :]; repeated indices add up.
std::vector<Tensor> embedding_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  const Shape& weight_sizes = args.input_sizes(0);
  const Tensor& indices = args.inputs[1];
  int64_t k = indices.numel(), dim = weight_sizes[1];
  Tensor g = args.grad().reshape({k, dim});
  Tensor rows = indices.reshape({k, 1}).expand({k, dim});
  return {scatter_add(zeros(weight_sizes, g.options()), 0, rows, g), Tensor()};
}

// index_select: position index[j] along the dim receives the gradient's slab j.
std::vector<Tensor> index_select_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  const Shape& sizes = args.input_sizes(0);
  const Tensor& g = args.grad();
  int64_t d =
      wrap_dim("index_select", args.attrs_as<DimAttrs>().dim, static_cast<int64_t>(sizes.size()));
  Shape along(sizes.size(), 1);
  along[static_cast<size_t>(d)] = args.inputs[1].numel();
  Tensor index = args.inputs[1].reshape(along).expand(g.sizes());
  return {scatter_add(zeros(sizes, g.options()), d, index, g), Tensor()};
}

// gather: the adjoint of out[..i..] = x[..index[..i..]..] is the scatter_add of the gradient.
std::vector<Tensor> gather_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  const Tensor& g = args.grad();
  int64_t dim = args.attrs_as<DimAttrs>().dim;
  return {scatter_add(zeros(args.input_sizes(0), g.options()), dim, args.inputs[1], g), Tensor()};
}

// scatter_add(self, index, src): self passes through; src element j went to the position
// index[j] names, so its gradient is the gather of the output gradient there. index may be
// smaller than src in any dim; src elements outside index's extent are unused and get 0, which
// slice_backward pads in, one dim at a time.
std::vector<Tensor> scatter_add_backward(const GradArgs& args) {
  std::vector<Tensor> out(3);
  const Tensor& g = args.grad();
  if (args.needs(0)) out[0] = g;
  if (args.needs(2)) {
    const Tensor& index = args.inputs[1];
    Tensor src_grad = gather(g, args.attrs_as<DimAttrs>().dim, index);
    const Shape& src_sizes = args.input_sizes(2);
    Shape padded = index.sizes();
    for (size_t d = 0; d < padded.size(); ++d) {
      if (padded[d] == src_sizes[d]) continue;
      padded[d] = src_sizes[d];
      src_grad = call_op1(KILN_OP("slice_backward"), {src_grad},
                          SliceBackwardAttrs{padded, static_cast<int64_t>(d), 0,
                                             index.size(static_cast<int64_t>(d)), 1});
    }
    out[2] = src_grad;
  }
  return out;
}

}  // namespace

void register_indexing_derivatives(OpTable& table) {
  // Each formula reads only the index input (input 1).
  table.set_derivative("embedding", embedding_backward, save_bit(1));
  table.set_derivative("index_select", index_select_backward, save_bit(1));
  table.set_derivative("gather", gather_backward, save_bit(1));
  table.set_derivative("scatter_add", scatter_add_backward, save_bit(1));
}

}  // namespace kiln
