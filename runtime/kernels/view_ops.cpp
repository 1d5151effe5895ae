// View ops: outputs share input 0's storage; each shape rule computes the view's sizes,
// strides and storage offset, so the same rule serves CPU, CUDA and Meta tensors alike. Also
// slice_backward and select_backward, the out-of-place gradients of slice and select.
#include <algorithm>
#include <optional>
#include <type_traits>

#include "kiln/base/error.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/view_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/sym_assumptions.h"

namespace kiln {

Shape infer_size(std::string_view op, ShapeRef requested, int64_t numel) {
  Shape out(requested.begin(), requested.end());
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer_at < 0, "{}: only one dimension can be inferred in size {}", op,
                 shape_str(requested));
      infer_at = static_cast<int>(i);
    } else {
      KILN_CHECK(out[i] >= 0, "{}: invalid size {} in {}", op, out[i], shape_str(requested));
      known *= out[i];
    }
  }
  if (infer_at >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0, "{}: shape {} is invalid for input of size {}", op,
               shape_str(requested), numel);
    out[static_cast<size_t>(infer_at)] = numel / known;
  } else {
    KILN_CHECK(known == numel, "{}: shape {} is invalid for input of size {}", op,
               shape_str(requested), numel);
  }
  return out;
}

std::optional<Shape> view_strides(ShapeRef sizes, ShapeRef strides, ShapeRef new_sizes) {
  Shape out(new_sizes.size());
  if (sizes.empty() || shape_numel(sizes) == 0) return contiguous_strides(new_sizes);
  // Walk old dims from the innermost, grouping those that are contiguous with each other into
  // "chunks"; each chunk must be covered exactly by a run of new dims.
  auto view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    bool chunk_ends =
        d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

namespace {

std::vector<OutputGeometry> view_shape(const OpDef& op, std::span<const MetaRef> in,
                                       const void* attrs) {
  const MetaRef& x = in[0];
  Shape sizes = infer_size(op.name, expect_ints(attrs_as<SizeAttrs>(attrs).size, op.name),
                           shape_numel(x.sizes));
  std::optional<Shape> strides = view_strides(x.sizes, x.strides, sizes);
  KILN_CHECK(strides.has_value(),
             "{}: size {} is not compatible with the input's size {} and stride {} (at least one "
             "dimension spans across two contiguous subspaces). Use reshape() instead.",
             op.name, shape_str(sizes), shape_str(x.sizes), shape_str(x.strides));
  return {OutputGeometry{std::move(sizes), std::move(*strides), x.storage_offset}};
}

std::vector<OutputGeometry> expand_shape(const OpDef& op, std::span<const MetaRef> in,
                                         const void* attrs) {
  const MetaRef& x = in[0];
  const Shape req = expect_ints(attrs_as<SizeAttrs>(attrs).size, op.name);
  KILN_CHECK(req.size() >= x.sizes.size(),
             "{}: the number of sizes provided ({}) must be greater or equal to the number of "
             "dimensions in the tensor ({}); size {} vs tensor shape {}",
             op.name, req.size(), x.sizes.size(), shape_str(req), shape_str(x.sizes));
  size_t lead = req.size() - x.sizes.size();
  OutputGeometry g{Shape(req.size()), Shape(req.size()), x.storage_offset};
  for (size_t i = 0; i < req.size(); ++i) {
    if (i < lead) {
      KILN_CHECK(req[i] >= 0, "{}: size {} is invalid for a new leading dimension ({})", op.name,
                 req[i], shape_str(req));
      g.sizes[i] = req[i];
      g.strides[i] = 0;
      continue;
    }
    int64_t have = x.sizes[i - lead];
    int64_t want = req[i] == -1 ? have : req[i];
    KILN_CHECK(want >= 0,
               "{}: the expanded size {} at dimension {} is invalid (only -1 keeps a size); "
               "target sizes {}, tensor sizes {}",
               op.name, req[i], i, shape_str(req), shape_str(x.sizes));
    KILN_CHECK(have == want || have == 1,
               "{}: the expanded size of the tensor ({}) must match the existing size ({}) at "
               "non-singleton dimension {}. Target sizes: {}. Tensor sizes: {}",
               op.name, want, have, i, shape_str(req), shape_str(x.sizes));
    g.sizes[i] = want;
    g.strides[i] = have == want ? x.strides[i - lead] : 0;
  }
  return {std::move(g)};
}

SymInt sym_numel(std::span<const SymInt> sizes) {
  SymInt n = 1;
  for (const SymInt& s : sizes)
    n *= s;
  return n;
}

// Whether `strides` lay `sizes` out row-major (a size-1 dim's stride does not matter).
bool sym_contiguous(std::span<const SymInt> sizes, std::span<const SymInt> strides) {
  if (strides.empty()) return true;
  SymShape expected = contiguous_strides(sizes);
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!(sizes[d] == SymInt(1)) && !(strides[d] == expected[d])) return false;
  return true;
}

// view over symbolic sizes (Note [Symbolic size attributes]). Sizes are compared as
// expressions, so a size that only matches for some values of the symbols is refused (and the
// tracer specializes). The integer rule's stride search (view_strides) is not repeated here: a
// non-contiguous input views only to its own sizes.
std::vector<SymOutputGeometry> view_sym_shape(const OpDef& op, std::span<const SymMetaRef> in,
                                              const void* attrs) {
  const SymMetaRef& x = in[0];
  SymShape sizes = attrs_as<SizeAttrs>(attrs).size;
  SymInt numel = sym_numel(x.sizes), known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == SymInt(-1)) {
      KILN_CHECK(infer_at < 0, "{}: only one dimension can be inferred in size {}", op.name,
                 shape_str(sizes));
      infer_at = static_cast<int>(i);
    } else {
      KILN_CHECK(!sizes[i].maybe_int() || *sizes[i].maybe_int() >= 0, "{}: invalid size {} in {}",
                 op.name, sizes[i], shape_str(sizes));
      known *= sizes[i];
    }
  }
  if (infer_at >= 0) {
    KILN_CHECK(!(known == SymInt(0)) && mod(numel, known) == SymInt(0),
               "{}: shape {} is invalid for input of size {}", op.name, shape_str(sizes), numel);
    sizes[static_cast<size_t>(infer_at)] = floordiv(numel, known);
  } else {
    KILN_CHECK(known == numel, "{}: shape {} is invalid for input of size {}", op.name,
               shape_str(sizes), numel);
  }
  SymShape strides;
  if (sym_contiguous(x.sizes, x.strides)) {
    strides = contiguous_strides(sizes);
  } else {
    KILN_CHECK(SymShape(x.sizes.begin(), x.sizes.end()) == sizes,
               "{}: a view of a non-contiguous input of sizes {} to {} is not supported over "
               "symbolic sizes",
               op.name, shape_str(x.sizes), shape_str(sizes));
    strides.assign(x.strides.begin(), x.strides.end());
  }
  return {SymOutputGeometry{std::move(sizes), std::move(strides), x.storage_offset}};
}

