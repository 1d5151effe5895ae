// kiln::optim: torch.optim's optimizers for Kiln tensors (SGD, Adam, AdamW; sgd.h, adam.h).
//
// An optimizer holds its parameters and their state, and step() updates them in place from
// their .grad, outside autograd; parameters whose gradient is undefined are skipped, as in
// torch. On the CPU, a step over float32 or float64 parameters runs one compiled multi-tensor
// kernel over all of them (Note [Multi-tensor kernels]); elsewhere, or with fused(false), it
// runs the same update as tensor ops (Note [Optimizer math is written once]). The learning
// rate and the step counts are read on every step, so a schedule (set_lr) never recompiles.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/runtime/tensor.h"

// The options' fluent accessors, as libtorch's TORCH_ARG: `AdamOptions(1e-3).eps(1e-6)` sets,
// `options.eps()` reads.
#define KILN_OPTIM_ARG(T, name)    \
 public:                           \
  auto& name(const T& new_value) { \
    name##_ = new_value;           \
    return *this;                  \
  }                                \
  const T& name() const {          \
    return name##_;                \
  }                                \
                                   \
 private:                          \
  T name##_

namespace kiln::optim {

namespace detail {
class MultiTensorKernel;
}

// The per-tensor scalar rows of a compiled step, in the kernel's dtype.
class ScalarTable {
 public:
  ScalarTable(DType dtype, size_t rows, size_t columns);
  void set(size_t row, size_t column, double value);
  const void* row(size_t r) const;

 private:
  DType dtype_;
  size_t columns_;
  std::vector<float> f32_;
  std::vector<double> f64_;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient.
  virtual void step() = 0;
  // Resets the gradients: to undefined with set_to_none (torch's default), else to zeros.
  void zero_grad(bool set_to_none = true);

  const std::vector<Tensor>& parameters() const { return params_; }
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Whether the last step ran the compiled multi-tensor kernel (false: tensor ops, or no step
  // yet).
  bool last_step_compiled() const { return last_step_compiled_; }
  // Parameter i's state tensors (Adam: exp_avg, exp_avg_sq; SGD with momentum:
  // momentum_buffer), empty before its first step, and the number of steps it has taken.
  const std::vector<Tensor>& state(size_t index) const { return state_.at(index); }
  int64_t step_count(size_t index) const { return steps_.at(index); }

 protected:
  // Throws kiln::Error (naming `name`, torch's optimizer class) for an empty list, an undefined
  // tensor, a non-leaf, or a tensor given twice.
  Optimizer(std::vector<Tensor> params, std::string name);

  struct Pending {
    size_t index;  // into parameters()
    Tensor grad;
  };
  // The parameters with a defined gradient, checked against their parameter's shape, dtype and
  // device.
  std::vector<Pending> with_gradients() const;

  // The parameters' state tensors, created with zeros on a parameter's first step (`count` of
  // them) and its step count, advanced by count_step.
  std::vector<Tensor>& state_of(size_t index, int count);
  int64_t count_step(size_t index) { return ++steps_[index]; }

  // The compiled kernel for this step (built on first use per dtype by build_kernel), or nullptr
  // when the step must run as tensor ops: fused(false), no LLVM, a CUDA or non-float tensor,
  // mixed dtypes, a non-contiguous parameter or state, or buffers that overlap.
  const detail::MultiTensorKernel* kernel_for(const std::vector<Pending>& pending,
                                              std::optional<bool> fused);
  virtual std::shared_ptr<const detail::MultiTensorKernel> build_kernel(DType dtype) const = 0;
  // Runs `kernel` over the pending parameters, with row r of `scalars` for pending[r].
  void launch(const detail::MultiTensorKernel& kernel, const std::vector<Pending>& pending,
              const ScalarTable& scalars);

  const std::string& name() const { return name_; }
  std::vector<Tensor> params_;
  bool last_step_compiled_ = false;

 private:
  std::string name_;
  std::vector<std::vector<Tensor>> state_;
  std::vector<int64_t> steps_;
  std::map<DType, std::shared_ptr<const detail::MultiTensorKernel>> kernels_;
};

}  // namespace kiln::optim
