// torch.optim.SGD: stochastic gradient descent with optional momentum, dampening, Nesterov
// momentum and L2 weight decay, with torch's defaults.
#pragma once

#include <optional>
#include <vector>

#include "kiln/frontend/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions {
  explicit SGDOptions(double lr = 1e-3) : lr_(lr) {}
  KILN_OPTIM_ARG(double, lr);
  KILN_OPTIM_ARG(double, momentum) = 0;
  KILN_OPTIM_ARG(double, dampening) = 0;
  KILN_OPTIM_ARG(double, weight_decay) = 0;
  KILN_OPTIM_ARG(bool, nesterov) = false;
  // Unset: the compiled multi-tensor kernel where it applies, tensor ops elsewhere; true: the
  // kernel or an error saying why not; false: tensor ops.
  KILN_OPTIM_ARG(std::optional<bool>, fused);
};

class SGD final : public Optimizer {
 public:
  // Throws kiln::Error for a negative learning rate, momentum or weight decay, and for Nesterov
  // without momentum or with dampening (torch's checks).
  explicit SGD(std::vector<Tensor> params, SGDOptions options = SGDOptions());
  void step() override;
  double lr() const override { return options_.lr(); }
  void set_lr(double lr) override;
  const SGDOptions& options() const { return options_; }

 private:
  std::shared_ptr<const detail::MultiTensorKernel> build_kernel(DType dtype) const override;
  SGDOptions options_;
};

}  // namespace kiln::optim
