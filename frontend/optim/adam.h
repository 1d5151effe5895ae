// torch.optim.Adam and torch.optim.AdamW, with torch's defaults. Adam's weight decay is an L2
// term added to the gradient; AdamW's decays the parameter itself (decoupled weight decay).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "kiln/frontend/optim/optimizer.h"

namespace kiln::optim {

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  KILN_OPTIM_ARG(double, lr);
  KILN_OPTIM_ARG(double, beta1) = 0.9;
  KILN_OPTIM_ARG(double, beta2) = 0.999;
  KILN_OPTIM_ARG(double, eps) = 1e-8;
  KILN_OPTIM_ARG(double, weight_decay) = 0;
  // As SGDOptions::fused.
  KILN_OPTIM_ARG(std::optional<bool>, fused);

 public:
  AdamOptions& betas(std::pair<double, double> b) { return beta1(b.first).beta2(b.second); }
};

// AdamW's options: Adam's, with weight_decay 1e-2 by default (torch's). The setters return
// AdamOptions&, which AdamW takes.
struct AdamWOptions : AdamOptions {
  explicit AdamWOptions(double lr = 1e-3) : AdamOptions(lr) { weight_decay(1e-2); }
};

class Adam : public Optimizer {
 public:
  // Throws kiln::Error for a negative learning rate, eps or weight decay, or a beta outside
  // [0, 1) (torch's checks).
  explicit Adam(std::vector<Tensor> params, AdamOptions options = AdamOptions());
  void step() override;
  double lr() const override { return options_.lr(); }
  void set_lr(double lr) override;
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, std::string name);

 private:
  std::shared_ptr<const detail::MultiTensorKernel> build_kernel(DType dtype) const override;
  AdamOptions options_;
  bool decoupled_;
};

class AdamW final : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamOptions options = AdamWOptions())
      : Adam(std::move(params), options, true, "AdamW") {}
};

}  // namespace kiln::optim
