// Every op-table op as a Python function (kiln.ops.<name>), and the public ones as Tensor
// methods and operators, bound from the op's schema: its tensor inputs and attribute fields
// (runtime/op_def.h). A new op appears in Python with no code here.
//
// Note [Python op signatures]
// A call binds positional arguments in the op's python_order (default: tensor inputs, then
// attribute fields in declaration order) and keywords by name; torch's `input` names `self`,
// and `dim` names `dims`. An op whose only attribute is a Shape takes it as trailing integers
// too (x.view(2, 3), x.permute(1, 0)). A Python number where a tensor input goes calls the
// op's `<name>_scalar` twin when there is one (add -> add_scalar, keeping torch's promotion of
// Python scalars), and otherwise becomes a 0-dim tensor beside the tensor operands.
#include <nanobind/stl/unique_ptr.h>

#include <array>
#include <deque>
#include <span>

#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/op_table.h"
#include "python_common.h"

namespace kiln::python {
namespace {

struct Param {
  std::string name;
  bool is_tensor = false;
  size_t index = 0;  // into input_names or into the attribute fields
};

struct OpBinding {
  const OpDef* op = nullptr;
  std::vector<Param> params;
  std::vector<std::string> field_names;
  std::vector<size_t> field_kinds;  // AttrFieldRef alternative of each field
  const OpBinding* scalar_twin = nullptr;
  bool shape_varargs = false;
  std::shared_ptr<void> default_attrs;
};

using AttrsPtr = std::unique_ptr<void, void (*)(void*)>;

// Schemas with more tensor inputs or attribute fields than these are refused when the bindings
// are built (variadic ops take their tensors as one list argument, which has no limit).
constexpr size_t kMaxOpInputs = 8;
constexpr size_t kMaxOpFields = 64;

[[noreturn]] void type_error(const OpBinding& b, const std::string& message) {
  throw nb::type_error((b.op->name + "(): " + message).c_str());
}

std::string type_of(nb::handle h) {
  return nb::type_name(h.type()).c_str();
}

int64_t to_int(const OpBinding& b, const std::string& name, nb::handle h) {
  if (PyLong_Check(h.ptr())) return nb::cast<int64_t>(h);
  // An integer attribute reads a symbolic size as an integer (which specializes it).
  if (is_sym_int(h)) return sym_int_value(h);
  if (is_tensor(h) && !is_floating(unwrap_tensor(h).dtype()) && unwrap_tensor(h).numel() == 1) {
    return to_scalar(h).to_int();
  }
  type_error(b, "argument '" + name + "' must be int, not " + type_of(h));
}

Shape to_shape(const OpBinding& b, const std::string& name, nb::handle h) {
  if (h.is_none()) return {};
  if (PyLong_Check(h.ptr())) return {nb::cast<int64_t>(h)};
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    Shape s;
    for (nb::handle item : h)
      s.push_back(to_int(b, name, item));
    return s;
  }
  type_error(b, "argument '" + name + "' must be tuple of ints, not " + type_of(h));
}

void set_field(const OpBinding& b, const AttrField& field, nb::handle h) {
  std::string name = field.name;
  std::visit(
      [&](auto* ptr) {
        using F = std::remove_pointer_t<decltype(ptr)>;
        if constexpr (std::is_same_v<F, bool>) {
          if (!PyBool_Check(h.ptr()))
            type_error(b, "argument '" + name + "' must be bool, not " + type_of(h));
          *ptr = h.ptr() == Py_True;
        } else if constexpr (std::is_same_v<F, int64_t>) {
          *ptr = to_int(b, name, h);
        } else if constexpr (std::is_same_v<F, double>) {
          if (!PyFloat_Check(h.ptr()) && !PyLong_Check(h.ptr())) {
            type_error(b, "argument '" + name + "' must be float, not " + type_of(h));
          }
          *ptr = nb::cast<double>(h);
        } else if constexpr (std::is_same_v<F, std::string>) {
          if (!PyUnicode_Check(h.ptr()))
            type_error(b, "argument '" + name + "' must be str, not " + type_of(h));
          *ptr = nb::cast<std::string>(h);
        } else if constexpr (std::is_same_v<F, Scalar>) {
          if (!is_python_scalar(h))
            type_error(b, "argument '" + name + "' must be Number, not " + type_of(h));
          *ptr = to_scalar(h);
        } else if constexpr (std::is_same_v<F, std::optional<Scalar>>) {
          if (h.is_none()) {
            *ptr = std::nullopt;
          } else {
            if (!is_python_scalar(h))
              type_error(b, "argument '" + name + "' must be Number, not " + type_of(h));
            *ptr = to_scalar(h);
          }
        } else if constexpr (std::is_same_v<F, std::optional<int64_t>>) {
          if (h.is_none()) {
            *ptr = std::nullopt;
          } else {
            *ptr = to_int(b, name, h);
          }
        } else if constexpr (std::is_same_v<F, Shape>) {
          *ptr = to_shape(b, name, h);
        } else if constexpr (std::is_same_v<F, SymShape>) {
          // Sizes that may stay symbolic (Note [Symbolic size attributes]).
          std::optional<SymShape> sizes = h.is_none() ? SymShape{} : maybe_sym_shape(h);
          if (!sizes)
            type_error(b, "argument '" + name + "' must be tuple of ints, not " + type_of(h));
          *ptr = std::move(*sizes);
        } else if constexpr (std::is_same_v<F, SymInt>) {
          // A size or bound that may stay symbolic (x.shape[0]).
          std::optional<SymInt> size = sym_size_item(h);
          if (!size) type_error(b, "argument '" + name + "' must be int, not " + type_of(h));
          *ptr = std::move(*size);
        } else if constexpr (std::is_same_v<F, DType>) {
          if (!nb::isinstance<PyDType>(h))
            type_error(b, "argument '" + name + "' must be kiln.dtype, not " + type_of(h));
          *ptr = nb::cast<PyDType>(h).dtype;
        } else if constexpr (std::is_same_v<F, Device>) {
          nb::detail::make_caster<Device> c;
          if (!c.from_python(h, 0, nullptr))
            type_error(b, "argument '" + name + "' must be kiln.device, not " + type_of(h));
          *ptr = c.value;
        }
      },
      field.ref);
}

std::vector<OpBinding>& bindings() {
  static auto* all = new std::vector<OpBinding>();
  return *all;
}

// The `<name>_scalar` twin of an op: add -> add_scalar, add_ -> add_scalar_.
std::string scalar_twin_name(const std::string& name) {
  if (!name.empty() && name.back() == '_') return name.substr(0, name.size() - 1) + "_scalar_";
  return name + "_scalar";
}

void build_bindings() {
  auto& all = bindings();
  const auto& ops = OpTable::instance().ops();
  all.reserve(ops.size());
  for (const OpDef* op : ops) {
    OpBinding b;
    b.op = op;
    void* attrs = op->attrs->make_default();
    b.default_attrs = std::shared_ptr<void>(attrs, op->attrs->destroy);
    for (const AttrField& f : op->attrs->fields(attrs)) {
      b.field_names.push_back(f.name);
      b.field_kinds.push_back(f.ref.index());
    }
    auto param_of = [&](const std::string& name) {
      for (size_t i = 0; i < op->input_names.size(); ++i)
        if (op->input_names[i] == name) return Param{name, true, i};
      for (size_t i = 0; i < b.field_names.size(); ++i)
        if (b.field_names[i] == name) return Param{name, false, i};
      KILN_ERROR("op {}: python_order names '{}', which is not an input or attribute", op->name,
                 name);
    };
    if (!op->python_order.empty()) {
      for (const std::string& n : op->python_order)
        b.params.push_back(param_of(n));
    } else {
      for (const std::string& n : op->input_names)
        b.params.push_back(param_of(n));
      for (const std::string& n : b.field_names)
        b.params.push_back(param_of(n));
    }
    constexpr size_t kShapeKind = 7;      // AttrFieldRef's Shape* alternative
    constexpr size_t kSymShapeKind = 10;  // and its SymShape* alternative
    static_assert(std::is_same_v<std::variant_alternative_t<kShapeKind, AttrFieldRef>, Shape*>);
    static_assert(
        std::is_same_v<std::variant_alternative_t<kSymShapeKind, AttrFieldRef>, SymShape*>);
    b.shape_varargs = b.field_kinds.size() == 1 &&
                      (b.field_kinds[0] == kShapeKind || b.field_kinds[0] == kSymShapeKind);
    KILN_CHECK(op->input_names.size() <= kMaxOpInputs && b.field_names.size() <= kMaxOpFields,
               "op {}: the Python binding takes at most {} tensor inputs and {} attributes",
               op->name, kMaxOpInputs, kMaxOpFields);
    all.push_back(std::move(b));
  }
  for (OpBinding& b : all) {
    std::string twin = scalar_twin_name(b.op->name);
    for (const OpBinding& other : all)
      if (other.op->name == twin && other.op->input_names.size() == 1) b.scalar_twin = &other;
  }
}

// Type-stub signatures (nb::sig) from the schema, for editors (kiln/_C/ops.pyi and the Tensor
// methods in kiln/_C/__init__.pyi). Kept alive here: nanobind refers to them.
const char* keep(std::string text) {
  static auto* strings = new std::deque<std::string>();
  return strings->emplace_back(std::move(text)).c_str();
}

std::string attr_type(size_t kind) {
  static const char* const kTypes[] = {"bool",
                                       "int",
                                       "float",
                                       "str",
                                       "float | int | bool",
                                       "float | int | bool | None",
                                       "int | None",
                                       "int | collections.abc.Sequence[int]",
                                       "kiln.dtype",
                                       "kiln.device | str",
                                       "int | collections.abc.Sequence[int]",
                                       "int"};
  static_assert(std::size(kTypes) == std::variant_size_v<AttrFieldRef>);
  return kTypes[kind];
}

// `positional`: the overload that takes the tensor inputs only, positionally.
const char* signature(const OpBinding& b, bool method, bool positional) {
  const OpDef& op = *b.op;
  std::string params;
  auto add = [&](const std::string& p) { params += (params.empty() ? "" : ", ") + p; };
  bool listed = false;
  for (const Param& p : b.params) {
    if (p.is_tensor) {
      if (op.variadic) {
        if (!listed) add("tensors: collections.abc.Sequence[kiln.Tensor]");
        listed = true;
        continue;
      }
      if (method && p.index == 0) {
        add("self");
        continue;
      }
      std::string type = "kiln.Tensor";
      if (p.index == 1 && b.scalar_twin != nullptr) type += " | float";
      add(p.name + ": " + type);
    } else if (!positional) {
      add(p.name + ": " + attr_type(b.field_kinds[p.index]) + " = ...");
    }
  }
  if (positional) add("/");
  std::string result = op.max_outputs > 1 ? "kiln.Tensor | tuple[kiln.Tensor, ...]" : "kiln.Tensor";
  return keep("def " + op.name + "(" + params + ") -> " + result);
}

// Keyword names torch uses for Kiln's field and input names.
std::string canonical_name(const OpBinding& b, const std::string& name) {
  for (const Param& p : b.params)
    if (p.name == name) return name;
  if (name == "input") return "self";
  if (name == "dim") return "dims";
  if (name == "dims") return "dim";
  if (name == "exponent") return "other";
  return name;
}

nb::object wrap_outputs(std::vector<Tensor>&& outs) {
  if (outs.size() == 1) return nb::steal(wrap_tensor(outs[0]));
  nb::list l;
  for (const Tensor& t : outs)
    l.append(nb::steal(wrap_tensor(t)));
  return nb::tuple(l);
}

// Note [GIL around ops]
// An op runs without the GIL, so that other Python threads run meanwhile, unless every input
// is a CPU tensor of fewer than kGilHeldElements elements: such an op takes well under a
// microsecond, less than giving the GIL up and taking it back, and cannot block. Ops that make
// tensors from attributes alone (factories), CUDA ops and larger ones always release it.
constexpr int64_t kGilHeldElements = int64_t{1} << 14;

bool releases_gil(std::span<const Tensor> inputs) {
  if (inputs.empty()) return true;
  // impl()->numel(): the binding's own read, which a symbolic trace must not take for the
  // user's (Note [Size reads while tracing]).
  for (const Tensor& t : inputs)
    if (!t.device().is_cpu() || t.impl()->numel() >= kGilHeldElements) return true;
  return false;
}

nb::object run(const OpDef& op, std::span<const Tensor> inputs, const void* attrs) {
  PythonCallSite site;
  if (!releases_gil(inputs)) return wrap_outputs(call_op(op, inputs, attrs));
  std::vector<Tensor> outs;
  {
    nb::gil_scoped_release release;
    outs = call_op(op, inputs, attrs);
  }
  return wrap_outputs(std::move(outs));
}

// A Python number in a tensor slot: the op's scalar twin, or a wrapped 0-dim tensor.
nb::object call_with_scalar(const OpBinding& b, std::span<const nb::handle> slots,
                            const void* attrs) {
  const OpDef& op = *b.op;
  if (b.scalar_twin != nullptr && slots.size() == 2 && is_tensor(slots[0]) &&
      is_python_scalar(slots[1])) {
    const OpBinding& twin = *b.scalar_twin;
    AttrsPtr twin_attrs(twin.op->attrs->clone(twin.default_attrs.get()), twin.op->attrs->destroy);
    auto twin_fields = twin.op->attrs->fields(twin_attrs.get());
    // Attributes left at their defaults need no copying (the common `x * 2`).
    std::vector<AttrField> fields;
    if (attrs != b.default_attrs.get()) fields = op.attrs->fields(const_cast<void*>(attrs));
    bool placed = false;
    for (AttrField& tf : twin_fields) {
      bool copied = false;
      for (AttrField& f : fields) {
        if (std::string_view(f.name) == tf.name && f.ref.index() == tf.ref.index()) {
          std::visit([&](auto* dst) { *dst = *std::get<decltype(dst)>(f.ref); }, tf.ref);
          copied = true;
        }
      }
      if (!copied && !placed) {
        set_field(twin, tf, slots[1]);
        placed = true;
      }
    }
    std::array<Tensor, 1> inputs{unwrap_tensor(slots[0])};
    return run(*twin.op, inputs, twin_attrs.get());
  }
  const Tensor* like = nullptr;
  for (nb::handle h : slots)
    if (is_tensor(h) && like == nullptr) like = &unwrap_tensor(h);
  if (like == nullptr) type_error(b, "expected at least one Tensor argument");
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (is_tensor(slots[i])) {
      inputs.push_back(unwrap_tensor(slots[i]));
    } else if (is_python_scalar(slots[i])) {
      inputs.push_back(scalar_to_tensor(slots[i], *like));
    } else {
      type_error(b, "argument '" + op.input_names.at(std::min(i, op.input_names.size() - 1)) +
                        "' must be Tensor, not " + type_of(slots[i]));
    }
  }
  return run(op, inputs, attrs);
}

