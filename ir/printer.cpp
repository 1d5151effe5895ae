#include "kiln/ir/printer.h"

#include <fmt/format.h>

#include <cctype>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/tensor_data.h"

namespace kiln::ir {
namespace {

template <class F>
std::string format_floating(F v) {
  std::string s = fmt::format("{}", v);
  // fmt writes 2.0 as "2"; the parser needs a '.', an exponent, inf or nan to see a float.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string format_scalar(const Scalar& s) {
  if (s.is_floating()) return format_double(s.to_double());
  if (s.is_bool()) return s.to<bool>() ? "true" : "false";
  return fmt::format("{}", s.to_int());
}

std::string format_field(const AttrFieldRef& ref) {
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>) {
          return *p ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return fmt::format("{}", *p);
        } else if constexpr (std::is_same_v<T, double>) {
          return format_double(*p);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote_string(*p);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          return format_scalar(*p);
        } else if constexpr (std::is_same_v<T, std::optional<Scalar>>) {
          return p->has_value() ? format_scalar(**p) : "none";
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
          return p->has_value() ? fmt::format("{}", **p) : "none";
        } else if constexpr (std::is_same_v<T, Shape>) {
          return shape_str(*p);
        } else if constexpr (std::is_same_v<T, SymShape>) {
          return sym_shape_str(*p);
        } else if constexpr (std::is_same_v<T, SymInt>) {
          return p->str();
        } else if constexpr (std::is_same_v<T, DType>) {
          return std::string(dtype_short_name(*p));
        } else {
          static_assert(std::is_same_v<T, Device>);
          return p->str();
        }
      },
      ref);
}

std::string format_op_attrs(const Node& n) {
  const AttrVTable* vt = n.op()->attrs;
  if (vt == nullptr) return "";
  // A node created without attributes prints the defaults, which is what the parser builds
  // from the same text.
  std::unique_ptr<void, void (*)(void*)> defaults(nullptr, vt->destroy);
  void* attrs = const_cast<void*>(n.attrs());  // read only, through the field pointers
  if (attrs == nullptr) {
    defaults.reset(vt->make_default());
    attrs = defaults.get();
  }
  std::string s;
  for (const AttrField& f : vt->fields(attrs)) {
    if (!s.empty()) s += ", ";
    s += f.name;
    s += '=';
    s += format_field(f.ref);
  }
  return s;
}

template <class T, class Fmt>
std::string join_elements(const Tensor& t, Fmt fmt_one) {
  std::vector<T> data = t.to_vector<T>();
  std::string s;
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) s += ", ";
    s += fmt_one(static_cast<T>(data[i]));
  }
  return s;
}

std::string format_constant(const Node& n) {
  const Tensor& t = n.constant().value;
  if (n.output()->type().device.is_meta() || !t.defined() || t.device().is_meta()) return "";
  // Printing may happen while a trace records ops; reading the data must not be recorded.
  ExcludeDispatchKeysGuard guard(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
  Tensor host = t.to(kCPU).contiguous();
  std::string elems;
  switch (host.dtype()) {
    case kBool:
      elems = join_elements<bool>(host, [](bool v) { return std::string(v ? "true" : "false"); });
      break;
    case kUInt8:
      elems = join_elements<uint8_t>(host, [](uint8_t v) { return fmt::format("{}", v); });
      break;
    case kInt8:
      elems = join_elements<int8_t>(host, [](int8_t v) { return fmt::format("{}", v); });
      break;
    case kInt16:
      elems = join_elements<int16_t>(host, [](int16_t v) { return fmt::format("{}", v); });
      break;
    case kInt32:
      elems = join_elements<int32_t>(host, [](int32_t v) { return fmt::format("{}", v); });
      break;
    case kInt64:
      elems = join_elements<int64_t>(host, [](int64_t v) { return fmt::format("{}", v); });
      break;
    case kFloat16:
      elems = join_elements<Half>(host, [](Half v) { return format_float(static_cast<float>(v)); });
      break;
    case kBFloat16:
      elems = join_elements<BFloat16>(
          host, [](BFloat16 v) { return format_float(static_cast<float>(v)); });
      break;
    case kFloat32:
      elems = join_elements<float>(host, [](float v) { return format_float(v); });
      break;
    case kFloat64:
      elems = join_elements<double>(host, [](double v) { return format_double(v); });
      break;
  }
  return "value=[" + elems + "]";
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// `argN` names belong to the positional scheme; taking one as a debug name could clash with
// another input's positional name.
bool is_positional_name(std::string_view s) {
  if (s.size() <= 3 || s.substr(0, 3) != "arg") return false;
  for (char c : s.substr(3))
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

ValueNames value_names(const Graph& g) {
  ValueNames names;
  std::unordered_map<std::string, int> debug_count;
  for (const Value* v : g.inputs())
    ++debug_count[v->debug_name()];
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const std::string& d = g.inputs()[i]->debug_name();
    bool keep = is_identifier(d) && !is_positional_name(d) && debug_count[d] == 1;
    names[g.inputs()[i]] = keep ? "%" + d : fmt::format("%arg{}", i);
  }
  size_t counter = 0;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Param) continue;
    for (size_t i = 0; i < n->num_outputs(); ++i)
      names[n->output(i)] = fmt::format("%{}", counter++);
  }
  return names;
}

