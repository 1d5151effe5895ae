// OpInfo entry of scaled_dot_product_attention (the fused flash-attention ops and their
// backward): causal, bool and additive masks broadcast over batch and heads, L != S, Ev != E,
// inputs transposed from [B, S, H, E], tiles that do not divide L or S, fully masked rows (0,
// as torch's math path), size 0 and the 16-bit dtypes. The reference is the definition,
// softmax(q k^T scale + mask) v, in double with loops, one query row at a time.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

// t's element at the full index `idx` ([..., a, b]), broadcasting t's leading dims from the right.
double at_broadcast(const RefTensor& t, const Index& idx) {
  Index own(t.sizes.size());
  size_t shift = idx.size() - t.sizes.size();
  for (size_t d = 0; d < t.sizes.size(); ++d)
    own[d] = t.sizes[d] == 1 ? 0 : idx[d + shift];
  return t.at(own);
}

struct Options {
  bool causal = false;
  std::optional<double> scale;
};

// in = {q, k, v[, mask]}: softmax over the keys of q.k * scale (+ mask, or -inf where a bool
// mask is false or j > i with causal), times v; rounded to q's dtype.
RefTensor ref_attention(const std::vector<RefTensor>& in, const Options& o) {
  const RefTensor &q = in[0], &k = in[1], &v = in[2];
  const RefTensor* mask = in.size() > 3 ? &in[3] : nullptr;
  size_t nd = q.sizes.size();
  int64_t L = q.sizes[nd - 2], E = q.sizes[nd - 1], S = k.sizes[nd - 2], Ev = v.sizes[nd - 1];
  Shape batch(q.sizes.begin(), q.sizes.end() - 2);
  for (const RefTensor* t : {&k, &v})
    for (size_t d = 0; d + 2 < nd; ++d)
      batch[d] = std::max(batch[d], t->sizes[d]);
  double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  RefTensor out{batch, {}, q.dtype};
  out.sizes.push_back(L);
  out.sizes.push_back(Ev);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < ref_numel(batch); ++b) {
    Index bi = unravel(b, batch);
    auto idx = [&](int64_t x, int64_t y) {
      Index i = bi;
      i.push_back(x);
      i.push_back(y);
      return i;
    };
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(static_cast<size_t>(S));
      double mx = neg_inf;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e)
          dot += at_broadcast(q, idx(i, e)) * at_broadcast(k, idx(j, e));
        double sc = dot * scale;
        if (o.causal && j > i) sc = neg_inf;
        if (mask != nullptr) {
          double m = at_broadcast(*mask, idx(i, j));
          if (mask->dtype == kiln::kBool) {
            if (m == 0) sc = neg_inf;
          } else {
            sc += m;
          }
        }
        s[static_cast<size_t>(j)] = sc;
        mx = std::max(mx, sc);
      }
      // Every key masked: weights of 0, as torch's safe softmax (and as an empty sum for S = 0).
      bool none = mx == neg_inf;
      double total = 0;
      for (double& x : s) {
        x = none ? 0.0 : std::exp(x - mx);
        total += x;
      }
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j)
          acc += none ? 0.0 : s[static_cast<size_t>(j)] / total * at_broadcast(v, idx(j, e));
        out.data.push_back(kiln::is_floating(q.dtype) ? round_to(acc, q.dtype) : acc);
      }
    }
  }
  return out;
}

struct Case {
  std::string name;
  Shape q, k, v;
  std::optional<Shape> mask;  // with mask_dtype
  DType mask_dtype = kiln::kBool;
  Options o;
};

// A bool mask with at least one true per row, except rows listed in `dead`.
Tensor bool_mask(const Shape& shape, uint32_t seed, bool every_row_alive) {
  Tensor r = make_input(shape, kiln::kFloat32, Layout::Contiguous, 0, 1, seed);
  Tensor m = r.gt(0.4);
  if (!every_row_alive) return m;
  // Key 0 always takes part, so no row is fully masked.
  Tensor first = kiln::zeros(shape, kiln::TensorOptions(kiln::kBool));
  first.narrow(-1, 0, 1).fill_(1);
  return kiln::logical_or(m, first);
}

