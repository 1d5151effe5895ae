// Built-in example models with synthetic data, for `kiln demo`, `kiln dump` and the benchmarks:
// a model is its parameters, a loss function of a batch, and a fixed pool of batches. Two models
// made with the same name and seed start from identical parameters, so one can train eagerly and
// the other compiled, step for step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/frontend/compile.h"
#include "kiln/runtime/tensor.h"

namespace kiln::models {

struct Model {
  std::string name;
  std::string summary;                       // one line: the architecture and sizes
  std::vector<Tensor> params;                // leaves that require grad, captured by `loss`
  CompiledFunction::Fn loss;                 // batch -> {scalar loss}
  std::vector<std::vector<Tensor>> batches;  // synthetic inputs (and targets), reused in turn

  const std::vector<Tensor>& batch(int64_t step) const {
    return batches[static_cast<size_t>(step) % batches.size()];
  }
};

// "mlp": a two-layer classifier (Linear 512->1024, GELU-tanh, Linear 1024->10, cross-entropy)
// on batches of 256, whose labels come from a fixed random linear teacher.
// "transformer": a GPT-style pre-LayerNorm block (d 256, 4 heads, causal attention with
// materialized scores, 4x GELU MLP, residuals) on batch 4 x sequence 128, regressing a fixed
// random function of its input with mean squared error.
std::vector<std::string> model_names();

// Throws kiln::Error naming the known models for an unknown name. Reseeds the global generator
// with `seed` (as manual_seed does) to draw the parameters and data, on the CPU; they are then
// copied to `device`, so the model starts from the same numbers on every device.
Model make_model(std::string_view name, uint64_t seed = 0, Device device = kCPU);

// Plain SGD, in place, outside autograd; each parameter's .grad is reset afterwards.
void sgd_step(const std::vector<Tensor>& params, double lr);

}  // namespace kiln::models
