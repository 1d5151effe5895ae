#include "kiln/ir/infer_types.h"

#include <algorithm>
#include <optional>

#include "kiln/base/error.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/symbols.h"
#include "kiln/runtime/sym_assumptions.h"

namespace kiln::ir {
namespace {

std::string type_list(std::span<const TensorType> types) {
  std::string s;
  for (const TensorType& t : types) {
    if (!s.empty()) s += ", ";
    s += t.str();
  }
  return s;
}

// One output's sizes and strides from its rule's geometry, over either size type.
void set_geometry(TensorType& t, const OpDef& op, size_t i, const OutputGeometry& g,
                  const TensorType& input0) {
  t.sizes = g.sizes;
  if (op.has(kView)) {
    if (!strides_are_contiguous(t.sizes, g.strides)) t.strides = g.strides;
  } else if (op.has(kInPlace) && i == 0) {
    t.strides = input0.strides;
  }
}

void set_geometry(TensorType& t, const OpDef& op, size_t i, const SymOutputGeometry& g,
                  const TensorType& input0, std::span<const int64_t> hints) {
  if (is_static(g.sizes)) {
    t.sizes = expect_ints(g.sizes, op.name);
  } else {
    t.sym_sizes = g.sizes;
  }
  if (op.has(kView) && !g.strides.empty()) {
    if (!symbolic_strides_are_contiguous(g.sizes, g.strides)) {
      if (t.is_symbolic()) {
        t.sym_strides = g.strides;
      } else {
        // Integer sizes over symbolic strides (a select of a symbolic dim) stay symbolic.
        t.sym_sizes = g.sizes;
        t.sym_strides = g.strides;
      }
    }
  } else if (op.has(kInPlace) && i == 0) {
    t.strides = input0.strides;
    t.sym_strides = input0.sym_strides;
  }
  if (t.is_symbolic()) t.evaluate_hints(hints);
}

}  // namespace

std::vector<TensorType> infer_op_types(const OpDef& op, std::span<const TensorType> inputs,
                                       const void* attrs, std::span<const int64_t> hints,
                                       std::vector<SymFact>* assumed) {
  // The rules see each input with explicit strides and offset 0: the IR does not track storage
  // offsets, and no rule's sizes, strides or dtype depend on them.
  std::vector<Shape> strides(inputs.size());
  std::vector<MetaRef> metas(inputs.size());
  bool any_requires_grad = false, symbolic = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i];
    strides[i] = t.effective_strides();
    metas[i] = MetaRef{t.sizes, strides[i], 0, t.dtype, t.device};
    any_requires_grad = any_requires_grad || t.requires_grad;
    symbolic = symbolic || t.is_symbolic();
    KILN_CHECK(t.device == inputs[0].device, "{}: input {} is on {} but input 0 is on {}", op.name,
               i, t.device, inputs[0].device);
  }
  // A size attribute over symbols (Note [Symbolic size attributes]) makes the outputs symbolic
  // even from integer inputs (expand of [1, 32] to [s0, 32]).
  symbolic = symbolic || attrs_are_symbolic(op.attrs, attrs);
  KILN_CHECK(op.shape != nullptr && op.dtype != nullptr, "{}: the op has no shape or dtype rule",
             op.name);
  KILN_CHECK(!inputs.empty() || op.attr_device != nullptr,
             "{}: the op takes no tensor inputs and its attributes name no device", op.name);
  KILN_CHECK(!symbolic || op.sym_shape != nullptr,
             "{} has no shape rule over symbolic sizes yet, and its input types ({}) are symbolic",
             op.name, type_list(inputs));
  std::vector<OutputGeometry> geoms;
  std::vector<SymOutputGeometry> sym_geoms;
  if (symbolic) {
    std::vector<SymShape> sizes(inputs.size()), sym_strides(inputs.size());
    std::vector<SymMetaRef> sym_metas(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      sizes[i] = inputs[i].symbolic_sizes();
      sym_strides[i] = inputs[i].symbolic_strides();
      sym_metas[i] = SymMetaRef{sizes[i], sym_strides[i], 0, inputs[i].dtype, inputs[i].device};
    }
    std::optional<SymAssumptions> scope;
    if (assumed != nullptr && !hints.empty()) scope.emplace(hints);
    sym_geoms = op.sym_shape(op, sym_metas, attrs);
    if (scope) add_facts(*assumed, scope->facts());
  } else {
    geoms = op.shape(op, metas, attrs);
  }
  size_t n = symbolic ? sym_geoms.size() : geoms.size();
  Device device = inputs.empty() ? op.attr_device(attrs) : inputs[0].device;
  bool differentiable = !op.has(kNonDifferentiable);
  std::vector<TensorType> out(n);
  TensorType none;
  const TensorType& input0 = inputs.empty() ? none : inputs[0];
  for (size_t i = 0; i < n; ++i) {
    TensorType& t = out[i];
    t.dtype = op.dtype(op, metas, attrs, i);
    t.device = device;
    if (symbolic) {
      set_geometry(t, op, i, sym_geoms[i], input0, hints);
    } else {
      set_geometry(t, op, i, geoms[i], input0);
    }
    bool in_place_self = op.has(kInPlace) && i == 0 && input0.requires_grad;
    t.requires_grad =
        in_place_self || (differentiable && any_requires_grad && is_floating(t.dtype));
  }
  return out;
}

std::optional<SymOutputGeometry> view_geometry(const OpDef& op, const void* attrs,
                                               const SymOutputGeometry& in, DType dtype,
                                               Device device, const Graph& g) {
  try {
    bool integers = is_static(in.sizes) && is_static(in.strides) &&
                    !in.storage_offset.is_symbolic() && !attrs_are_symbolic(op.attrs, attrs);
    if (integers) {
      Shape sizes = expect_ints(in.sizes, op.name), strides = expect_ints(in.strides, op.name);
      MetaRef m{sizes, strides, in.storage_offset.expect_int(op.name), dtype, device};
      std::vector<OutputGeometry> out = op.shape(op, std::span(&m, 1), attrs);
      if (out.size() != 1) return std::nullopt;
      return SymOutputGeometry{to_sym_shape(out[0].sizes), to_sym_shape(out[0].strides),
                               out[0].storage_offset};
    }
    if (op.sym_shape == nullptr) return std::nullopt;
    SymAssumptions scope(g.symbol_hints());
    SymMetaRef m{in.sizes, in.strides, in.storage_offset, dtype, device};
    std::vector<SymOutputGeometry> out = op.sym_shape(op, std::span(&m, 1), attrs);
    const std::vector<SymFact>& known = g.symbol_facts();
    for (const SymFact& f : scope.facts())
      if (std::find(known.begin(), known.end(), f) == known.end()) return std::nullopt;
    if (out.size() != 1) return std::nullopt;
    return std::move(out[0]);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace kiln::ir