nb::object call(const OpBinding& b, PyObject* const* args, size_t nargs, nb::handle kwargs) {
  const OpDef& op = *b.op;
  size_t ninputs = op.input_names.size();
  std::array<nb::handle, kMaxOpInputs> slots{};  // null: not given
  uint64_t field_set = 0;                        // bit i: attribute field i was given
  AttrsPtr owned(nullptr, op.attrs->destroy);
  const void* attrs = b.default_attrs.get();
  std::vector<AttrField> fields;
  auto mutable_fields = [&]() -> std::vector<AttrField>& {
    if (!owned) {
      owned.reset(op.attrs->clone(b.default_attrs.get()));
      attrs = owned.get();
      fields = op.attrs->fields(owned.get());
    }
    return fields;
  };
  auto mark = [&](size_t field) { field_set |= uint64_t{1} << field; };
  auto given = [&](const Param& prm) {
    return prm.is_tensor ? slots[prm.index].is_valid() : ((field_set >> prm.index) & 1) != 0;
  };

  size_t pos = 0;
  std::vector<nb::handle> variadic;
  bool variadic_list = false;
  if (op.variadic && nargs > 0 && (PyList_Check(args[0]) || PyTuple_Check(args[0]))) {
    for (nb::handle item : nb::handle(args[0]))
      variadic.push_back(item);
    variadic_list = true;
    pos = 1;
  }
  size_t p = 0;
  for (; pos < nargs; ++pos, ++p) {
    while (variadic_list && p < b.params.size() && b.params[p].is_tensor)
      ++p;
    if (p >= b.params.size())
      type_error(b, "takes " + std::to_string(b.params.size()) + " positional arguments but " +
                        std::to_string(nargs) + " were given");
    const Param& prm = b.params[p];
    if (!prm.is_tensor && b.shape_varargs) {
      AttrFieldRef ref = mutable_fields()[prm.index].ref;
      if (auto* sym = std::get_if<SymShape*>(&ref)) {
        // view(2, -1), view((2, -1)), view(x.shape[0], -1): sizes that may stay symbolic.
        if (nargs - pos == 1) {
          set_field(b, mutable_fields()[prm.index], args[pos]);
        } else {
          (*sym)->clear();
          for (; pos < nargs; ++pos) {
            std::optional<SymInt> s = sym_size_item(args[pos]);
            if (!s)
              type_error(b, "argument '" + prm.name +
                                "' must be tuple of ints, but found "
                                "element of type " +
                                type_of(args[pos]));
            (*sym)->push_back(*s);
          }
        }
        mark(prm.index);
        break;
      }
      Shape s;
      if (nargs - pos == 1) {
        s = to_shape(b, prm.name, args[pos]);
      } else {
        for (; pos < nargs; ++pos)
          s.push_back(to_int(b, prm.name, args[pos]));
      }
      *std::get<Shape*>(ref) = std::move(s);
      mark(prm.index);
      break;
    }
    if (prm.is_tensor) {
      slots[prm.index] = args[pos];
    } else {
      set_field(b, mutable_fields()[prm.index], args[pos]);
      mark(prm.index);
    }
  }
  if (kwargs.is_valid()) {
    for (auto [key, value] : nb::borrow<nb::dict>(kwargs)) {
      std::string name = canonical_name(b, nb::cast<std::string>(key));
      const Param* prm = nullptr;
      for (const Param& q : b.params)
        if (q.name == name) prm = &q;
      if (prm == nullptr)
        type_error(b, "got an unexpected keyword argument '" + nb::cast<std::string>(key) + "'");
      if (given(*prm)) type_error(b, "got multiple values for argument '" + prm->name + "'");
      if (prm->is_tensor) {
        slots[prm->index] = value;
      } else {
        set_field(b, mutable_fields()[prm->index], value);
        mark(prm->index);
      }
    }
  }

  std::span<const nb::handle> used;
  if (variadic_list) {
    used = variadic;
  } else {
    size_t n = 0;
    for (; n < ninputs; ++n) {
      if (!slots[n].is_valid() || slots[n].is_none()) {
        if (op.variadic) break;  // trailing optional inputs (layer_norm's weight and bias)
        type_error(b, "missing required argument '" + op.input_names[n] + "' (pos " +
                          std::to_string(n + 1) + ")");
      }
    }
    used = std::span<const nb::handle>(slots.data(), n);
  }
  for (nb::handle h : used)
    if (!is_tensor(h)) return call_with_scalar(b, used, attrs);
  if (used.size() <= kMaxOpInputs) {
    std::array<Tensor, kMaxOpInputs> inputs;
    for (size_t i = 0; i < used.size(); ++i)
      inputs[i] = unwrap_tensor(used[i]);
    return run(op, std::span<const Tensor>(inputs.data(), used.size()), attrs);
  }
  std::vector<Tensor> inputs;
  inputs.reserve(used.size());
  for (nb::handle h : used)
    inputs.push_back(unwrap_tensor(h));
  return run(op, inputs, attrs);
}

