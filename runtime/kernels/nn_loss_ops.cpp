// nll_loss: the negative log-likelihood of class-index targets, a table entry with its own CPU
// kernel. input is [N, C] or [C] log-probabilities, target int64 [N] or []. cross_entropy and
// mse_loss are composites of table ops (runtime/api/nn_ops.cpp).
#include <cmath>
#include <limits>

#include "kiln/base/error.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/nn_registry.h"
#include "kiln/runtime/kernels/op_rules.h"

namespace kiln {
namespace {

void check_reduction(const OpDef& op, const std::string& r) {
  KILN_CHECK(r == "none" || r == "mean" || r == "sum",
             "{}: reduction must be \"none\", \"mean\" or \"sum\", got \"{}\"", op.name, r);
}

// A template over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> nll_shape(const OpDef& op, std::span<const Ref> inputs,
                                              const void* attrs) {
  using Sizes = rules::SizesOf<Ref>;
  const auto& a = attrs_as<NllLossAttrs>(attrs);
  check_reduction(op, a.reduction);
  const auto &in = inputs[0].sizes, &tg = inputs[1].sizes;
  KILN_CHECK(in.size() == 1 || in.size() == 2, "{}: expected input of shape [N, C] or [C], got {}",
             op.name, shape_str(in));
  KILN_CHECK(inputs[1].dtype == kInt64,
             "{}: expected target of dtype int64 (class indices), got {} (target shape {})",
             op.name, inputs[1].dtype, shape_str(tg));
  bool batched = in.size() == 2;
  KILN_CHECK(batched ? (tg.size() == 1 && tg[0] == in[0]) : tg.empty(),
             "{}: input of shape {} expects target of shape {}, got {}", op.name, shape_str(in),
             batched ? shape_str(Sizes{in[0]}) : std::string("[]"), shape_str(tg));
  if (a.reduction == "none" && batched) return {{Sizes{in[0]}}};
  return {{Sizes{}}};
}

DType nll_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void*, size_t) {
  DType t = inputs[0].dtype;
  KILN_CHECK(is_floating(t), "{}: expected a floating point input, got {} (shape {})", op.name, t,
             shape_str(inputs[0].sizes));
  return t;
}

void nll_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                const void* attrs) {
  const auto& a = attrs_as<NllLossAttrs>(attrs);
  const Tensor& input = inputs[0];
  bool batched = input.dim() == 2;
  int64_t n = batched ? input.size(0) : 1;
  int64_t c = input.size(input.dim() - 1);
  // Only n elements are read: the input is not converted (a [n, vocabulary] float32 matrix
  // would be copied whole into float64 to read one element a row).
  Tensor x = input.contiguous();
  auto element = [&](int64_t at) -> double {
    switch (x.dtype()) {
      case kFloat64:
        return x.data_ptr<double>()[at];
      case kFloat32:
        return x.data_ptr<float>()[at];
      case kFloat16:
        return static_cast<float>(x.data_ptr<Half>()[at]);
      case kBFloat16:
        return static_cast<float>(x.data_ptr<BFloat16>()[at]);
      default:
        KILN_ERROR("{}: expected a floating point input, got {}", op.name, x.dtype());
    }
  };
  std::vector<int64_t> target = inputs[1].contiguous().to_vector<int64_t>();
  std::vector<double> losses(static_cast<size_t>(n), 0.0);
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = target[static_cast<size_t>(i)];
    if (t == a.ignore_index) continue;
    KILN_CHECK(t >= 0 && t < c, "{}: Target {} is out of bounds (number of classes {})", op.name, t,
               c);
    double l = -element(i * c + t);
    losses[static_cast<size_t>(i)] = l;
    total += l;
    ++count;
  }
  Tensor result = empty_tensor(outputs[0].sizes(), kFloat64, outputs[0].device());
  double* r = result.data_ptr<double>();
  if (a.reduction == "none") {
    std::copy(losses.begin(), losses.end(), r);
  } else if (a.reduction == "sum") {
    r[0] = total;
  } else {
    r[0] =
        count == 0 ? std::numeric_limits<double>::quiet_NaN() : total / static_cast<double>(count);
  }
  copy_into(outputs[0], result);
}

}  // namespace

void register_nn_loss_ops(OpTable& table) {
  OpDef& op = table.add<NllLossAttrs>("nll_loss", {"input", "target"}, 0, "NllLossAttrs");
  rules::set_shape_rules(op, nll_shape<MetaRef>, nll_shape<SymMetaRef>);
  op.dtype = nll_dtype;
  op.compute[static_cast<int>(DispatchKey::CPU)] = nll_kernel;
}

}  // namespace kiln