// expand over symbolic sizes: a dim keeps its size (-1 or the same expression) or grows from 1.
std::vector<SymOutputGeometry> expand_sym_shape(const OpDef& op, std::span<const SymMetaRef> in,
                                                const void* attrs) {
  const SymMetaRef& x = in[0];
  const SymShape& req = attrs_as<SizeAttrs>(attrs).size;
  KILN_CHECK(req.size() >= x.sizes.size(),
             "{}: the number of sizes provided ({}) must be greater or equal to the number of "
             "dimensions in the tensor ({}); size {} vs tensor shape {}",
             op.name, req.size(), x.sizes.size(), shape_str(req), shape_str(x.sizes));
  size_t lead = req.size() - x.sizes.size();
  SymShape strides = x.strides.empty() ? contiguous_strides(x.sizes)
                                       : SymShape(x.strides.begin(), x.strides.end());
  SymOutputGeometry g{SymShape(req.size()), SymShape(req.size()), x.storage_offset};
  for (size_t i = 0; i < req.size(); ++i) {
    bool negative = req[i].maybe_int() && *req[i].maybe_int() < 0;
    if (i < lead) {
      KILN_CHECK(!negative, "{}: size {} is invalid for a new leading dimension ({})", op.name,
                 req[i], shape_str(req));
      g.sizes[i] = req[i];
      g.strides[i] = 0;
      continue;
    }
    const SymInt& have = x.sizes[i - lead];
    SymInt want = req[i] == SymInt(-1) ? have : req[i];
    KILN_CHECK(!(want.maybe_int() && *want.maybe_int() < 0),
               "{}: the expanded size {} at dimension {} is invalid (only -1 keeps a size); "
               "target sizes {}, tensor sizes {}",
               op.name, req[i], i, shape_str(req), shape_str(x.sizes));
    KILN_CHECK(have == want || have == SymInt(1),
               "{}: the expanded size of the tensor ({}) must match the existing size ({}) at "
               "non-singleton dimension {}. Target sizes: {}. Tensor sizes: {}",
               op.name, want, have, i, shape_str(req), shape_str(x.sizes));
    g.sizes[i] = want;
    g.strides[i] = have == want ? strides[i - lead] : SymInt(0);
  }
  return {std::move(g)};
}

