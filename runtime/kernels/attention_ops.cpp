// The op-table entries of fused attention: scaled_dot_product_flash_attention and its backward
// (attention_ops.h), their shape and dtype rules, and the layout helpers their kernels share.
// The public function, which checks the arguments in torch's words and broadcasts them to the
// ops' contract, is runtime/api/attention_ops.cpp.
#include "kiln/runtime/kernels/attention_ops.h"

#include <algorithm>

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/attention_attrs.h"
#include "kiln/runtime/kernels/op_rules.h"

namespace kiln {

AttentionSizes attention_sizes(const Tensor& q, const Tensor& k, const Tensor& v) {
  AttentionSizes s;
  int64_t nd = q.dim();
  for (int64_t d = 0; d + 2 < nd; ++d)
    s.batch *= q.size(d);
  s.L = q.size(nd - 2);
  s.E = q.size(nd - 1);
  s.S = k.size(nd - 2);
  s.Ev = v.size(nd - 1);
  return s;
}

std::vector<int64_t> attention_batch_offsets(const Tensor& t, int64_t batch_dims) {
  std::vector<int64_t> off{0};
  for (int64_t d = 0; d < batch_dims; ++d) {
    std::vector<int64_t> next;
    next.reserve(off.size() * static_cast<size_t>(t.size(d)));
    for (int64_t o : off)
      for (int64_t i = 0; i < t.size(d); ++i)
        next.push_back(o + i * t.stride(d));
    off = std::move(next);
  }
  return off;
}

namespace {

bool attention_dtype_ok(DType t) {
  return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16;
}

// query, key, value (and the mask) in the ops' contract: same rank >= 2, same batch dims,
// matching E and S; the mask exactly [..., L, S]. The rules below are templates over the size
// type (Note [Symbolic sizes]): over symbols, sizes match as expressions.
template <class Ref>
void check_attention_inputs(const OpDef& op, const Ref& q, const Ref& k, const Ref& v,
                            const Ref* mask) {
  size_t nd = q.sizes.size();
  KILN_CHECK(nd >= 2 && k.sizes.size() == nd && v.sizes.size() == nd,
             "{}: expected query, key and value of the same rank (at least 2), got shapes {}, {} "
             "and {}",
             op.name, shape_str(q.sizes), shape_str(k.sizes), shape_str(v.sizes));
  bool same_batch = std::equal(q.sizes.begin(), q.sizes.end() - 2, k.sizes.begin()) &&
                    std::equal(q.sizes.begin(), q.sizes.end() - 2, v.sizes.begin());
  KILN_CHECK(same_batch && q.sizes[nd - 1] == k.sizes[nd - 1] && k.sizes[nd - 2] == v.sizes[nd - 2],
             "{}: query {}, key {} and value {} do not fit [..., L, E], [..., S, E], [..., S, Ev]",
             op.name, shape_str(q.sizes), shape_str(k.sizes), shape_str(v.sizes));
  KILN_CHECK(attention_dtype_ok(q.dtype) && k.dtype == q.dtype && v.dtype == q.dtype,
             "{}: expected query, key and value of one floating dtype, got {}, {} and {}", op.name,
             q.dtype, k.dtype, v.dtype);
  if (mask == nullptr) return;
  rules::SizesOf<Ref> want(q.sizes.begin(), q.sizes.end());
  want[nd - 1] = k.sizes[nd - 2];
  KILN_CHECK(std::equal(want.begin(), want.end(), mask->sizes.begin(), mask->sizes.end()),
             "{}: expected attn_mask of shape {}, got {}", op.name, shape_str(want),
             shape_str(mask->sizes));
  KILN_CHECK(mask->dtype == kBool || mask->dtype == q.dtype,
             "{}: expected attn_mask of dtype bool or {}, got {}", op.name, q.dtype, mask->dtype);
}

size_t expected_inputs(const OpDef& op, const AttentionAttrs& a, size_t without_mask,
                       size_t given) {
  size_t want = without_mask + (a.has_mask ? 1 : 0);
  KILN_CHECK(given == want, "{}: expected {} inputs (has_mask={}), got {}", op.name, want,
             a.has_mask, given);
  return want;
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> forward_shape(const OpDef& op, std::span<const Ref> in,
                                                  const void* attrs) {
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  expected_inputs(op, a, 3, in.size());
  check_attention_inputs(op, in[0], in[1], in[2], a.has_mask ? &in[3] : nullptr);
  rules::SizesOf<Ref> out(in[0].sizes.begin(), in[0].sizes.end());
  out.back() = in[2].sizes.back();
  rules::SizesOf<Ref> lse(in[0].sizes.begin(), in[0].sizes.end() - 1);
  return {{std::move(out)}, {std::move(lse)}};
}

DType forward_dtype(const OpDef&, std::span<const MetaRef> in, const void*, size_t i) {
  return i == 0 ? in[0].dtype : attention_lse_dtype(in[0].dtype);
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> backward_shape(const OpDef& op, std::span<const Ref> in,
                                                   const void* attrs) {
  const auto& a = attrs_as<AttentionAttrs>(attrs);
  expected_inputs(op, a, 6, in.size());
  check_attention_inputs(op, in[1], in[2], in[3], a.has_mask ? &in[6] : nullptr);
  rules::SizesOf<Ref> out(in[1].sizes.begin(), in[1].sizes.end());
  out.back() = in[3].sizes.back();
  rules::SizesOf<Ref> lse(out.begin(), out.end() - 1);
  KILN_CHECK(std::equal(out.begin(), out.end(), in[0].sizes.begin(), in[0].sizes.end()) &&
                 std::equal(out.begin(), out.end(), in[4].sizes.begin(), in[4].sizes.end()) &&
                 std::equal(lse.begin(), lse.end(), in[5].sizes.begin(), in[5].sizes.end()),
             "{}: expected grad_out and out of shape {} and logsumexp of shape {}, got {}, {} and "
             "{}",
             op.name, shape_str(out), shape_str(lse), shape_str(in[0].sizes),
             shape_str(in[4].sizes), shape_str(in[5].sizes));
  KILN_CHECK(in[0].dtype == in[1].dtype && in[4].dtype == in[1].dtype &&
                 in[5].dtype == attention_lse_dtype(in[1].dtype),
             "{}: expected grad_out and out of dtype {} and logsumexp of dtype {}, got {}, {} and "
             "{}",
             op.name, in[1].dtype, attention_lse_dtype(in[1].dtype), in[0].dtype, in[4].dtype,
             in[5].dtype);
  std::vector<rules::GeometryOf<Ref>> res;
  for (size_t i = 1; i <= 3; ++i)
    res.push_back({rules::SizesOf<Ref>(in[i].sizes.begin(), in[i].sizes.end())});
  return res;
}

DType backward_dtype(const OpDef&, std::span<const MetaRef> in, const void*, size_t) {
  return in[1].dtype;
}

}  // namespace

void register_attention_ops(OpTable& table) {
  constexpr int kCpu = static_cast<int>(DispatchKey::CPU);
  OpDef& fwd = table.add<AttentionAttrs>("scaled_dot_product_flash_attention",
                                         {"query", "key", "value", "attn_mask"}, kInternal,
                                         "AttentionAttrs");
  fwd.variadic = true;  // attn_mask is there when has_mask is set
  fwd.max_outputs = 2;  // out and logsumexp
  rules::set_shape_rules(fwd, forward_shape<MetaRef>, forward_shape<SymMetaRef>);
  fwd.dtype = forward_dtype;
  fwd.compute[kCpu] = flash_attention_cpu;

  OpDef& bwd = table.add<AttentionAttrs>(
      "scaled_dot_product_flash_attention_backward",
      {"grad_out", "query", "key", "value", "out", "logsumexp", "attn_mask"}, kInternal,
      "AttentionAttrs");
  bwd.variadic = true;
  bwd.max_outputs = 3;  // grad_query, grad_key, grad_value
  rules::set_shape_rules(bwd, backward_shape<MetaRef>, backward_shape<SymMetaRef>);
  bwd.dtype = backward_dtype;
  bwd.compute[kCpu] = flash_attention_backward_cpu;
}

}  // namespace kiln
