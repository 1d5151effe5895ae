// checkpoint(fn, args...): runs fn without keeping its intermediate tensors; backward runs fn
// again (with the same random stream, so dropout masks match) and differentiates that. Only the
// tensor arguments are saved. Arguments and results may mix tensors with other values (ints,
// strings, structs; seed 002): tensors are found inside Tensor, std::vector<Tensor>,
// std::tuple and std::pair, everything else passes through untouched.
#pragma once

#include <functional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/frontend/tensor_tree.h"
#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln {

namespace autograd {
using RecomputeFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// Gives the tensors in `outputs` a CheckpointBackward history (when any input requires grad).
void attach_checkpoint(RecomputeFn recompute, const std::vector<Tensor>& tensor_inputs,
                       const std::vector<Tensor*>& outputs, uint64_t rng_seed, uint64_t rng_offset);
std::pair<uint64_t, uint64_t> checkpoint_rng_state();
}  // namespace autograd

template <class Fn, class... Args>
auto checkpoint(Fn fn, Args... args) {
  std::vector<Tensor> tensor_inputs;
  (autograd::for_each_tensor(args, [&](const Tensor& t) { tensor_inputs.push_back(t); }), ...);
  auto [seed, offset] = autograd::checkpoint_rng_state();
  auto out = [&] {
    NoGradGuard no_grad;
    return fn(args...);
  }();
  autograd::RecomputeFn recompute = [fn, args...](const std::vector<Tensor>& inputs) mutable {
    auto call_args = std::make_tuple(args...);
    size_t k = 0;
    std::apply(
        [&](auto&... a) {
          (autograd::for_each_tensor(a, [&](Tensor& t) { t = inputs[k++]; }), ...);
        },
        call_args);
    auto result = std::apply(fn, call_args);
    std::vector<Tensor> outs;
    autograd::for_each_tensor(result, [&](Tensor& t) { outs.push_back(t); });
    return outs;
  };
  std::vector<Tensor*> outputs;
  autograd::for_each_tensor(out, [&](Tensor& t) { outputs.push_back(&t); });
  autograd::attach_checkpoint(std::move(recompute), tensor_inputs, outputs, seed, offset);
  return out;
}

}  // namespace kiln
