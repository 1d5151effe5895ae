// Hooks a Node runs around its apply (seed 003): pre hooks see and may replace the incoming
// gradients, post hooks see the outputs (gradients w.r.t. the forward inputs) and may replace
// them, and post-accumulate-grad hooks run on a leaf after its .grad was updated.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

using variable_list = std::vector<Tensor>;

struct FunctionPreHook {
  virtual ~FunctionPreHook() = default;
  virtual variable_list operator()(const variable_list& grads) = 0;
};

struct FunctionPostHook {
  virtual ~FunctionPostHook() = default;
  virtual variable_list operator()(const variable_list& outputs, const variable_list& inputs) = 0;
};

struct PostAccumulateGradHook {
  virtual ~PostAccumulateGradHook() = default;
  virtual void operator()(const Tensor& param) = 0;
};

// A leaf's post-accumulate-grad hooks (Tensor::register_post_accumulate_grad_hook), in the
// order they were registered.
struct PostAccumulateGradHookList : PostAccumulateGradHook {
  void operator()(const Tensor& param) override {
    for (const auto& fn : fns)
      if (fn) fn(param);
  }
  std::vector<std::function<void(const Tensor&)>> fns;
};

// Adapters from plain callables.
struct LambdaPreHook : FunctionPreHook {
  explicit LambdaPreHook(std::function<variable_list(const variable_list&)> f) : fn(std::move(f)) {}
  variable_list operator()(const variable_list& grads) override { return fn(grads); }
  std::function<variable_list(const variable_list&)> fn;
};

struct LambdaPostHook : FunctionPostHook {
  explicit LambdaPostHook(
      std::function<variable_list(const variable_list&, const variable_list&)> f)
      : fn(std::move(f)) {}
  variable_list operator()(const variable_list& outputs, const variable_list& inputs) override {
    return fn(outputs, inputs);
  }
  std::function<variable_list(const variable_list&, const variable_list&)> fn;
};

// A tensor's own hooks (Tensor::register_hook), shared between the tensor's AutogradMeta and the
// tensor pre hook that runs them on the grad_fn input `value_idx`. A removed hook leaves an
// empty slot so that handles (indices) stay stable.
struct TensorHookList {
  std::vector<std::function<Tensor(const Tensor&)>> hooks;
};

struct TensorHooksPreHook : FunctionPreHook {
  TensorHooksPreHook(std::shared_ptr<TensorHookList> l, size_t idx)
      : list(std::move(l)), value_idx(idx) {}
  variable_list operator()(const variable_list& grads) override;
  std::shared_ptr<TensorHookList> list;
  size_t value_idx;
};

}  // namespace kiln::autograd
