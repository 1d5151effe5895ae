// y = x^3 as a custom Function that is not declared traceable: the tracer cannot see into its
// backward, which reads the saved input (so replaying a stale Node would give wrong gradients).
// Shared by the tracer and compile suites' graph-break tests.
#pragma once

#include "kiln/kiln.h"

namespace kiln_test {

struct OpaqueCube : kiln::autograd::Function<OpaqueCube> {
  static kiln::Tensor forward(kiln::autograd::AutogradContext* ctx, const kiln::Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static kiln::autograd::variable_list backward(kiln::autograd::AutogradContext* ctx,
                                                kiln::autograd::variable_list grads) {
    kiln::Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * x * 3.0};
  }
};

}  // namespace kiln_test
