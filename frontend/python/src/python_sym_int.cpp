// kiln.SymInt: a size that a trace with symbolic sizes keeps as an expression over its symbols
// (Note [Symbolic sizes], docs/dynamic_shapes.md), as torch.SymInt is. Inside such a trace
// x.shape, x.size() and x.numel() return one for each dim the graph holds symbolically (ints
// elsewhere), so `x.view(x.shape[0], -1)` records the expression and the plan serves every
// batch size. Arithmetic (+, -, *, //, %) gives SymInts. Whatever needs the integer itself
// (int(), an index, range(), a comparison that does not follow from the expressions, bool,
// hash, float arithmetic) reads it: the trace specializes its symbols (Note [Size reads while
// tracing]) and the value at the traced sizes is returned. Comparisons against 0 and 1 need no
// read: a symbol is never 0 or 1.
#include <nanobind/operators.h>

#include "kiln/runtime/tracing_state.h"
#include "python_common.h"

namespace kiln::python {
namespace {

struct PySymInt {
  SymInt value;
};

// The operand as a SymInt: a Python int or a kiln.SymInt; nullopt for anything else.
std::optional<SymInt> as_sym_int(nb::handle h) {
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return SymInt(nb::cast<int64_t>(h));
  if (nb::isinstance<PySymInt>(h)) return nb::cast<const PySymInt&>(h).value;
  return std::nullopt;
}

int64_t read(const SymInt& s) {
  return detail::read_sym_int(s, "a size read as an integer");
}

// A lone symbol, which stands for sizes of at least 2 (the plan guards on it).
bool is_lone_symbol(const SymInt& s) {
  return s.symbol_id().has_value();
}

using Arith = SymInt (*)(const SymInt&, const SymInt&);

nb::object arith(const PySymInt& self, nb::handle other, Arith op, bool reflected) {
  if (std::optional<SymInt> o = as_sym_int(other))
    return wrap_sym_int(reflected ? op(*o, self.value) : op(self.value, *o));
  return nb::borrow(Py_NotImplemented);
}

// Arithmetic that leaves the integers: the sizes are read, and Python's `op` (PyNumber_Multiply,
// PyNumber_TrueDivide) does the rest. A float operand always takes this path; an int or SymInt
// one only for true division (`any_number`).
using PyBinary = PyObject* (*)(PyObject*, PyObject*);
nb::object read_arith(const PySymInt& self, nb::handle other, PyBinary op, bool reflected,
                      bool any_number) {
  nb::object o;
  if (PyFloat_Check(other.ptr())) {
    o = nb::borrow(other);
  } else if (std::optional<SymInt> s = any_number ? as_sym_int(other) : std::nullopt) {
    o = nb::int_(read(*s));
  } else {
    return nb::borrow(Py_NotImplemented);
  }
  nb::object v = nb::int_(read(self.value));
  PyObject* r = reflected ? op(o.ptr(), v.ptr()) : op(v.ptr(), o.ptr());
  if (r == nullptr) throw nb::python_error();
  return nb::steal(r);
}

using Cmp = SymFact::Relation;

bool holds(Cmp cmp, double a, double b) {
  return SymFact::compare(cmp, a, b);
}

nb::object compare(const PySymInt& self, nb::handle other, Cmp cmp) {
  if (std::optional<SymInt> o = as_sym_int(other)) {
    // Decided by the expressions where they settle it (equal ones; a symbol, at least 2,
    // against 0 or 1), else a guard of the trace, as torch's: the outcome at the traced sizes
    // becomes a fact of the graph (Note [Assumed size facts]), and the symbols stay.
    return nb::bool_(guard_size_fact(SymFact{self.value, cmp, *o}));
  }
  if (PyFloat_Check(other.ptr()))
    return nb::bool_(holds(cmp, static_cast<double>(read(self.value)), nb::cast<double>(other)));
  return nb::borrow(Py_NotImplemented);
}

SymInt add(const SymInt& a, const SymInt& b) {
  return a + b;
}
SymInt sub(const SymInt& a, const SymInt& b) {
  return a - b;
}
SymInt mul(const SymInt& a, const SymInt& b) {
  return a * b;
}
SymInt fdiv(const SymInt& a, const SymInt& b) {
  return floordiv(a, b);
}
SymInt rem(const SymInt& a, const SymInt& b) {
  return mod(a, b);
}

}  // namespace

nb::object wrap_sym_int(const SymInt& s) {
  if (std::optional<int64_t> v = s.maybe_int()) return nb::int_(*v);
  return nb::cast(PySymInt{s});
}

bool symbolic_trace_active() {
  return detail::g_symbolic_traces.load(std::memory_order_relaxed) != 0 && is_tracing();
}

nb::tuple sym_shape_tuple(const Tensor& t) {
  nb::list l;
  for (const SymInt& s : t.sym_sizes())
    l.append(wrap_sym_int(s));
  return nb::tuple(l);
}

std::optional<SymInt> sym_size_item(nb::handle item) {
  if (std::optional<SymInt> s = as_sym_int(item)) return s;
  if (is_tensor(item) && !is_floating(unwrap_tensor(item).dtype()) &&
      unwrap_tensor(item).numel() == 1)
    return SymInt(nb::cast<int64_t>(nb::int_(item)));
  return std::nullopt;
}

std::optional<SymShape> maybe_sym_shape(nb::handle h) {
  if (std::optional<SymInt> s = as_sym_int(h)) return SymShape{*s};
  if (!PyTuple_Check(h.ptr()) && !PyList_Check(h.ptr())) return std::nullopt;
  SymShape out;
  for (nb::handle item : h) {
    std::optional<SymInt> s = sym_size_item(item);
    if (!s) return std::nullopt;
    out.push_back(*s);
  }
  return out;
}

SymShape to_sym_shape_arg(nb::handle h, const char* what) {
  if (std::optional<SymShape> s = maybe_sym_shape(h)) return std::move(*s);
  throw nb::type_error(fmt::format("{}(): sizes must be a tuple of ints, not {}", what,
                                   nb::type_name(h.type()).c_str())
                           .c_str());
}

SymShape sizes_from_args(const nb::args& args, const char* what) {
  if (args.size() == 1 && !as_sym_int(args[0])) return to_sym_shape_arg(args[0], what);
  return to_sym_shape_arg(nb::borrow<nb::tuple>(args), what);
}

bool is_sym_int(nb::handle h) {
  return nb::isinstance<PySymInt>(h);
}

int64_t sym_int_value(nb::handle h) {
  return read(nb::cast<const PySymInt&>(h).value);
}

void bind_sym_int(nb::module_& m) {
  using S = const PySymInt&;
  nb::class_<PySymInt>(m, "SymInt")
      .def("__repr__", [](S s) { return s.value.str(); })
      .def("__str__", [](S s) { return s.value.str(); })
      .def("__int__", [](S s) { return read(s.value); })
      .def("__index__", [](S s) { return read(s.value); })
      .def("__float__", [](S s) { return static_cast<double>(read(s.value)); })
      .def("__bool__", [](S s) { return is_lone_symbol(s.value) || read(s.value) != 0; })
      .def("__hash__", [](S s) { return nb::hash(nb::int_(read(s.value))); })
      .def("__neg__", [](S s) { return wrap_sym_int(-s.value); })
      .def("__add__", [](S s, nb::handle o) { return arith(s, o, add, false); })
      .def("__radd__", [](S s, nb::handle o) { return arith(s, o, add, true); })
      .def("__sub__", [](S s, nb::handle o) { return arith(s, o, sub, false); })
      .def("__rsub__", [](S s, nb::handle o) { return arith(s, o, sub, true); })
      .def("__mul__",
           [](S s, nb::handle o) {
             nb::object r = arith(s, o, mul, false);
             return r.is(Py_NotImplemented) ? read_arith(s, o, PyNumber_Multiply, false, false) : r;
           })
      .def("__rmul__",
           [](S s, nb::handle o) {
             nb::object r = arith(s, o, mul, true);
             return r.is(Py_NotImplemented) ? read_arith(s, o, PyNumber_Multiply, true, false) : r;
           })
      .def("__floordiv__", [](S s, nb::handle o) { return arith(s, o, fdiv, false); })
      .def("__rfloordiv__", [](S s, nb::handle o) { return arith(s, o, fdiv, true); })
      .def("__mod__", [](S s, nb::handle o) { return arith(s, o, rem, false); })
      .def("__rmod__", [](S s, nb::handle o) { return arith(s, o, rem, true); })
      .def("__truediv__",
           [](S s, nb::handle o) { return read_arith(s, o, PyNumber_TrueDivide, false, true); })
      .def("__rtruediv__",
           [](S s, nb::handle o) { return read_arith(s, o, PyNumber_TrueDivide, true, true); })
      .def("__eq__", [](S s, nb::handle o) { return compare(s, o, Cmp::kEq); })
      .def("__ne__", [](S s, nb::handle o) { return compare(s, o, Cmp::kNe); })
      .def("__lt__", [](S s, nb::handle o) { return compare(s, o, Cmp::kLt); })
      .def("__le__", [](S s, nb::handle o) { return compare(s, o, Cmp::kLe); })
      .def("__gt__", [](S s, nb::handle o) { return compare(s, o, Cmp::kGt); })
      .def("__ge__", [](S s, nb::handle o) { return compare(s, o, Cmp::kGe); });
}

}  // namespace kiln::python
