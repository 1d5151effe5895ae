#include "kiln/runtime/api/attention_ops.h"

#include <cmath>
#include <limits>

#include "kiln/base/call_site.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/ops.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/attention_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln {
namespace {

constexpr const char* kName = "scaled_dot_product_attention";

// Sizes are SymInts (Note [Size reads while tracing]): under a symbolic trace the batch and
// sequence lengths stay symbolic, compared as expressions; only a mismatch between expressions
// compares the integers (which specializes them).
SymShape batch_of(const Tensor& t) {
  SymShape s = t.sym_sizes();
  return SymShape(s.begin(), s.end() - 2);
}

// Whether `from` broadcasts to `to` (dims aligned from the right, each equal or 1).
template <class Sizes>
bool broadcasts_to(const Sizes& from, const Sizes& to) {
  if (from.size() > to.size()) return false;
  size_t shift = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (!(from[d] == 1) && !(from[d] == to[d + shift])) return false;
  return true;
}

// Integer sizes from expressions that did not match as such: a read that specializes them.
Shape read_ints(const SymShape& sizes) {
  Shape out;
  for (const SymInt& s : sizes)
    out.push_back(detail::read_sym_int(s, "scaled_dot_product_attention's sizes compared"));
  return out;
}

// The broadcast of the batch shapes, as expressions where they match as such.
SymShape broadcast_batch(const SymShape& a, const SymShape& b) {
  try {
    return broadcast_shapes(kName, a, b);
  } catch (const Error&) {
    return to_sym_shape(broadcast_shapes(kName, read_ints(a), read_ints(b)));
  }
}

SymShape with_last_two(SymShape batch, SymInt a, SymInt b) {
  batch.push_back(std::move(a));
  batch.push_back(std::move(b));
  return batch;
}

// softmax(q k^T scale + mask) v with dropout on the weights, op by op (the L x S scores are
// materialized): for dropout and for an additive mask that requires grad.
Tensor composite_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                           double dropout_p, bool is_causal, std::optional<double> scale) {
  Tensor scores = matmul(q, k.transpose(-2, -1));
  // Without a scale, 1/sqrt(E) at the call's head dim: a double where E is an integer, and a
  // float64 0-dim tensor computed over the symbols where it is not (the product rounds once,
  // to the scores' dtype, either way).
  std::optional<int64_t> head_dim = q.sym_size(-1).maybe_int();
  if (scale || head_dim) {
    scores = scores * (scale ? *scale : 1.0 / std::sqrt(static_cast<double>(*head_dim)));
  } else {
    TensorOptions f64 = TensorOptions(kFloat64).device(q.device());
    scores = scores * rsqrt(scalar_tensor_symint(q.sym_size(-1), f64));
  }
  if (is_causal) {
    TensorOptions index = TensorOptions(kInt64).device(q.device());
    Tensor keep = arange_symint(q.sym_size(-2), index)
                      .unsqueeze(1)
                      .ge(arange_symint(k.sym_size(-2), index).unsqueeze(0));
    scores = scores.masked_fill(logical_not(keep), -std::numeric_limits<double>::infinity());
  } else if (mask.defined() && mask.dtype() == kBool) {
    scores = scores.masked_fill(logical_not(mask), -std::numeric_limits<double>::infinity());
  } else if (mask.defined()) {
    scores = scores + mask;
  }
  Tensor weights;
  if (is_causal || mask.defined()) {
    // torch's safe softmax: a row whose scores are all -inf gets weights of 0, not NaN. Its
    // scores are replaced first, so that softmax's backward sees finite weights there too.
    Tensor dead = amax(scores, {-1}, /*keepdim=*/true).eq(-std::numeric_limits<double>::infinity());
    weights = softmax(scores.masked_fill(dead, 0), -1).masked_fill(dead, 0);
  } else {
    weights = softmax(scores, -1);
  }
  if (dropout_p > 0) weights = dropout(weights, dropout_p, /*train=*/true);
  return matmul(weights, v);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
             "{}: expected query, key and value of at least 2 dims, got shapes {}, {} and {}",
             kName, shape_str(query.sizes()), shape_str(key.sizes()), shape_str(value.sizes()));
  KILN_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(),
             "{}: Expected query, key, and value to have the same dtype, but got query.dtype: {} "
             "key.dtype: {} and value.dtype: {} instead.",
             kName, query.dtype(), key.dtype(), value.dtype());
  DType dt = query.dtype();
  KILN_CHECK(dt == kFloat32 || dt == kFloat64 || dt == kFloat16 || dt == kBFloat16,
             "{}: expected query of dtype float32, float64, float16 or bfloat16, got {}", kName,
             dt);
  KILN_CHECK(query.device() == key.device() && query.device() == value.device(),
             "{}: expected query, key and value on one device, got {}, {} and {}", kName,
             query.device(), key.device(), value.device());
  SymInt L = query.sym_size(-2), E = query.sym_size(-1), S = key.sym_size(-2),
         Ev = value.sym_size(-1);
  KILN_CHECK((key.sym_size(-1) == E || key.size(-1) == query.size(-1)) &&
                 (value.sym_size(-2) == S || value.size(-2) == key.size(-2)),
             "{}: query {}, key {} and value {} do not fit [..., L, E], [..., S, E] and [..., S, "
             "Ev]",
             kName, shape_str(query.sizes()), shape_str(key.sizes()), shape_str(value.sizes()));
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1,
             "{}: dropout probability has to be between 0 and 1, but got {}", kName, dropout_p);
  SymShape batch = broadcast_batch(batch_of(query), batch_of(key));
  batch = broadcast_batch(batch, batch_of(value));
  Tensor mask = attn_mask;
  if (mask.defined()) {
    KILN_CHECK(!is_causal, "{}: Explicit attn_mask should not be set when is_causal=True", kName);
    KILN_CHECK(mask.dtype() == kBool || is_floating(mask.dtype()),
               "{}: Expected attn_mask dtype to be bool or float or to match query dtype, but got "
               "attn_mask.dtype: {} and  query.dtype: {} instead.",
               kName, mask.dtype(), dt);
    KILN_CHECK(mask.device() == query.device(), "{}: expected attn_mask on {}, got {}", kName,
               query.device(), mask.device());
    SymShape full = with_last_two(batch, L, S);
    KILN_CHECK(
        broadcasts_to(mask.sym_sizes(), full) || broadcasts_to(mask.sizes(), read_ints(full)),
        "{}: attn_mask of shape {} does not broadcast to {} ([..., L, S])", kName,
        shape_str(mask.sizes()), shape_str(read_ints(full)));
    if (mask.dtype() != kBool && mask.dtype() != dt) mask = mask.to(dt);
  }
  // The fused op and the composite compute the default scale from the call's head dim.
  bool mask_needs_grad = mask.defined() && mask.requires_grad() && GradMode::is_enabled();
  if (dropout_p > 0 || mask_needs_grad)
    return composite_attention(query, key, value, mask, dropout_p, is_causal, scale);
  // The fused ops take one batch shape for every input: broadcasting is a view.
  AttentionAttrs a{scale ? std::optional<Scalar>(*scale) : std::nullopt, is_causal, mask.defined()};
  auto fit = [](const Tensor& t, const SymShape& sizes) {
    return t.sym_sizes() == sizes ? t : t.expand_symint(sizes);
  };
  std::vector<Tensor> in = {fit(query, with_last_two(batch, L, E)),
                            fit(key, with_last_two(batch, S, E)),
                            fit(value, with_last_two(batch, S, Ev))};
  if (mask.defined()) in.push_back(fit(mask, with_last_two(batch, L, S)));
  return std::move(call_op(KILN_OP("scaled_dot_product_flash_attention"), in, &a)[0]);
}

}  // namespace kiln
