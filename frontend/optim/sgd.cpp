#include "kiln/frontend/optim/sgd.h"

#include <utility>

#include "kiln/base/error.h"
#include "kiln/base/optimizer_math.h"
#include "kiln/frontend/optim/multi_tensor_kernel.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln::optim {

namespace {

void check_lr(double lr) {
  KILN_CHECK(lr >= 0, "SGD: Invalid learning rate: {}", lr);
}

// The compiled kernel's scalar row: the learning rate and whether this is the parameter's first
// step (1 or 0).
enum SgdColumn { kLr, kFirst, kSgdColumns };

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params), "SGD"), options_(std::move(options)) {
  check_lr(options_.lr());
  KILN_CHECK(options_.momentum() >= 0, "SGD: Invalid momentum value: {}", options_.momentum());
  KILN_CHECK(options_.weight_decay() >= 0, "SGD: Invalid weight_decay value: {}",
             options_.weight_decay());
  KILN_CHECK(!options_.nesterov() || (options_.momentum() > 0 && options_.dampening() == 0),
             "SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::set_lr(double lr) {
  check_lr(lr);
  options_.lr(lr);
}

std::shared_ptr<const detail::MultiTensorKernel> SGD::build_kernel(DType dtype) const {
  const SGDOptions o = options_;
  return detail::MultiTensorKernel::compile(
      "sgd_step", dtype, o.momentum() != 0 ? 1 : 0, kSgdColumns,
      [o](std::span<const kir::Val> v, std::span<const kir::Val> row) {
        optim_math::SgdScalars<kir::Val, kir::Val> s{row[kLr],
                                                     o.momentum(),
                                                     1 - o.dampening(),
                                                     o.weight_decay(),
                                                     row[kFirst] != kir::Val(0.0),
                                                     o.weight_decay() != 0,
                                                     o.momentum() != 0,
                                                     o.nesterov()};
        kir::Val buf = o.momentum() != 0 ? v[2] : v[0];
        optim_math::SgdUpdate<kir::Val> r = optim_math::sgd_update(v[0], v[1], buf, s);
        std::vector<kir::Val> out{r.param};
        if (o.momentum() != 0) out.push_back(r.momentum_buffer);
        return out;
      });
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  const bool momentum = o.momentum() != 0;
  std::vector<Pending> pending = with_gradients();
  std::vector<bool> first;
  for (const Pending& p : pending) {
    first.push_back(count_step(p.index) == 1);
    if (momentum) state_of(p.index, 1);
  }
  const detail::MultiTensorKernel* kernel = kernel_for(pending, o.fused());
  last_step_compiled_ = kernel != nullptr;
  if (kernel != nullptr) {
    ScalarTable table(kernel->dtype(), pending.size(), kSgdColumns);
    for (size_t r = 0; r < pending.size(); ++r) {
      table.set(r, kLr, o.lr());
      table.set(r, kFirst, first[r] ? 1 : 0);
    }
    launch(*kernel, pending, table);
    return;
  }
  for (size_t r = 0; r < pending.size(); ++r) {
    const Tensor& param = params_[pending[r].index];
    Tensor buf = momentum ? state(pending[r].index)[0] : Tensor();
    optim_math::SgdScalars<double, bool> s{o.lr(),
                                           o.momentum(),
                                           1 - o.dampening(),
                                           o.weight_decay(),
                                           static_cast<bool>(first[r]),
                                           o.weight_decay() != 0,
                                           momentum,
                                           o.nesterov()};
    optim_math::SgdUpdate<Tensor> u = optim_math::sgd_update(param, pending[r].grad, buf, s);
    if (momentum) buf.copy_(u.momentum_buffer);
    param.copy_(u.param);
  }
}

}  // namespace kiln::optim
