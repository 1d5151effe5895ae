// Typed op attributes, stored type-erased. Each op has one attribute struct (DESIGN.md
// principle 10) that lists its fields once in a static `visit`; printing, equality and hashing
// (and the IR parser, later) are derived from that list instead of being written per op.
//
//   struct ReduceAttrs {
//     Shape dims; bool keepdim = false;
//     bool operator==(const ReduceAttrs&) const = default;
//     template <class S, class V> static void visit(S& s, V&& v) {
//       v("dims", s.dims); v("keepdim", s.keepdim);
//     }
//   };
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "kiln/base/device.h"
#include "kiln/base/dtype.h"
#include "kiln/base/scalar.h"
#include "kiln/base/shape.h"
#include "kiln/base/sym_int.h"

namespace kiln {

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
  template <class S, class V>
  static void visit(S&, V&&) {}
};

// A pointer to one attribute field, for code that handles every attribute struct alike (the IR
// printer and parser). These are all the field types attribute structs may use; a struct with
// any other field type does not compile (make_attr_vtable's field list). A SymShape or SymInt
// field holds sizes or bounds that may be symbolic in a graph (Note [Symbolic size attributes]);
// an eager kernel only ever sees integers in it.
using AttrFieldRef =
    std::variant<bool*, int64_t*, double*, std::string*, Scalar*, std::optional<Scalar>*,
                 std::optional<int64_t>*, Shape*, DType*, Device*, SymShape*, SymInt*>;
struct AttrField {
  const char* name;
  AttrFieldRef ref;
};

struct AttrVTable {
  void* (*clone)(const void*);
  void (*destroy)(void*);
  bool (*equal)(const void*, const void*);
  size_t (*hash)(const void*);
  std::string (*print)(const void*);
  void* (*make_default)();  // a value-initialized struct, for the parser to fill in
  // The fields in declaration order. The pointers alias `attrs`; a caller holding a const
  // object only reads through them.
  std::vector<AttrField> (*fields)(void* attrs);
};

namespace detail {

inline void hash_combine(size_t& seed, size_t h) {
  seed ^= h + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

template <class T>
size_t hash_field(const T& v) {
  if constexpr (std::is_same_v<T, Scalar>) {
    return std::hash<double>()(v.to_double()) ^ static_cast<size_t>(v.kind());
  } else if constexpr (std::is_same_v<T, Shape>) {
    size_t h = v.size();
    for (int64_t x : v)
      hash_combine(h, std::hash<int64_t>()(x));
    return h;
  } else if constexpr (std::is_same_v<T, SymShape>) {
    size_t h = v.size();
    for (const SymInt& x : v)
      hash_combine(h, x.hash());
    return h;
  } else if constexpr (std::is_same_v<T, SymInt>) {
    return v.hash();
  } else if constexpr (std::is_same_v<T, Device>) {
    return static_cast<size_t>(v.type) * 131 + static_cast<size_t>(v.index);
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<size_t>(v);
  } else if constexpr (requires { v.has_value(); }) {
    return v.has_value() ? hash_field(*v) + 1 : 0;
  } else {
    return std::hash<T>()(v);
  }
}

template <class T>
std::string format_field(const T& v) {
  if constexpr (std::is_same_v<T, Shape>) {
    return shape_str(v);
  } else if constexpr (std::is_same_v<T, SymShape>) {
    return sym_shape_str(v);
  } else if constexpr (std::is_same_v<T, SymInt>) {
    return v.str();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return fmt::format("\"{}\"", v);
  } else if constexpr (requires { v.has_value(); }) {
    return v.has_value() ? format_field(*v) : "none";
  } else {
    return fmt::format("{}", v);
  }
}

template <class A>
const AttrVTable* make_attr_vtable() {
  static const AttrVTable vt{
      [](const void* p) -> void* { return new A(*static_cast<const A*>(p)); },
      [](void* p) { delete static_cast<A*>(p); },
      [](const void* a, const void* b) {
        return *static_cast<const A*>(a) == *static_cast<const A*>(b);
      },
      [](const void* p) {
        size_t h = 0;
        A::visit(*static_cast<const A*>(p),
                 [&](const char*, const auto& f) { hash_combine(h, hash_field(f)); });
        return h;
      },
      [](const void* p) {
        std::string s;
        A::visit(*static_cast<const A*>(p), [&](const char* name, const auto& f) {
          if (!s.empty()) s += ", ";
          s += name;
          s += "=";
          s += format_field(f);
        });
        return s;
      },
      []() -> void* { return new A(); },
      [](void* p) {
        std::vector<AttrField> out;
        A::visit(*static_cast<A*>(p), [&](const char* name, auto& f) {
          out.push_back(AttrField{name, AttrFieldRef(&f)});
        });
        return out;
      },
  };
  return &vt;
}

}  // namespace detail

// The typed view of an op's type-erased attribute pointer. Kernels and rules receive
// `const void* attrs` and know their op's struct.
template <class A>
const A& attrs_as(const void* attrs) {
  return *static_cast<const A*>(attrs);
}

template <class A>
const AttrVTable* attr_vtable() {
  static const AttrVTable* vt = detail::make_attr_vtable<A>();
  return vt;
}

}  // namespace kiln
