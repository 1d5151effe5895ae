#include "kiln/frontend/optim/adam.h"

#include <cmath>
#include <utility>

#include "kiln/base/error.h"
#include "kiln/base/optimizer_math.h"
#include "kiln/frontend/optim/multi_tensor_kernel.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::optim {

namespace {

// The compiled kernel's scalar row, from the learning rate and the parameter's step count.
enum AdamColumn { kStepSize, kInvBiasCorrection2Sqrt, kDecay, kAdamColumns };

struct StepScalars {
  double step_size, inv_bias_correction2_sqrt, decay;
};

StepScalars step_scalars(const AdamOptions& o, int64_t step) {
  auto t = static_cast<double>(step);
  double bias_correction1 = 1 - std::pow(o.beta1(), t);
  double bias_correction2 = 1 - std::pow(o.beta2(), t);
  return {o.lr() / bias_correction1, 1 / std::sqrt(bias_correction2),
          1 - o.lr() * o.weight_decay()};
}

template <class S>
optim_math::AdamScalars<S> scalars(const AdamOptions& o, bool decoupled, S step_size,
                                   S inv_bias_correction2_sqrt, S decay) {
  return {S(1 - o.beta1()),      S(o.beta2()), S(1 - o.beta2()),          S(o.eps()),
          S(o.weight_decay()),   step_size,    inv_bias_correction2_sqrt, decay,
          o.weight_decay() != 0, decoupled};
}

void check_lr(const std::string& name, double lr) {
  KILN_CHECK(lr >= 0, "{}: Invalid learning rate: {}", name, lr);
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::move(params), std::move(options), false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, std::string name)
    : Optimizer(std::move(params), name), options_(std::move(options)), decoupled_(decoupled) {
  check_lr(name, options_.lr());
  KILN_CHECK(options_.eps() >= 0, "{}: Invalid epsilon value: {}", name, options_.eps());
  KILN_CHECK(options_.beta1() >= 0 && options_.beta1() < 1,
             "{}: Invalid beta parameter at index 0: {}", name, options_.beta1());
  KILN_CHECK(options_.beta2() >= 0 && options_.beta2() < 1,
             "{}: Invalid beta parameter at index 1: {}", name, options_.beta2());
  KILN_CHECK(options_.weight_decay() >= 0, "{}: Invalid weight_decay value: {}", name,
             options_.weight_decay());
}

void Adam::set_lr(double lr) {
  check_lr(this->name(), lr);
  options_.lr(lr);
}

std::shared_ptr<const detail::MultiTensorKernel> Adam::build_kernel(DType dtype) const {
  const AdamOptions o = options_;
  const bool decoupled = decoupled_;
  return detail::MultiTensorKernel::compile(
      decoupled ? "adamw_step" : "adam_step", dtype, 2, kAdamColumns,
      [o, decoupled](std::span<const kir::Val> v, std::span<const kir::Val> row) {
        optim_math::AdamUpdate<kir::Val> r =
            optim_math::adam_update(v[0], v[1], v[2], v[3],
                                    scalars<kir::Val>(o, decoupled, row[kStepSize],
                                                      row[kInvBiasCorrection2Sqrt], row[kDecay]));
        return std::vector<kir::Val>{r.param, r.exp_avg, r.exp_avg_sq};
      });
}

void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  std::vector<Pending> pending = with_gradients();
  std::vector<StepScalars> rows;
  for (const Pending& p : pending) {
    state_of(p.index, 2);
    rows.push_back(step_scalars(o, count_step(p.index)));
  }
  const detail::MultiTensorKernel* kernel = kernel_for(pending, o.fused());
  last_step_compiled_ = kernel != nullptr;
  if (kernel != nullptr) {
    ScalarTable table(kernel->dtype(), pending.size(), kAdamColumns);
    for (size_t r = 0; r < pending.size(); ++r) {
      table.set(r, kStepSize, rows[r].step_size);
      table.set(r, kInvBiasCorrection2Sqrt, rows[r].inv_bias_correction2_sqrt);
      table.set(r, kDecay, rows[r].decay);
    }
    launch(*kernel, pending, table);
    return;
  }
  for (size_t r = 0; r < pending.size(); ++r) {
    const Tensor& param = params_[pending[r].index];
    const std::vector<Tensor>& s = state(pending[r].index);
    optim_math::AdamUpdate<Tensor> u =
        optim_math::adam_update(param, pending[r].grad, s[0], s[1],
                                scalars<double>(o, decoupled_, rows[r].step_size,
                                                rows[r].inv_bias_correction2_sqrt, rows[r].decay));
    s[0].copy_(u.exp_avg);
    s[1].copy_(u.exp_avg_sq);
    param.copy_(u.param);
  }
}

}  // namespace kiln::optim
