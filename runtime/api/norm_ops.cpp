#include "kiln/runtime/api/norm_ops.h"

#include <limits>
#include <optional>

#include "kiln/base/call_site.h"
#include "kiln/base/error.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {
namespace {

// A [C] parameter shaped to broadcast against [N, C, d1, ..., dk].
Tensor per_channel(const Tensor& p, int64_t dims) {
  Shape s(static_cast<size_t>(dims), 1);
  s[1] = p.numel();
  return p.reshape(s);
}

void check_channel_param(const char* op, const char* what, const Tensor& p, const Tensor& input,
                         int64_t channels) {
  if (!p.defined()) return;
  KILN_CHECK(p.dim() == 1 && p.size(0) == channels,
             "{}: expected {} of shape [{}] for an input of shape {}, but got {}", op, what,
             channels, shape_str(input.sizes()), shape_str(p.sizes()));
}

Tensor affine(Tensor y, const Tensor& weight, const Tensor& bias, int64_t dims) {
  if (weight.defined()) y = y * per_channel(weight, dims);
  if (bias.defined()) y = y + per_channel(bias, dims);
  return y;
}

double machine_epsilon(DType t) {
  switch (t) {
    case kFloat64:
      return std::numeric_limits<double>::epsilon();
    case kFloat16:
      return 0.0009765625;  // 2^-10
    case kBFloat16:
      return 0.0078125;  // 2^-7
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(input.dim() >= 2,
             "batch_norm: expected an input of shape [N, C, ...] with 2 or more dims, got {}",
             shape_str(input.sizes()));
  // Only the channel count is read as an integer (Note [Size reads while tracing]): a symbolic
  // batch and spatial sizes stay symbolic.
  int64_t c = input.size(1), nd = input.dim();
  check_channel_param("batch_norm", "weight", weight, input, c);
  check_channel_param("batch_norm", "bias", bias, input, c);
  check_channel_param("batch_norm", "running_mean", running_mean, input, c);
  check_channel_param("batch_norm", "running_var", running_var, input, c);
  Shape reduce{0};
  for (int64_t d = 2; d < nd; ++d)
    reduce.push_back(d);
  Tensor mean_, var_;
  if (training) {
    SymInt per_channel_count = c == 0 ? SymInt(0) : floordiv(input.sym_numel(), c);
    KILN_CHECK(guard_size_fact({per_channel_count, SymFact::Relation::kGt, 1}),
               "batch_norm: Expected more than 1 value per channel when training, got input size "
               "{}",
               shape_str(input.sizes()));
    mean_ = mean(input, reduce, true);
    var_ = var(input, reduce, /*correction=*/0, true);
    if (running_mean.defined() || running_var.defined()) {
      NoGradGuard no_grad;
      if (running_mean.defined())
        running_mean.mul_(1 - momentum).add_(mean_.detach().reshape({c}), momentum);
      if (running_var.defined()) {
        Tensor var_c = var_.detach().reshape({c});
        if (std::optional<int64_t> count = per_channel_count.maybe_int()) {
          double unbias = static_cast<double>(*count) / static_cast<double>(*count - 1);
          running_var.mul_(1 - momentum).add_(var_c, momentum * unbias);
        } else {
          // Over a symbolic count, count / (count - 1) is a float64 tensor (a count of ones),
          // where a double would read the count.
          Tensor n =
              full_symint({per_channel_count}, 1.0, TensorOptions(kFloat64).device(input.device()))
                  .sum();
          Tensor unbias = (n / (n - 1.0)).to(var_.dtype());
          running_var.mul_(1 - momentum).add_(var_c * unbias, momentum);
        }
      }
    }
  } else {
    KILN_CHECK(running_mean.defined() && running_var.defined(),
               "batch_norm: running_mean and running_var must be defined in evaluation mode "
               "(training=false)");
    // Buffers, not differentiated through (torch's native_batch_norm does not either).
    mean_ = per_channel(running_mean.detach(), nd);
    var_ = per_channel(running_var.detach(), nd);
  }
  Tensor y = (input - mean_) * rsqrt(var_ + eps);
  return affine(y, weight, bias, nd);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(input.dim() >= 2,
             "group_norm: expected an input of shape [N, C, ...] with 2 or more dims, got {}",
             shape_str(input.sizes()));
  // The batch and spatial sizes over symbols; only the channel count is read as an integer.
  int64_t c = input.size(1);
  KILN_CHECK(num_groups > 0 && c % num_groups == 0,
             "group_norm: Expected number of channels in input to be divisible by num_groups, "
             "but got input of shape {} and num_groups={}",
             shape_str(input.sizes()), num_groups);
  check_channel_param("group_norm", "weight", weight, input, c);
  check_channel_param("group_norm", "bias", bias, input, c);
  Tensor grouped = input.reshape_symint({input.sym_size(0), num_groups, -1});
  Tensor m = mean(grouped, {2}, true);
  Tensor v = var(grouped, {2}, /*correction=*/0, true);
  Tensor y = ((grouped - m) * rsqrt(v + eps)).reshape_symint(input.sym_sizes());
  return affine(y, weight, bias, input.dim());
}

Tensor rms_norm(const Tensor& input, Shape normalized_shape, const Tensor& weight,
                std::optional<double> eps, std::source_location loc) {
  CallSiteScope site(loc);
  auto k = static_cast<int64_t>(normalized_shape.size());
  bool fits = k >= 1 && k <= input.dim();
  for (int64_t i = 0; fits && i < k; ++i)
    fits = input.size(input.dim() - k + i) == normalized_shape[static_cast<size_t>(i)];
  KILN_CHECK(fits,
             "rms_norm: Given normalized_shape={}, expected input with shape [*, {}], but got "
             "input of size {}",
             shape_str(normalized_shape), fmt::join(normalized_shape, ", "),
             shape_str(input.sizes()));
  KILN_CHECK(!weight.defined() || weight.sizes() == normalized_shape,
             "rms_norm: expected weight of shape {}, but got {}", shape_str(normalized_shape),
             shape_str(weight.sizes()));
  KILN_CHECK(is_floating(input.dtype()), "rms_norm: expected a floating input, got {}",
             input.dtype());
  Shape dims;
  for (int64_t i = input.dim() - k; i < input.dim(); ++i)
    dims.push_back(i);
  double e = eps.value_or(machine_epsilon(input.dtype()));
  Tensor y = input * rsqrt(mean(input * input, dims, true) + e);
  return weight.defined() ? y * weight : y;
}

}  // namespace kiln
