// gradcheck: compares the gradients autograd computes with float64 central finite differences,
// element by element of the full Jacobian (PyTorch's torch.autograd.gradcheck).
#pragma once

#include <functional>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numerical| <= atol + rtol * |numerical|
  double rtol = 1e-3;
  bool raise_exception = true;  // throw kiln::Error describing the first mismatch
};

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Differentiates `fn` w.r.t. every input that requires grad (these must be float64) and checks
// each floating output that requires grad. Returns true when every entry matches.
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});

// Second order: gradcheck of the function (inputs, v) -> grad(fn(inputs), inputs, v) computed
// with create_graph, where v are fixed random float64 gradients for fn's outputs.
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options = {});

}  // namespace kiln::autograd