Sample attention_sample(const std::string& name, std::vector<Tensor> inputs, Options o) {
  return make_sample(
      name, std::move(inputs),
      [o](const std::vector<Tensor>& in) {
        Tensor mask = in.size() > 3 ? in[3] : Tensor();
        return std::vector{
            kiln::scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, o.causal, o.scale)};
      },
      [o](const std::vector<RefTensor>& in) { return std::vector{ref_attention(in, o)}; });
}

std::vector<Sample> attention_samples() {
  std::vector<Sample> out;
  uint32_t seed = 5100;
  Options causal{true, std::nullopt};
  const std::vector<Case> cases = {
      {"basic", {1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}},
      {"causal_square", {1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 2}, {}, kiln::kBool, causal},
      {"causal_L_gt_S", {2, 5, 3}, {2, 3, 3}, {2, 3, 2}, {}, kiln::kBool, causal},
      {"causal_L_lt_S", {2, 3, 3}, {2, 6, 3}, {2, 6, 4}, {}, kiln::kBool, causal},
      {"scale", {2, 3, 4}, {2, 5, 4}, {2, 5, 2}, {}, kiln::kBool, {false, 0.7}},
      {"two_dims", {4, 3}, {6, 3}, {6, 5}},
      {"bool_mask_over_batch_heads", {2, 2, 3, 2}, {2, 2, 4, 2}, {2, 2, 4, 3}, Shape{3, 4}},
      {"bool_mask_per_batch", {2, 2, 3, 2}, {2, 2, 4, 2}, {2, 2, 4, 3}, Shape{2, 1, 3, 4}},
      {"additive_mask_over_heads",
       {2, 2, 3, 2},
       {2, 2, 4, 2},
       {2, 2, 4, 3},
       Shape{2, 1, 3, 4},
       kiln::kFloat32},
      {"additive_mask_row", {1, 2, 3, 3}, {1, 2, 5, 3}, {1, 2, 5, 2}, Shape{1, 5}, kiln::kFloat32},
      {"batch_broadcast_kv", {3, 2, 3, 2}, {1, 2, 4, 2}, {1, 2, 4, 3}},
      // Past one 64 x 64 tile in both directions, with causal and masked tiles.
      {"tiles_causal", {1, 70, 8}, {1, 70, 8}, {1, 70, 5}, {}, kiln::kBool, causal},
      {"tiles_L_ne_S", {2, 67, 6}, {2, 130, 6}, {2, 130, 3}},
      {"tiles_bool_mask", {1, 66, 4}, {1, 129, 4}, {1, 129, 4}, Shape{66, 129}},
      {"size0_L", {2, 0, 3}, {2, 4, 3}, {2, 4, 2}},
      {"size0_S", {2, 3, 3}, {2, 0, 3}, {2, 0, 2}},
      {"size0_batch", {0, 2, 3, 3}, {0, 2, 4, 3}, {0, 2, 4, 2}},
  };
  for (DType dt : {kiln::kFloat32, kiln::kFloat64}) {
    for (const Case& c : cases) {
      std::vector<Tensor> in = {make_input(c.q, dt, Layout::Contiguous, -2, 2, seed++),
                                make_input(c.k, dt, Layout::Contiguous, -2, 2, seed++),
                                make_input(c.v, dt, Layout::Contiguous, -2, 2, seed++)};
      if (c.mask.has_value()) {
        in.push_back(c.mask_dtype == kiln::kBool
                         ? bool_mask(*c.mask, seed++, true)
                         : make_input(*c.mask, dt, Layout::Contiguous, -3, 1, seed++));
      }
      out.push_back(
          attention_sample(fmt::format("{}_{}", kiln::dtype_name(dt), c.name), std::move(in), c.o));
    }
  }
  // Inputs transposed from [B, S, H, E], the layout a linear projection produces.
  for (DType dt : {kiln::kFloat32, kiln::kFloat64}) {
    auto heads_first = [&](Shape bshe) {
      return make_input(bshe, dt, Layout::Contiguous, -2, 2, seed++).transpose(1, 2);
    };
    out.push_back(attention_sample(
        fmt::format("{}_transposed_from_bshe", kiln::dtype_name(dt)),
        {heads_first({1, 3, 2, 4}), heads_first({1, 5, 2, 4}), heads_first({1, 5, 2, 3})}, {}));
    out.push_back(attention_sample(
        fmt::format("{}_transposed_causal", kiln::dtype_name(dt)),
        {heads_first({2, 4, 2, 2}), heads_first({2, 4, 2, 2}), heads_first({2, 4, 2, 3})}, causal));
    out.push_back(attention_sample(fmt::format("{}_transposed_last_dims", kiln::dtype_name(dt)),
                                   {make_input({2, 3, 4}, dt, Layout::Transposed, -2, 2, seed++),
                                    make_input({2, 5, 4}, dt, Layout::Strided, -2, 2, seed++),
                                    make_input({2, 5, 3}, dt, Layout::Transposed, -2, 2, seed++)},
                                   {}));
  }
  // Rows with every key masked give 0 (torch's math path, whose safe softmax gives those rows
  // weights of 0); the other rows are unaffected. The bool sample is gradchecked: such a row has
  // no gradient.
  {
    Tensor m = bool_mask({3, 4}, seed++, true);
    m.narrow(0, 1, 1).fill_(0);
    out.push_back(attention_sample(
        "float32_fully_masked_bool_row",
        {make_input({2, 3, 2}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 4, 2}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 4, 3}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++), m},
        {}));
    Tensor rows = bool_mask({70, 80}, seed++, true);
    rows.narrow(0, 3, 1).fill_(0);
    rows.narrow(0, 66, 1).fill_(0);
    out.push_back(attention_sample(
        "float64_fully_masked_rows_in_tiles",
        {make_input({2, 70, 3}, kiln::kFloat64, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 80, 3}, kiln::kFloat64, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 80, 2}, kiln::kFloat64, Layout::Contiguous, -2, 2, seed++), rows},
        {}));
    Tensor add = make_input({3, 4}, kiln::kFloat32, Layout::Contiguous, -1, 1, seed++);
    add.narrow(0, 2, 1).fill_(-std::numeric_limits<double>::infinity());
    out.push_back(attention_sample(
        "float32_fully_masked_additive_row",
        {make_input({2, 3, 2}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 4, 2}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++),
         make_input({2, 4, 3}, kiln::kFloat32, Layout::Contiguous, -2, 2, seed++), add},
        {}));
  }
  // 16-bit inputs compute in float and round once.
  for (DType dt : {kiln::kFloat16, kiln::kBFloat16}) {
    out.push_back(
        attention_sample(fmt::format("{}_causal_mask", kiln::dtype_name(dt)),
                         {make_input({2, 2, 5, 4}, dt, Layout::Contiguous, -2, 2, seed++),
                          make_input({2, 2, 5, 4}, dt, Layout::Contiguous, -2, 2, seed++),
                          make_input({2, 2, 5, 3}, dt, Layout::Contiguous, -2, 2, seed++)},
                         causal));
    out.push_back(attention_sample(fmt::format("{}_additive_mask", kiln::dtype_name(dt)),
                                   {make_input({2, 3, 4}, dt, Layout::Contiguous, -2, 2, seed++),
                                    make_input({2, 70, 4}, dt, Layout::Contiguous, -2, 2, seed++),
                                    make_input({2, 70, 3}, dt, Layout::Contiguous, -2, 2, seed++),
                                    make_input({3, 70}, dt, Layout::Contiguous, -2, 0, seed++)},
                                   {}));
  }
  return out;
}

KILN_REGISTER_OPINFO(scaled_dot_product_attention, [] {
  OpInfo info{
      "scaled_dot_product_attention",
      {"scaled_dot_product_flash_attention", "scaled_dot_product_flash_attention_backward"}};
  info.samples = attention_samples;
  return info;
}());

}  // namespace
}  // namespace kiln_test