// An op called with exactly its tensor inputs, positionally and without keywords: the op with
// default attributes when they are all tensors, the general binding otherwise.
nb::object call_positional(const OpBinding& b, std::initializer_list<nb::handle> args) {
  std::array<Tensor, 2> in;
  size_t n = 0;
  for (nb::handle h : args) {
    if (!is_tensor(h)) {
      std::array<PyObject*, 2> raw{};
      size_t k = 0;
      for (nb::handle a : args)
        raw[k++] = a.ptr();
      return call(b, raw.data(), args.size(), nb::handle());
    }
    in[n++] = unwrap_tensor(h);
  }
  return run(*b.op, std::span<const Tensor>(in.data(), n), b.default_attrs.get());
}

const OpBinding& binding(std::string_view name) {
  for (const OpBinding& b : bindings())
    if (b.op->name == name) return b;
  KILN_ERROR("no op named '{}'", name);
}

bool is_public(const OpDef& op) {
  if (op.has(kInternal)) return false;
  std::string_view n = op.name;
  return !(n.ends_with("_scalar") || n.ends_with("_scalar_"));
}

// A binary operator method: self op other, or other op self when `reflected`.
template <bool Reflected>
nb::object binary(const OpBinding& b, nb::handle self, nb::handle other) {
  if (is_tensor(other)) {  // the common case, without the general argument binding
    std::array<Tensor, 2> in{unwrap_tensor(Reflected ? other : self),
                             unwrap_tensor(Reflected ? self : other)};
    return run(*b.op, in, b.default_attrs.get());
  }
  if (!is_python_scalar(other)) return nb::borrow(Py_NotImplemented);
  PyObject* args[2] = {Reflected ? other.ptr() : self.ptr(), Reflected ? self.ptr() : other.ptr()};
  return call(b, args, 2, nb::handle());
}

