// torch.nn.functional.pad and one_hot, composed of table ops: constant padding is slices and a
// cat with filled blocks, reflect, replicate and circular padding an index_select with indices
// computed on the host (a constant of the traced graph), one_hot a comparison with an arange.
// Unlike torch, which takes the other modes only for 1 to 3 trailing dims of a 2-D to 5-D
// input, any number of trailing dims can be padded in every mode.
#include <fmt/format.h>

#include "kiln/base/call_site.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/nn_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"
#include "kiln/runtime/api/shape_ops.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {

namespace {

// Crops negative pads, then joins blocks of `value` to both ends. The crop's bounds count from
// each end and the blocks take the other sizes over symbols, so no size is read (Note [Size
// reads while tracing]).
Tensor pad_constant(const Tensor& x, int64_t d, int64_t before, int64_t after, double value) {
  Tensor out = x;
  if (before < 0 || after < 0)
    out = out.slice(d, std::max<int64_t>(0, -before), after < 0 ? after : INT64_MAX);
  std::vector<Tensor> parts;
  auto block = [&](int64_t size) {
    SymShape s = out.sym_sizes();
    s[static_cast<size_t>(d)] = size;
    return full_symint(std::move(s), value, x.options());
  };
  if (before > 0) parts.push_back(block(before));
  parts.push_back(out);
  if (after > 0) parts.push_back(block(after));
  return parts.size() == 1 ? out : cat(parts, d);
}

enum class PadMode { Reflect, Replicate, Circular };

// Output position i in [-before, n + after) reads input position reflect(i), clamp(i) or
// i mod n: computed on the host for an integer n (a constant of a traced graph), and with
// tensor ops over a symbolic n, so that one graph serves every n.
Tensor pad_indexed(const Tensor& x, int64_t d, int64_t before, int64_t after, PadMode mode) {
  TensorOptions idx_options = TensorOptions(kInt64).device(x.device());
  SymInt sym_n = x.sym_size(d);
  if (sym_n.is_symbolic()) {
    Tensor i = sub(arange_symint(sym_n + before + after, idx_options), before);
    Tensor n = scalar_tensor_symint(sym_n, idx_options);
    Tensor source;
    if (mode == PadMode::Reflect) {
      Tensor j = abs(i);
      source = where(ge(j, n), sub(mul(sub(n, 1), 2), j), j);
    } else if (mode == PadMode::Circular) {
      source = remainder(i, n);
    } else {
      source = clamp(i, full_symint({}, 0, idx_options), sub(n, 1));
    }
    return index_select(x, d, source);
  }
  int64_t n = x.size(d);
  std::vector<int64_t> idx;
  for (int64_t i = -before; i < n + after; ++i) {
    if (mode == PadMode::Reflect) {
      int64_t j = i < 0 ? -i : i;
      idx.push_back(j >= n ? 2 * (n - 1) - j : j);
    } else if (mode == PadMode::Circular) {
      idx.push_back((i % n + n) % n);
    } else {
      idx.push_back(std::clamp<int64_t>(i, 0, n - 1));
    }
  }
  int64_t len = static_cast<int64_t>(idx.size());
  return index_select(x, d, from_vector(idx, {len}, idx_options));
}

}  // namespace

Tensor pad(const Tensor& x, Shape pad, const std::string& mode, double value,
           std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(pad.size() % 2 == 0, "pad: Padding length must be divisible by 2, got [{}] (input {})",
             fmt::join(pad, ", "), shape_str(x.sizes()));
  KILN_CHECK(static_cast<int64_t>(pad.size() / 2) <= x.dim(),
             "pad: Padding length too large: [{}] pads {} dims, but the input has shape {}",
             fmt::join(pad, ", "), pad.size() / 2, shape_str(x.sizes()));
  bool constant = mode == "constant";
  KILN_CHECK(constant || mode == "reflect" || mode == "replicate" || mode == "circular",
             "pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '{}'", mode);
  KILN_CHECK(constant || value == 0,
             "pad: Padding mode \"{}\" doesn't take in value argument (got {})", mode, value);
  Tensor out = x;
  // The checks compare the sizes as guards of a trace (guard_size_fact), which keeps symbolic
  // sizes symbolic.
  auto holds = [](const SymInt& a, SymFact::Relation r, const SymInt& b) {
    return guard_size_fact(SymFact{a, r, b});
  };
  using R = SymFact::Relation;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
    int64_t before = pad[2 * i], after = pad[2 * i + 1];
    SymInt n = x.sym_size(d);
    KILN_CHECK(holds(n + before + after, R::kGe, 0),
               "pad: The input size {}, plus negative padding {} and {} resulted in a negative "
               "output size, which is invalid. Check dimension {} of your input (shape {}).",
               x.size(d), before, after, d, shape_str(x.sizes()));
    if (constant) {
      out = pad_constant(out, d, before, after, value);
    } else if (mode == "reflect") {
      KILN_CHECK(holds(n, R::kGt, before) && holds(n, R::kGt, after),
                 "pad: Padding size should be less than the corresponding input dimension, but "
                 "got: padding ({}, {}) at dimension {} of input {} (mode 'reflect')",
                 before, after, d, shape_str(x.sizes()));
      out = pad_indexed(out, d, before, after, PadMode::Reflect);
    } else if (mode == "circular") {
      bool empty = holds(n, R::kEq, 0);
      KILN_CHECK(holds(n, R::kGe, before) && holds(n, R::kGe, after) &&
                     (!empty || (before <= 0 && after <= 0)),
                 "pad: Padding value causes wrapping around more than once. (padding ({}, {}) "
                 "at dimension {} of input {})",
                 before, after, d, shape_str(x.sizes()));
      out = pad_indexed(out, d, before, after, PadMode::Circular);
    } else {
      KILN_CHECK(!holds(n, R::kEq, 0) || (before <= 0 && after <= 0),
                 "pad: cannot replicate the edge of dimension {}, which has size 0 (input {})", d,
                 shape_str(x.sizes()));
      out = pad_indexed(out, d, before, after, PadMode::Replicate);
    }
  }
  // torch.nn.functional.pad always returns a new tensor, also when every pad is zero.
  return out.is_same(x) ? x.clone() : out;
}

Tensor one_hot(const Tensor& x, int64_t num_classes, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(
      x.dtype() == kInt64,
      "one_hot: one_hot is only applicable to index tensor of type int64, got {} of shape {}",
      x.dtype(), shape_str(x.sizes()));
  KILN_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 or non-negative, got {}",
             num_classes);
  if (num_classes == -1) {
    KILN_CHECK(x.numel() > 0,
               "one_hot: Can not infer total number of classes from empty tensor (shape {})",
               shape_str(x.sizes()));
    num_classes = amax(x).item<int64_t>() + 1;
  }
  // As torch, the range is checked on the CPU only (elsewhere it would wait for the device),
  // and not while tracing, where the values are not known.
  if (x.numel() > 0 && x.device().is_cpu() && !is_tracing()) {
    KILN_CHECK(amin(x).item<int64_t>() >= 0, "one_hot: Class values must be non-negative.");
    KILN_CHECK(amax(x).item<int64_t>() < num_classes,
               "one_hot: Class values must be smaller than num_classes ({}).", num_classes);
  }
  return eq(x.unsqueeze(-1), arange(num_classes, TensorOptions(kInt64).device(x.device())))
      .to(kInt64);
}

}  // namespace kiln
