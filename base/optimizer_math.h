// The update rules of kiln::optim (frontend/optim/), written once.
//
// Note [Optimizer math is written once]
// Each rule is a template over a value type V and a scalar type S. The optimizers instantiate
// it twice:
//   - with Tensor and double: the tensor-op path, which runs on any device and layout;
//   - with kir::Val for both: the body of the multi-tensor kernel that a CPU step is compiled
//     into (frontend/optim/multi_tensor_kernel.h). There the constants of the optimizer's
//     options are kernel constants, and the scalars that change between steps (the learning
//     rate, and Adam's bias corrections from the step count) are loads from a small per-tensor
//     table, so a schedule never recompiles.
// Both paths run the same operations in the same order on the same types, so they agree to the
// bit (tests/frontend/optim_test.cpp checks it). The order follows torch.optim's single-tensor
// code (lerp for the first moment, addcmul for the second, addcdiv for the step), so results
// match PyTorch's to rounding.
#pragma once

#include <type_traits>

namespace kiln::optim_math {

// `c ? a : b` for a host bool; a select for the kernel IR's Val (found by argument-dependent
// lookup), so the kernel evaluates both and picks per element.
template <class F, class V>
V choose(const F& c, const V& a, const V& b) {
  if constexpr (std::is_same_v<F, bool>) {
    return c ? a : b;
  } else {
    return select(c, a, b);
  }
}

// SGD with momentum (PyTorch's defaults: dampening 0, Nesterov off). `first` is true on a
// parameter's first step, where the momentum buffer becomes the gradient itself.
template <class S, class F>
struct SgdScalars {
  S lr;
  S momentum;
  S one_minus_dampening;
  S weight_decay;
  F first;
  bool weight_decay_on = false;
  bool momentum_on = false;
  bool nesterov = false;
};

template <class V>
struct SgdUpdate {
  V param;
  V momentum_buffer;  // unchanged when momentum is off
};

template <class V, class S, class F>
SgdUpdate<V> sgd_update(V param, V grad, V buf, const SgdScalars<S, F>& s) {
  if (s.weight_decay_on) grad = grad + param * s.weight_decay;
  if (s.momentum_on) {
    buf = choose(s.first, grad, buf * s.momentum + grad * s.one_minus_dampening);
    grad = s.nesterov ? grad + buf * s.momentum : buf;
  }
  return {param - grad * s.lr, buf};
}

// Adam, and AdamW when `decoupled`. Per step: step_size = lr / (1 - beta1^t),
// inv_bias_correction2_sqrt = 1 / sqrt(1 - beta2^t), and decay = 1 - lr * weight_decay (AdamW's
// decoupled decay); t is the parameter's own step count. torch divides by the square root of
// the bias correction; multiplying by its reciprocal (within an ulp of it) leaves one division
// per element, which is what limits the compiled step on the CPU (the divider, not memory).
template <class S>
struct AdamScalars {
  S one_minus_beta1;
  S beta2;
  S one_minus_beta2;
  S eps;
  S weight_decay;  // Adam's L2 term, added to the gradient
  S step_size;
  S inv_bias_correction2_sqrt;
  S decay;
  bool weight_decay_on = false;
  bool decoupled = false;
};

template <class V>
struct AdamUpdate {
  V param;
  V exp_avg;
  V exp_avg_sq;
};

template <class V, class S>
AdamUpdate<V> adam_update(V param, V grad, V exp_avg, V exp_avg_sq, const AdamScalars<S>& s) {
  if (s.weight_decay_on) {
    if (s.decoupled) {
      param = param * s.decay;
    } else {
      grad = grad + param * s.weight_decay;
    }
  }
  exp_avg = exp_avg + (grad - exp_avg) * s.one_minus_beta1;
  exp_avg_sq = exp_avg_sq * s.beta2 + grad * grad * s.one_minus_beta2;
  V denom = sqrt(exp_avg_sq) * s.inv_bias_correction2_sqrt + s.eps;
  return {param - exp_avg / denom * s.step_size, exp_avg, exp_avg_sq};
}

}  // namespace kiln::optim_math
