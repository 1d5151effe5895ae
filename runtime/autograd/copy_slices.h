// CopySlices: the backward of an in-place op on a view (libtorch's CopySlices).
//
// Note [In-place ops on views]
// `v = b.slice(...); v.mul_(w)` writes into b's storage, so the op changes b: b's new value is
// its old one with the view's elements replaced by the op's result. The autograd kernel records
// the op's own Node (`fn`, whose gradient for self is the view-shaped gradient of the view's
// old value), then makes b's history a CopySlices Node wrapping fn, whose next edges are b's
// old history and fn's edges for the op's other inputs. The view itself then gets its history
// again from b, by replaying its view ops (Note [Views in autograd] in autograd_meta.h).
//
// Backward, for the gradient g of b's new value:
//   fn's inputs:   V(g), the view ops of the chain from b to v replayed on g
//   b's old value: where(E(ones), E(r0), g), with r0 fn's gradient for self and E the adjoint of
//                  the view chain (each view op's own derivative formula, which puts a
//                  view-shaped tensor into zeros of the source's shape), so the view's elements
//                  take r0 and the others keep g
//   other inputs:  fn's other gradients
// Every step is a dispatcher op with no mutation, so the backward is traceable and
// differentiable again (create_graph), and compile records it like any other formula.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kiln/runtime/autograd/input_metadata.h"
#include "kiln/runtime/autograd/node.h"

namespace kiln {
struct OpDef;
}

namespace kiln::autograd {

// One view op of a chain: the op, its attributes, and the metadata of the tensor it viewed.
struct ViewStep {
  const OpDef* op = nullptr;
  std::shared_ptr<void> attrs;
  InputMetadata source;
};

// The tensor a recorded view's chain starts from (not itself a recorded view) and the view ops
// from it to `view`, outermost last.
struct ViewChain {
  Tensor base;
  std::vector<ViewStep> steps;
};
ViewChain view_chain(const Tensor& view);

// The chain's view ops applied to `x` (a tensor of the base's shape).
Tensor apply_view_chain(const ViewChain& chain, const Tensor& x);
// The adjoint of the chain: `x` (of the view's shape) placed into zeros of the base's shape,
// through each view op's derivative formula.
Tensor view_chain_adjoint(const std::vector<ViewStep>& steps, Tensor x);
// The base's value after its view (of `chain`) took `view_value`: view_value at the view's
// elements, `base_value` elsewhere. Dispatcher ops only, so traces record it.
Tensor merge_into_base(const std::vector<ViewStep>& steps, const Tensor& view_value,
                       const Tensor& base_value);

// Refuses an in-place write into `self` by `op_name` where libtorch does, in its wording: a leaf
// that requires grad, a view made in no_grad mode, an expanded view, a view of a leaf that
// requires grad. The Autograd kernel and custom Functions' mark_dirty share it.
void check_in_place(std::string_view op_name, const Tensor& self);

class CopySlices : public Node {
 public:
  // `fn` is the in-place op's Node, whose next edge `view_input` (the one for the view it
  // modified: self, edge 0, for a table op) must already be the base's gradient edge.
  CopySlices(const Tensor& base, ViewChain chain, std::shared_ptr<Node> fn, size_t view_input = 0);
  std::string name() const override { return "CopySlices"; }
  bool is_traceable() override { return fn_->is_traceable(); }
  void release_variables() override { fn_->release_variables(); }
  void will_release_variables() override { fn_->will_release_variables(); }
  const std::shared_ptr<Node>& fn() const { return fn_; }

 protected:
  variable_list apply(variable_list&& grads) override;

 private:
  InputMetadata base_;
  ViewChain chain_;  // its base is not held: steps alone describe the geometry
  std::shared_ptr<Node> fn_;
  size_t view_input_ = 0;
};

}  // namespace kiln::autograd