std::string describe_node(const Node& n, const ValueNames& names) {
  auto name_of = [&](const Value* v) {
    if (v == nullptr) return std::string("<null>");
    auto it = names.find(v);
    return it == names.end() ? std::string("%<value of another graph>") : it->second;
  };
  std::string s;
  for (size_t i = 0; i < n.num_outputs(); ++i) {
    if (i > 0) s += ", ";
    s += name_of(n.output(i));
  }
  if (n.num_outputs() > 0) s += " = ";
  s += n.kind_name();
  s += "(";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (i > 0) s += ", ";
    s += name_of(n.input(i));
  }
  s += ")";
  std::string site = normalized_call_site(n.call_site());
  if (!site.empty()) {
    s += "  # ";
    s += site;
  }
  return s;
}

namespace {

class Printer {
 public:
  std::string out;

  void graph(const Graph& g, size_t indent) {
    ValueNames names = value_names(g);
    auto name_of = [&](const Value* v) {
      auto it = names.find(v);
      return it == names.end() ? std::string("%<outside>") : it->second;
    };

    std::string pad(indent, ' ');
    out += pad + "graph(";
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      if (i > 0) out += ", ";
      out += name_of(g.inputs()[i]) + " : " + format_type(g.inputs()[i]->type());
    }
    out += ")";
    // Note [Symbolic types]: the hints follow the inputs that name the symbols.
    if (!g.symbol_hints().empty()) {
      out += " symbols(";
      for (size_t k = 0; k < g.symbol_hints().size(); ++k) {
        if (k > 0) out += ", ";
        out += fmt::format("s{} = {}", k, g.symbol_hints()[k]);
      }
      out += ")";
    }
    // Note [Assumed size facts]: what the rules assumed beyond the hints.
    if (!g.symbol_facts().empty()) {
      out += " assuming(";
      for (size_t k = 0; k < g.symbol_facts().size(); ++k) {
        if (k > 0) out += ", ";
        out += g.symbol_facts()[k].str();
      }
      out += ")";
    }
    out += ":\n";
    for (const Node* n : g.nodes()) {
      if (n->kind() == NodeKind::Param) continue;
      out += pad + "  ";
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        if (i > 0) out += ", ";
        out += name_of(n->output(i)) + " : " + format_type(n->output(i)->type());
      }
      if (n->num_outputs() > 0) out += " = ";
      out += n->kind_name() + "(";
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        if (i > 0) out += ", ";
        out += name_of(n->input(i));
      }
      out += ")";
      std::string attrs = format_attrs(*n);
      if (!attrs.empty()) out += " {" + attrs + "}";
      std::string site = normalized_call_site(n->call_site());
      if (!site.empty()) out += "  # " + site;
      out += "\n";
      if (n->kind() == NodeKind::FusionGroup) {
        const auto& sub = n->fusion_group().subgraph;
        if (sub) {
          graph(*sub, indent + 4);
        } else {
          out += pad + "    graph():\n" + pad + "      return ()\n";
        }
      }
    }
    out += pad + "  return (";
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (i > 0) out += ", ";
      out += name_of(g.outputs()[i]);
    }
    out += ")\n";
  }
};

}  // namespace

std::string format_double(double v) {
  return format_floating(v);
}

std::string format_float(float v) {
  return format_floating(v);
}

std::string quote_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string normalized_call_site(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? ' ' : c;
  }
  size_t b = out.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  size_t e = out.find_last_not_of(' ');
  return out.substr(b, e - b + 1);
}

std::string format_type(const TensorType& t) {
  std::string s(dtype_short_name(t.dtype));
  if (t.is_symbolic()) {
    s += sym_shape_str(t.sym_sizes);
    if (!t.sym_strides.empty() && !symbolic_strides_are_contiguous(t.sym_sizes, t.sym_strides)) {
      s += " strided";
      s += sym_shape_str(t.sym_strides);
    }
  } else {
    s += shape_str(t.sizes);
  }
  bool strided =
      !t.is_symbolic() && !t.strides.empty() &&
      (t.strides.size() != t.sizes.size() || !strides_are_contiguous(t.sizes, t.strides));
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `" " + str()` here.
  if (strided) {
    s += " strided";
    s += shape_str(t.strides);
  }
  if (!t.device.is_cpu()) {
    s += ' ';
    s += t.device.str();
  }
  if (t.requires_grad) s += " requires_grad";
  return s;
}

std::string format_attrs(const Node& n) {
  switch (n.kind()) {
    case NodeKind::Op:
      return format_op_attrs(n);
    case NodeKind::Constant:
      return format_constant(n);
    case NodeKind::Fallback:
      return "name=" + quote_string(n.fallback().name);
    case NodeKind::Param:
    case NodeKind::FusionGroup:
      break;
  }
  return "";
}

std::string print(const Graph& g) {
  Printer p;
  p.graph(g, 0);
  return std::move(p.out);
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  return os << print(g);
}

std::string Graph::str() const {
  return print(*this);
}

}  // namespace kiln::ir