// The rules below are templates over the size type (rules::GeometryOf, Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> transpose_shape(const OpDef& op, std::span<const Ref> in,
                                                    const void* attrs) {
  const auto& a = attrs_as<TransposeAttrs>(attrs);
  auto g = rules::geometry_of(in[0]);
  auto nd = static_cast<int64_t>(g.sizes.size());
  int64_t d0 = wrap_dim(op.name, a.dim0, nd), d1 = wrap_dim(op.name, a.dim1, nd);
  if (nd > 0) {
    std::swap(g.sizes[d0], g.sizes[d1]);
    std::swap(g.strides[d0], g.strides[d1]);
  }
  return {std::move(g)};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> permute_shape(const OpDef& op, std::span<const Ref> in,
                                                  const void* attrs) {
  using Sizes = rules::SizesOf<Ref>;
  const Shape& dims = attrs_as<DimsAttrs>(attrs).dims;
  const Ref& x = in[0];
  auto nd = static_cast<int64_t>(x.sizes.size());
  KILN_CHECK(static_cast<int64_t>(dims.size()) == nd,
             "{}: number of dims {} doesn't match the tensor's {} dims (dims {}, shape {})",
             op.name, dims.size(), nd, shape_str(dims), shape_str(x.sizes));
  rules::GeometryOf<Ref> g{Sizes(dims.size()), Sizes(dims.size()), x.storage_offset};
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(op.name, dims[i], nd);
    KILN_CHECK(!seen[d], "{}: dim {} repeats in dims {}", op.name, d, shape_str(dims));
    seen[d] = true;
    g.sizes[i] = x.sizes[d];
    g.strides[i] = x.strides[d];
  }
  return {std::move(g)};
}

// A symbolic size is never 1 (Note [Symbolic sizes]), so it is never squeezed.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> squeeze_shape(const OpDef& op, std::span<const Ref> in,
                                                  const void* attrs) {
  const Shape& dims = attrs_as<DimsAttrs>(attrs).dims;
  const Ref& x = in[0];
  auto nd = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> drop(x.sizes.size(), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op.name, d, nd);
    if (nd > 0) drop[w] = true;
  }
  rules::GeometryOf<Ref> g{{}, {}, x.storage_offset};
  for (int64_t d = 0; d < nd; ++d) {
    if (drop[d] && x.sizes[d] == 1) continue;  // as torch: a dim that isn't size 1 stays
    g.sizes.push_back(x.sizes[d]);
    g.strides.push_back(x.strides[d]);
  }
  return {std::move(g)};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> unsqueeze_shape(const OpDef& op, std::span<const Ref> in,
                                                    const void* attrs) {
  const Ref& x = in[0];
  auto nd = static_cast<int64_t>(x.sizes.size());
  int64_t d = wrap_dim(op.name, attrs_as<DimAttrs>(attrs).dim, nd + 1);
  using Size = typename rules::SizesOf<Ref>::value_type;
  auto g = rules::geometry_of(x);
  Size stride = d >= nd ? Size(1) : x.sizes[d] * x.strides[d];
  g.sizes.insert(g.sizes.begin() + d, 1);
  g.strides.insert(g.strides.begin() + d, stride);
  return {std::move(g)};
}

