#include "kiln/passes/simplify_rules.h"

#include <algorithm>
#include <cmath>

#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/kernels/view_attrs.h"

namespace kiln::passes {
namespace {

// ---- pattern helpers ----

// The node defining `v` when it is an op node of op `name`, else null.
const ir::Node* defined_by(const ir::Value* v, std::string_view name) {
  const ir::Node* n = v->node();
  return n->kind() == ir::NodeKind::Op && n->is_op(name) ? n : nullptr;
}

// Whether every element of `v` is provably `want`: a constant holding only `want`, or
// full(value=want). Anything computed is not looked into.
bool all_elements_are(const ir::Value* v, double want) {
  const ir::Node* n = v->node();
  if (const ir::Node* f = defined_by(v, "full")) {
    return f->attrs_as<FullAttrs>().value.to_double() == want;
  }
  if (n->kind() != ir::NodeKind::Constant) return false;
  const Tensor& t = n->constant().value;
  if (!t.defined() || t.device().is_meta()) return false;
  // Reading the data must not be recorded by a trace that happens to be active.
  ExcludeDispatchKeysGuard hidden(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
  std::vector<double> data = t.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  return std::all_of(data.begin(), data.end(), [want](double d) { return d == want; });
}

bool is(const Scalar& s, double want) {
  return s.to_double() == want;
}

// alpha * 0 is 0 unless alpha is infinite or NaN.
bool finite(const Scalar& s) {
  return std::isfinite(s.to_double());
}

int64_t wrap(int64_t dim, int64_t ndim) {
  return dim < 0 ? dim + ndim : dim;
}

// ---- matches ----

bool scalar_operand_is_one(const ir::Node& n) {
  return is(n.attrs_as<ScalarOperandAttrs>().other, 1);
}

// Adding or subtracting zero is the identity only for integers: in floating point -0.0 + 0 is
// +0.0 (and x - alpha * 0 is such a sum when alpha < 0), so the rules never fire on floats.
bool exact_zero_rule(const ir::Node& n) {
  return !is_floating(n.output(0)->type().dtype);
}

bool scalar_operand_is_zero(const ir::Node& n) {
  const auto& a = n.attrs_as<ScalarOperandAttrs>();
  return exact_zero_rule(n) && is(a.other, 0) && finite(a.alpha);
}

bool scalar_exponent_is_one(const ir::Node& n) {
  return is(n.attrs_as<ScalarOtherAttrs>().other, 1);
}

bool second_is_ones(const ir::Node& n) {
  return all_elements_are(n.input(1), 1);
}

bool first_is_ones(const ir::Node& n) {
  return all_elements_are(n.input(0), 1);
}

bool second_is_zeros(const ir::Node& n) {
  return exact_zero_rule(n) && finite(n.attrs_as<AlphaAttrs>().alpha) &&
         all_elements_are(n.input(1), 0);
}

// zeros + alpha * x is x only for alpha 1.
bool first_is_zeros_alpha_one(const ir::Node& n) {
  return exact_zero_rule(n) && is(n.attrs_as<AlphaAttrs>().alpha, 1) &&
         all_elements_are(n.input(0), 0);
}

bool input_is_neg(const ir::Node& n) {
  return defined_by(n.input(0), "neg") != nullptr;
}

bool input_is_view(const ir::Node& n) {
  return defined_by(n.input(0), "view") != nullptr;
}

bool input_is_expand(const ir::Node& n) {
  return defined_by(n.input(0), "expand") != nullptr;
}

bool keeps_sizes(const ir::Node& n) {
  return n.output()->type().symbolic_sizes() == n.input(0)->type().symbolic_sizes();
}

bool undoes_input_transpose(const ir::Node& n) {
  const ir::Node* inner = defined_by(n.input(0), "transpose");
  if (inner == nullptr) return false;
  int64_t nd = n.input(0)->type().dim();
  const auto& a = n.attrs_as<TransposeAttrs>();
  const auto& b = inner->attrs_as<TransposeAttrs>();
  int64_t a0 = wrap(a.dim0, nd), a1 = wrap(a.dim1, nd);
  int64_t b0 = wrap(b.dim0, nd), b1 = wrap(b.dim1, nd);
  return std::minmax(a0, a1) == std::minmax(b0, b1);
}

bool converts_to_own_dtype(const ir::Node& n) {
  return n.attrs_as<DTypeAttrs>().dtype == n.input(0)->type().dtype;
}

// ---- rewrites ----

SimplifyReplacement first_input(const ir::Node& n) {
  return {.value = n.input(0)};
}

SimplifyReplacement second_input(const ir::Node& n) {
  return {.value = n.input(1)};
}

// op(op(x)) -> x
SimplifyReplacement inner_input(const ir::Node& n) {
  return {.value = n.input(0)->node()->input(0)};
}

// view(view(x, a), b) -> view(x, b): the sizes b name (a -1 included) resolve the same way
// against x, which has as many elements as view(x, a).
SimplifyReplacement view_of_inner_input(const ir::Node& n) {
  return {.op = n.op(),
          .input = n.input(0)->node()->input(0),
          .attrs = ir::OpAttrs(n.op()->attrs, n.attrs())};
}

// expand(expand(x, a), b) -> expand(x, sizes of the result): b's -1 entries mean the inner
// result's sizes, which x may not have, so the new node spells the sizes out.
SimplifyReplacement expand_of_inner_input(const ir::Node& n) {
  SizeAttrs sizes{n.output()->type().symbolic_sizes()};
  SimplifyReplacement r;
  r.op = n.op();
  r.input = n.input(0)->node()->input(0);
  r.attrs = ir::OpAttrs(n.op()->attrs, &sizes);
  return r;
}

// The table, most specific rules first within an op. Identities with a tensor operand
// (mul(x, ones)) fire only when the operand provably holds the identity element everywhere.
const SimplifyRule kRules[] = {
    {"mul_scalar(x) {other=1} -> x", "mul_scalar", scalar_operand_is_one, first_input},
    {"mul(x, ones) -> x", "mul", second_is_ones, first_input},
    {"mul(ones, x) -> x", "mul", first_is_ones, second_input},
    {"div_scalar(x) {other=1} -> x", "div_scalar", scalar_operand_is_one, first_input},
    {"div(x, ones) -> x", "div", second_is_ones, first_input},
    {"add_scalar(x) {other=0} -> x", "add_scalar", scalar_operand_is_zero, first_input},
    {"add(x, zeros) -> x", "add", second_is_zeros, first_input},
    {"add(zeros, x) {alpha=1} -> x", "add", first_is_zeros_alpha_one, second_input},
    {"sub_scalar(x) {other=0} -> x", "sub_scalar", scalar_operand_is_zero, first_input},
    {"sub(x, zeros) -> x", "sub", second_is_zeros, first_input},
    {"pow_scalar(x) {other=1} -> x", "pow_scalar", scalar_exponent_is_one, first_input},
    {"neg(neg(x)) -> x", "neg", input_is_neg, inner_input},
    {"convert(x) {dtype=x's} -> x", "convert", converts_to_own_dtype, first_input},
    {"view(x) {size=x's} -> x", "view", keeps_sizes, first_input},
    {"view(view(x)) -> view(x)", "view", input_is_view, view_of_inner_input},
    {"expand(x) {size=x's} -> x", "expand", keeps_sizes, first_input},
    {"expand(expand(x)) -> expand(x)", "expand", input_is_expand, expand_of_inner_input},
    {"transpose(transpose(x)) on the same dims -> x", "transpose", undoes_input_transpose,
     inner_input},
};

}  // namespace

std::span<const SimplifyRule> simplify_rules() {
  return kRules;
}

}  // namespace kiln::passes