// Note [Arithmetic slots]
// `a + b` reaches the type's nb_add slot. Methods set on the class make Python fill that slot
// with a wrapper that looks `__add__` up and calls it through nanobind, about a third of the
// cost of a small add; bind_ops points the slots of + - * / (and += -= *= /=) straight at
// these functions instead, which take the same fast path as the methods.
std::array<const OpBinding*, 8> g_slot_ops{};

template <size_t Slot>
PyObject* number_slot(PyObject* a, PyObject* b) noexcept {
  try {
    const OpBinding& op = *g_slot_ops[Slot];
    nb::object r = is_tensor(a) ? binary<false>(op, a, b) : binary<true>(op, b, a);
    return r.release().ptr();
  } catch (...) {
    set_python_error_from_exception();
    return nullptr;
  }
}

}  // namespace

void bind_ops(nb::module_& m) {
  build_bindings();
  nb::module_ ops = m.def_submodule("ops", "Every op of the op table, by its table name");
  nb::handle tensor_cls = tensor_type();
  nb::list public_names, all_names;
  for (const OpBinding& b : bindings()) {
    const OpBinding* bp = &b;
    const char* name = b.op->name.c_str();
    size_t arity = b.op->input_names.size();
    bool fixed = !b.op->variadic && (arity == 1 || arity == 2);
    auto generic = [bp](nb::args args, nb::kwargs kwargs) {
      std::vector<PyObject*> a(args.size());
      for (size_t i = 0; i < args.size(); ++i)
        a[i] = args[i].ptr();
      return call(*bp, a.data(), a.size(), kwargs);
    };
    // One- and two-input ops also get an overload taking exactly their tensors positionally,
    // which nanobind calls without building an argument tuple (the per-call cost of kiln.exp(x)
    // and kiln.add(a, b)); everything else goes to the general binding.
    // nanobind appends an overload to a function of the same name already in the scope.
    if (fixed && arity == 1) {
      ops.attr(name) =
          nb::cpp_function([bp](nb::handle x) { return call_positional(*bp, {x}); }, nb::scope(ops),
                           nb::name(name), nb::sig(signature(b, false, true)));
    } else if (fixed) {
      ops.attr(name) = nb::cpp_function(
          [bp](nb::handle x, nb::handle y) {
            return call_positional(*bp, {x, y});
          },
          nb::scope(ops), nb::name(name), nb::arg().none(), nb::arg().none(),
          nb::sig(signature(b, false, true)));
    }
    ops.attr(name) = nb::cpp_function(generic, nb::scope(ops), nb::name(name),
                                      nb::sig(signature(b, false, false)));
    all_names.append(b.op->name);
    if (!is_public(*b.op)) continue;
    public_names.append(b.op->name);
    bool method = !b.op->input_names.empty() && b.op->input_names[0] == "self";
    if (!method || nb::hasattr(tensor_cls, name)) continue;
    auto generic_method = [bp](nb::handle self, nb::args args, nb::kwargs kwargs) {
      std::vector<PyObject*> a(args.size() + 1);
      a[0] = self.ptr();
      for (size_t i = 0; i < args.size(); ++i)
        a[i + 1] = args[i].ptr();
      return call(*bp, a.data(), a.size(), kwargs);
    };
    if (fixed && arity == 1) {
      nb::setattr(tensor_cls, name,
                  nb::cpp_function([bp](nb::handle self) { return call_positional(*bp, {self}); },
                                   nb::is_method(), nb::scope(tensor_cls), nb::name(name),
                                   nb::sig(signature(b, true, true))));
    } else if (fixed) {
      nb::setattr(tensor_cls, name,
                  nb::cpp_function(
                      [bp](nb::handle self, nb::handle y) {
                        return call_positional(*bp, {self, y});
                      },
                      nb::is_method(), nb::scope(tensor_cls), nb::name(name), nb::arg().none()));
    }
    nb::setattr(
        tensor_cls, name,
        nb::cpp_function(generic_method, nb::is_method(), nb::scope(tensor_cls), nb::name(name)));
  }
  // `from kiln._C.ops import *` (kiln/__init__.py) takes the public ops only.
  ops.attr("__all__") = public_names;
  m.attr("_public_ops") = nb::tuple(public_names);
  m.attr("_all_ops") = nb::tuple(all_names);
  m.def("_op_schema", [](const std::string& name) {
    const OpBinding& b = binding(name);
    nb::list params;
    for (const Param& p : b.params)
      params.append(nb::make_tuple(p.name, p.is_tensor));
    return nb::make_tuple(params, b.op->variadic, b.op->has(kInternal), b.op->has(kRandom));
  });

  auto def_binary = [&](const char* py, const char* op_name, bool reflected) {
    const OpBinding* bp = &binding(op_name);
    nb::setattr(
        tensor_cls, py,
        reflected
            ? nb::cpp_function([bp](nb::handle s, nb::handle o) { return binary<true>(*bp, s, o); },
                               nb::is_method(), nb::name(py), nb::arg("other").none())
            : nb::cpp_function(
                  [bp](nb::handle s, nb::handle o) { return binary<false>(*bp, s, o); },
                  nb::is_method(), nb::name(py), nb::arg("other").none()));
  };
  for (auto [py, op, refl] : std::initializer_list<std::tuple<const char*, const char*, bool>>{
           {"__add__", "add", false},         {"__radd__", "add", true},
           {"__sub__", "sub", false},         {"__rsub__", "sub", true},
           {"__mul__", "mul", false},         {"__rmul__", "mul", true},
           {"__truediv__", "div", false},     {"__rtruediv__", "div", true},
           {"__pow__", "pow", false},         {"__rpow__", "pow", true},
           {"__iadd__", "add_", false},       {"__isub__", "sub_", false},
           {"__imul__", "mul_", false},       {"__itruediv__", "div_", false},
           {"__eq__", "eq", false},           {"__ne__", "ne", false},
           {"__lt__", "lt", false},           {"__le__", "le", false},
           {"__gt__", "gt", false},           {"__ge__", "ge", false},
           {"__and__", "logical_and", false}, {"__or__", "logical_or", false},
           {"__rand__", "logical_and", true}, {"__ror__", "logical_or", true}}) {
    def_binary(py, op, refl);
  }
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_cls.ptr());
  PyNumberMethods* number = type->tp_as_number;
  const char* slot_ops[] = {"add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"};
  for (size_t i = 0; i < std::size(slot_ops); ++i)
    g_slot_ops[i] = &binding(slot_ops[i]);
  number->nb_add = number_slot<0>;
  number->nb_subtract = number_slot<1>;
  number->nb_multiply = number_slot<2>;
  number->nb_true_divide = number_slot<3>;
  number->nb_inplace_add = number_slot<4>;
  number->nb_inplace_subtract = number_slot<5>;
  number->nb_inplace_multiply = number_slot<6>;
  number->nb_inplace_true_divide = number_slot<7>;
  PyType_Modified(type);

  auto def_unary = [&](const char* py, const char* op_name) {
    const OpBinding* bp = &binding(op_name);
    nb::setattr(tensor_cls, py,
                nb::cpp_function(
                    [bp](nb::handle s) {
                      PyObject* a[1] = {s.ptr()};
                      return call(*bp, a, 1, nb::handle());
                    },
                    nb::is_method(), nb::name(py)));
  };
  def_unary("__neg__", "neg");
  def_unary("__abs__", "abs");
  def_unary("__invert__", "logical_not");
}

}  // namespace kiln::python