// A slice bound as Python slices take it (negative counts from the end, out of range clamps)
// against a dim of `size`. Over a symbolic size the clamp must be known for every value of the
// symbols or assumed (Note [Assumed size facts]): `x[:4]` is 4 rows given s0 >= 4, and all of
// them given s0 <= 4. A bound whose clamp is neither refuses, and the tracer specializes.
int64_t clamp_slice_bound(int64_t v, int64_t size) {
  if (v < 0) v += size;
  return std::clamp<int64_t>(v, 0, size);
}
SymInt clamp_slice_bound(int64_t v, const SymInt& size) {
  if (size.maybe_int()) return clamp_slice_bound(v, *size.maybe_int());
  if (v >= INT64_MAX / 2) return size;
  if (v >= 0) {
    if (rules::at_least(size, v)) return v;
    if (SymAssumptions::assume(SymFact{size, SymFact::Relation::kLe, v})) return size;
  } else {
    if (rules::at_least(size, -v)) return size + v;
    if (SymAssumptions::assume(SymFact{size, SymFact::Relation::kLe, -v})) return 0;
  }
  KILN_ERROR("slice: bound {} against the symbolic size {} depends on its value", v, size);
}
// Note [Symbolic slice bounds]
// A bound may itself be an expression over the symbols (pos[:x.size(0)] in a trace, or a
// gradient's slab between two symbolic pieces). It is clamped as Python clamps, with each
// comparison known for every value of the symbols or assumed: pos[:s0] against 64 rows is s0
// rows given s0 <= 64, a fact the plan then checks at every call.
SymInt clamp_slice_bound(const SymInt& v, const SymInt& size) {
  if (std::optional<int64_t> known = v.maybe_int()) return clamp_slice_bound(*known, size);
  if (rules::le_or_assumed(0, v)) {
    if (rules::le_or_assumed(v, size)) return v;
    if (rules::le_or_assumed(size, v)) return size;
  } else if (rules::le_or_assumed(v, -1)) {
    if (rules::le_or_assumed(0, size + v)) return size + v;
    if (rules::le_or_assumed(size + v, 0)) return 0;
  }
  KILN_ERROR("slice: bound {} against the size {} depends on the symbols' values", v, size);
}

