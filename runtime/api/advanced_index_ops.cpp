#include "kiln/runtime/api/advanced_index_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/advanced_index.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

// The op's inputs after `fixed` (self, or self and values): one int64 tensor per indexed dim,
// and the dims they index (Note [Advanced index schema]).
struct ResolvedIndices {
  std::vector<Tensor> tensors;
  Shape dims;
};

ResolvedIndices resolve(const char* op, const Tensor& x, const IndexList& indices) {
  ResolvedIndices r;
  int64_t d = 0;
  for (const std::optional<Tensor>& entry : indices) {
    if (!entry.has_value() || !entry->defined()) {
      ++d;
      continue;
    }
    const Tensor& t = *entry;
    if (t.dtype() == kBool) {
      // A mask over dims [d, d + mask.dim()) stands for its nonzero positions there.
      KILN_CHECK(t.dim() > 0, "{}: a 0-dim bool index is not supported (shape {} indexed)", op,
                 shape_str(x.sizes()));
      KILN_CHECK(d + t.dim() <= x.dim(), "{}: too many indices for tensor of dimension {} (got {})",
                 op, x.dim(), d + t.dim());
      for (int64_t k = 0; k < t.dim(); ++k) {
        KILN_CHECK(t.size(k) == x.size(d + k),
                   "{}: The shape of the mask {} at index {} does not match the shape of the "
                   "indexed tensor {} at index {}",
                   op, shape_str(t.sizes()), k, shape_str(x.sizes()), d + k);
      }
      Tensor nz = nonzero(t);
      for (int64_t k = 0; k < t.dim(); ++k) {
        r.tensors.push_back(nz.select(1, k));
        r.dims.push_back(d + k);
      }
      d += t.dim();
      continue;
    }
    KILN_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32,
               "{}: tensors used as indices must be long, int or bool tensors, got {} (shape {})",
               op, t.dtype(), shape_str(t.sizes()));
    r.tensors.push_back(t.dtype() == kInt64 ? t : t.to(kInt64));
    r.dims.push_back(d++);
  }
  KILN_CHECK(d <= x.dim(), "{}: too many indices for tensor of dimension {} (got {})", op, x.dim(),
             d);
  return r;
}

std::vector<Tensor> inputs_of(std::initializer_list<Tensor> fixed, std::vector<Tensor> indices) {
  std::vector<Tensor> in(fixed);
  in.insert(in.end(), std::make_move_iterator(indices.begin()),
            std::make_move_iterator(indices.end()));
  return in;
}

}  // namespace

Tensor index(const Tensor& x, const IndexList& indices, std::source_location loc) {
  CallSiteScope site(loc);
  ResolvedIndices r = resolve("index", x, indices);
  IndexAttrs a{std::move(r.dims)};
  return call_op(KILN_OP("index"), inputs_of({x}, std::move(r.tensors)), &a)[0];
}

Tensor index_put(const Tensor& x, const IndexList& indices, const Tensor& values, bool accumulate,
                 std::source_location loc) {
  CallSiteScope site(loc);
  ResolvedIndices r = resolve("index_put", x, indices);
  IndexPutAttrs a{std::move(r.dims), accumulate};
  return call_op(KILN_OP("index_put"), inputs_of({x, values}, std::move(r.tensors)), &a)[0];
}

const Tensor& index_put_(const Tensor& x, const IndexList& indices, const Tensor& values,
                         bool accumulate, std::source_location loc) {
  CallSiteScope site(loc);
  ResolvedIndices r = resolve("index_put_", x, indices);
  IndexPutAttrs a{std::move(r.dims), accumulate};
  call_op(KILN_OP("index_put_"), inputs_of({x, values}, std::move(r.tensors)), &a);
  return x;
}

Tensor masked_select(const Tensor& x, const Tensor& mask, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("masked_select"), {x, mask}, NoAttrs{});
}

Tensor nonzero(const Tensor& x, std::source_location loc) {
  CallSiteScope site(loc);
  return call_op1(KILN_OP("nonzero"), {x}, NoAttrs{});
}

std::vector<Tensor> nonzero_tuple(const Tensor& x, std::source_location loc) {
  // torch indexes a 0-dim tensor as a 1-element 1-D one here.
  if (x.dim() == 0) return nonzero_tuple(x.reshape({1}), loc);
  Tensor nz = nonzero(x, loc);
  CallSiteScope site(loc);
  std::vector<Tensor> out;
  for (int64_t d = 0; d < x.dim(); ++d)
    out.push_back(nz.select(1, d));
  return out;
}

}  // namespace kiln
