// Derivative formulas of the indexing family, advanced indexing and masked_select (Note
// [Gradient shapes] in derivative.h). Each gradient that scatters is an out-of-place
// scatter_add or index_put into zeros (never an in-place write into a view), so it is
// differentiable again; index tensors get no gradient.
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/advanced_index.h"
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
  // Sizes over symbols (Note [Symbolic saved sizes]): a batch of indices stays symbolic.
  SymShape weight_sizes = args.input_sym_sizes(0);
  const Tensor& indices = args.inputs[1];
  SymInt k = indices.sym_numel(), dim = weight_sizes[1];
  Tensor g = args.grad().reshape_symint({k, dim});
  Tensor rows = indices.reshape_symint({k, 1}).expand_symint({k, dim});
  return {scatter_add(full_symint(weight_sizes, 0, g.options()), 0, rows, g), Tensor()};
}

// index_select: position index[j] along the dim receives the gradient's slab j.
std::vector<Tensor> index_select_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  SymShape sizes = args.input_sym_sizes(0);
  const Tensor& g = args.grad();
  int64_t d =
      wrap_dim("index_select", args.attrs_as<DimAttrs>().dim, static_cast<int64_t>(sizes.size()));
  SymShape along(sizes.size(), 1);
  along[static_cast<size_t>(d)] = args.inputs[1].sym_numel();
  Tensor index = args.inputs[1].reshape_symint(along).expand_symint(g.sym_sizes());
  return {scatter_add(full_symint(sizes, 0, g.options()), d, index, g), Tensor()};
}

// gather: the adjoint of out[..i..] = x[..index[..i..]..] is the scatter_add of the gradient.
std::vector<Tensor> gather_backward(const GradArgs& args) {
  if (!args.needs(0)) return {Tensor(), Tensor()};
  const Tensor& g = args.grad();
  int64_t dim = args.attrs_as<DimAttrs>().dim;
  return {scatter_add(full_symint(args.input_sym_sizes(0), 0, g.options()), dim, args.inputs[1], g),
          Tensor()};
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
    // Sizes over symbols (Note [Symbolic saved sizes]): where index and src have the same
    // size as expressions nothing is padded and no size is read. Elsewhere the pad's bound is
    // index's size: an integer as it is, and a symbolic one read as an integer.
    SymShape src_sizes = args.input_sym_sizes(2);
    SymShape padded = index.sym_sizes();
    for (size_t d = 0; d < padded.size(); ++d) {
      if (padded[d] == src_sizes[d]) continue;
      auto dim = static_cast<int64_t>(d);
      std::optional<int64_t> extent = padded[d].maybe_int();
      if (!extent) {
        if (index.size(dim) == args.input_sizes(2)[d]) continue;
        extent = index.size(dim);
      }
      padded[d] = src_sizes[d];
      src_grad = call_op1(KILN_OP("slice_backward"), {src_grad},
                          SliceBackwardAttrs{padded, dim, 0, *extent, 1});
    }
    out[2] = src_grad;
  }
  return out;
}

// index(self, i_0, ...): the adjoint of a gather through the index tensors is their scatter;
// duplicate positions add up, hence accumulate.
std::vector<Tensor> index_backward(const GradArgs& args) {
  std::vector<Tensor> out(args.inputs.size());
  if (!args.needs(0)) return out;
  const Tensor& g = args.grad();
  // Zeros of self's sizes over symbols (Note [Symbolic saved sizes]).
  std::vector<Tensor> in{full_symint(args.input_sym_sizes(0), 0, g.options()), g};
  in.insert(in.end(), args.inputs.begin() + 1, args.inputs.end());
  IndexPutAttrs a{args.attrs_as<IndexAttrs>().dims, true};
  out[0] = call_op(KILN_OP("index_put"), in, &a)[0];
  return out;
}

// index_put(self, values, i_0, ...): self's gradient is zero where values were written and
// passes elsewhere (also with accumulate, which adds to self); values' is the gradient at the
// indexed positions, whose broadcast the engine sums down to values' shape.
std::vector<Tensor> index_put_backward(const GradArgs& args) {
  std::vector<Tensor> out(args.inputs.size());
  const Tensor& g = args.grad();
  const Shape& dims = args.attrs_as<IndexPutAttrs>().dims;
  std::span<const Tensor> indices = args.inputs.subspan(2);
  if (args.needs(0) && args.attrs_as<IndexPutAttrs>().accumulate) {
    out[0] = g;
  } else if (args.needs(0)) {
    std::vector<Tensor> in{g, zeros({}, g.options())};
    in.insert(in.end(), indices.begin(), indices.end());
    IndexPutAttrs a{dims, false};
    out[0] = call_op(KILN_OP("index_put"), in, &a)[0];
  }
  if (args.needs(1)) {
    std::vector<Tensor> in{g};
    in.insert(in.end(), indices.begin(), indices.end());
    IndexAttrs a{dims};
    out[1] = call_op(KILN_OP("index"), in, &a)[0];
  }
  return out;
}

// masked_select(self, mask): the selected elements' gradients go back to the positions where
// the (broadcast) mask is true, zeros elsewhere; the engine sums a broadcast self down.
std::vector<Tensor> masked_select_backward(const GradArgs& args) {
  std::vector<Tensor> out(2);
  if (!args.needs(0)) return out;
  const Tensor& g = args.grad();
  const Tensor& mask = args.inputs[1];
  Shape b = broadcast_shapes("masked_select", args.input_sizes(0), mask.sizes());
  // Flat, so that a 0-dim mask (a 0-dim bool index is refused) works as any other.
  Tensor flat_mask = mask.expand(b).reshape({-1});
  out[0] = index_put(zeros({shape_numel(b)}, g.options()), {flat_mask}, g, true).reshape(b);
  return out;
}

}  // namespace

void register_indexing_derivatives(OpTable& table) {
  // Each formula reads only the index input (input 1).
  table.set_derivative("embedding", embedding_backward, save_bit(1));
  table.set_derivative("index_select", index_select_backward, save_bit(1));
  table.set_derivative("gather", gather_backward, save_bit(1));
  table.set_derivative("scatter_add", scatter_add_backward, save_bit(1));
  // The index tensors: every input after self (index), after self and values (index_put).
  table.set_derivative("index", index_backward, ~save_bit(0));
  table.set_derivative("index_put", index_put_backward, ~(save_bit(0) | save_bit(1)));
  table.set_derivative("index_put_", index_put_backward, ~(save_bit(0) | save_bit(1)));
  table.set_derivative("masked_select", masked_select_backward, save_bit(1));
}

}  // namespace kiln