// The rules below are templates over the size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> slice_shape(const OpDef& op, std::span<const Ref> in,
                                                const void* attrs) {
  using Size = typename rules::SizesOf<Ref>::value_type;
  const auto& a = attrs_as<SliceAttrs>(attrs);
  const Ref& x = in[0];
  auto nd = static_cast<int64_t>(x.sizes.size());
  KILN_CHECK(nd > 0, "{}: cannot slice a 0-dim tensor", op.name);
  int64_t d = wrap_dim(op.name, a.dim, nd);
  KILN_CHECK(a.step > 0, "{}: slice step must be positive, got {}", op.name, a.step);
  const Size& size = x.sizes[d];
  Size start, end;
  if constexpr (std::is_same_v<Size, int64_t>) {
    start = clamp_slice_bound(a.start.expect_int(op.name), size);
    end = clamp_slice_bound(a.end.expect_int(op.name), size);
  } else {
    start = clamp_slice_bound(a.start, size);
    end = clamp_slice_bound(a.end, size);
  }
  auto g = rules::geometry_of(x);
  if constexpr (std::is_same_v<Size, int64_t>) {
    end = std::max(end, start);
    // (end - start - 1) / step + 1 rather than a rounded-up division, which overflows for a
    // step near INT64_MAX. A dimension of one element keeps its stride: the step never applies.
    g.sizes[d] = end == start ? 0 : (end - start - 1) / a.step + 1;
    g.strides[d] = g.sizes[d] > 1 ? x.strides[d] * a.step : x.strides[d];
  } else if (rules::at_least(end - start, 0)) {
    // Floor division: an empty slice (end == start) gives 0.
    g.sizes[d] = floordiv(end - start - 1, a.step) + 1;
    g.strides[d] = a.step == 1 ? x.strides[d] : x.strides[d] * a.step;
  } else {
    // A reversed slice ([4:2]) is empty, as Python's.
    KILN_CHECK(rules::at_least(start - end, 0),
               "{}: slice [{}, {}) of the symbolic size {} may be empty or reversed", op.name,
               start, end, size);
    g.sizes[d] = 0;
  }
  g.storage_offset += start * x.strides[d];
  return {std::move(g)};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> select_shape(const OpDef& op, std::span<const Ref> in,
                                                 const void* attrs) {
  using Size = typename rules::SizesOf<Ref>::value_type;
  const auto& a = attrs_as<SelectAttrs>(attrs);
  const Ref& x = in[0];
  auto nd = static_cast<int64_t>(x.sizes.size());
  KILN_CHECK(nd > 0, "{}: cannot select from a 0-dim tensor", op.name);
  int64_t d = wrap_dim(op.name, a.dim, nd);
  const Size& size = x.sizes[d];
  // Over a symbolic size, an index in bounds for every value of it (-2..1) or assumed in bounds
  // (Note [Assumed size facts]).
  std::optional<int64_t> known = SymInt(size).maybe_int();
  KILN_CHECK(known ? a.index >= -*known && a.index < *known
                   : rules::at_least(size, a.index < 0 ? -a.index : a.index + 1),
             "{}: index {} is out of bounds for dimension {} with size {} (shape {})", op.name,
             a.index, d, size, shape_str(x.sizes));
  Size index = a.index < 0 ? size + a.index : Size(a.index);
  auto g = rules::geometry_of(x);
  g.storage_offset += index * x.strides[d];
  g.sizes.erase(g.sizes.begin() + d);
  g.strides.erase(g.strides.begin() + d);
  return {std::move(g)};
}

// ---- slice_backward / select_backward ----
// Their shape rules run the forward view's rule on a contiguous tensor of input_sizes, which
// both checks the attributes and gives the geometry of the region the gradient fills.

// Templates over the size type (Note [Symbolic sizes]): the attributes' input_sizes are a
// SymShape, integers at an eager call (Note [Symbolic size attributes]).
template <class Ref, class Attrs>
rules::GeometryOf<Ref> backward_region(const OpDef& op, const Ref& grad,
                                       const rules::SizesOf<Ref>& input_sizes, const Attrs& forward,
                                       rules::RuleOf<Ref> forward_rule) {
  using Sizes = rules::SizesOf<Ref>;
  Sizes strides = contiguous_strides(input_sizes);
  const Ref in{input_sizes, strides, 0, grad.dtype, grad.device};
  auto g = std::move(forward_rule(op, std::span<const Ref>(&in, 1), &forward)[0]);
  KILN_CHECK(std::equal(g.sizes.begin(), g.sizes.end(), grad.sizes.begin(), grad.sizes.end()),
             "{}: grad of shape {} does not match the shape {} that the forward op gives for an "
             "input of shape {}",
             op.name, shape_str(grad.sizes), shape_str(g.sizes), shape_str(input_sizes));
  return g;
}

template <class Ref>
rules::SizesOf<Ref> input_sizes_of(const OpDef& op, const SymShape& sizes) {
  if constexpr (std::is_same_v<Ref, MetaRef>) {
    return expect_ints(sizes, op.name);
  } else {
    return sizes;
  }
}

SliceAttrs forward_slice(const SliceBackwardAttrs& a) {
  return {a.dim, a.start, a.end, a.step};
}
SelectAttrs forward_select(const SelectBackwardAttrs& a) {
  return {a.dim, a.index};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> slice_backward_shape(const OpDef& op, std::span<const Ref> in,
                                                         const void* attrs) {
  const auto& a = attrs_as<SliceBackwardAttrs>(attrs);
  auto sizes = input_sizes_of<Ref>(op, a.input_sizes);
  backward_region<Ref>(op, in[0], sizes, forward_slice(a), slice_shape<Ref>);
  return {{std::move(sizes)}};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> select_backward_shape(const OpDef& op, std::span<const Ref> in,
                                                          const void* attrs) {
  const auto& a = attrs_as<SelectBackwardAttrs>(attrs);
  auto sizes = input_sizes_of<Ref>(op, a.input_sizes);
  backward_region<Ref>(op, in[0], sizes, forward_select(a), select_shape<Ref>);
  return {{std::move(sizes)}};
}

// Zero-fills the (fresh, contiguous) output, then copies grad into the region. The region is
// a view built here from the rule's geometry, not through the dispatcher: these are the
// kernel's own writes to its own output.
void fill_region(const Tensor& out, const Tensor& grad, const OutputGeometry& g) {
  fill_into(out, 0);
  const TensorImpl* o = out.impl();
  Tensor region(std::make_shared<TensorImpl>(o->storage(), o->dtype(), g.sizes, g.strides,
                                             o->storage_offset() + g.storage_offset));
  copy_into(region, grad);
}

void slice_backward_kernel(const OpDef& op, std::span<const Tensor> outputs,
                           std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<SliceBackwardAttrs>(attrs);
  fill_region(outputs[0], inputs[0],
              backward_region<MetaRef>(op, MetaRef::of(inputs[0]),
                                       input_sizes_of<MetaRef>(op, a.input_sizes), forward_slice(a),
                                       slice_shape<MetaRef>));
}

void select_backward_kernel(const OpDef& op, std::span<const Tensor> outputs,
                            std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<SelectBackwardAttrs>(attrs);
  fill_region(outputs[0], inputs[0],
              backward_region<MetaRef>(op, MetaRef::of(inputs[0]),
                                       input_sizes_of<MetaRef>(op, a.input_sizes),
                                       forward_select(a), select_shape<MetaRef>));
}

template <class Attrs>
OpDef& def_view(OpTable& table, const char* name, const char* attrs_type, ShapeRule shape) {
  OpDef& op = table.add<Attrs>(name, {"self"}, kView | kRecomputable, attrs_type);
  op.shape = shape;
  op.dtype = rules::same_dtype;
  return op;
}

}  // namespace

void register_view_ops(OpTable& table) {
  def_view<SizeAttrs>(table, "view", "SizeAttrs", view_shape).sym_shape = view_sym_shape;
  def_view<SizeAttrs>(table, "expand", "SizeAttrs", expand_shape).sym_shape = expand_sym_shape;
  rules::set_shape_rules(def_view<TransposeAttrs>(table, "transpose", "TransposeAttrs", nullptr),
                         transpose_shape<MetaRef>, transpose_shape<SymMetaRef>);
  rules::set_shape_rules(def_view<DimsAttrs>(table, "permute", "DimsAttrs", nullptr),
                         permute_shape<MetaRef>, permute_shape<SymMetaRef>);
  rules::set_shape_rules(def_view<DimsAttrs>(table, "squeeze", "DimsAttrs", nullptr),
                         squeeze_shape<MetaRef>, squeeze_shape<SymMetaRef>);
  rules::set_shape_rules(def_view<DimAttrs>(table, "unsqueeze", "DimAttrs", nullptr),
                         unsqueeze_shape<MetaRef>, unsqueeze_shape<SymMetaRef>);
  rules::set_shape_rules(def_view<SliceAttrs>(table, "slice", "SliceAttrs", nullptr),
                         slice_shape<MetaRef>, slice_shape<SymMetaRef>);
  rules::set_shape_rules(def_view<SelectAttrs>(table, "select", "SelectAttrs", nullptr),
                         select_shape<MetaRef>, select_shape<SymMetaRef>);

  // The gradients of slice and select (see SliceBackwardAttrs); their derivatives are in
  // runtime/autograd/derivatives/shape_derivatives.cpp.
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& slice_bw = table.add<SliceBackwardAttrs>("slice_backward", {"grad"},
                                                  kRecomputable | kInternal, "SliceBackwardAttrs");
  rules::set_shape_rules(slice_bw, slice_backward_shape<MetaRef>, slice_backward_shape<SymMetaRef>);
  slice_bw.dtype = rules::same_dtype;
  slice_bw.compute[cpu] = slice_backward_kernel;

  OpDef& select_bw = table.add<SelectBackwardAttrs>(
      "select_backward", {"grad"}, kRecomputable | kInternal, "SelectBackwardAttrs");
  rules::set_shape_rules(select_bw, select_backward_shape<MetaRef>,
                         select_backward_shape<SymMetaRef>);
  select_bw.dtype = rules::same_dtype;
  select_bw.compute[cpu] = select_backward_kernel;
}

}  // namespace kiln
