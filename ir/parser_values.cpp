#include "kiln/ir/parser_values.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <variant>

#include "kiln/ir/printer.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln::ir {
namespace {

// A constant's data is held twice while parsing (the element list and the tensor); past this
// the text is almost certainly not meant as a constant.
constexpr int64_t kMaxConstantElements = int64_t{1} << 26;
// Types whose element count (and byte size) would overflow int64 cannot be allocated, and
// code computing their strides would overflow; the parser rejects them up front.
constexpr int64_t kMaxTypeElements = std::numeric_limits<int64_t>::max() / 16;

constexpr const char* kDTypeList = "b8, i32, i64, f16, bf16, f32, f64";

bool is_ident(const Token& t, std::string_view text) {
  return t.kind == TokenKind::Ident && t.text == text;
}

// Reads Int and Float tokens and the bare idents inf and nan as T; false when out of range.
template <class T>
bool read_floating(const Token& t, T* out) {
  std::string_view s = t.text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  T v;
  if (s == "inf") {
    v = std::numeric_limits<T>::infinity();
  } else if (s == "nan") {
    v = std::numeric_limits<T>::quiet_NaN();
  } else {
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  }
  *out = negative ? std::copysign(v, T(-1)) : v;
  return true;
}

bool is_float_token(const Token& t) {
  return t.kind == TokenKind::Float || t.kind == TokenKind::Int || is_ident(t, "inf") ||
         is_ident(t, "nan");
}

}  // namespace

const Token& TokenCursor::expect(TokenKind k, std::string_view what) {
  if (peek().kind != k)
    fail_at(peek(), fmt::format("expected {}, found {}", what, describe(peek())));
  return next();
}

void TokenCursor::fail_at(const Token& t, const std::string& message) const {
  parse_error(t.line, t.column, message);
}

int64_t TokenCursor::parse_int(std::string_view what) {
  const Token& t = peek();
  if (t.kind != TokenKind::Int)
    fail_at(t, fmt::format("expected an integer for {}, found {}", what, describe(t)));
  std::string_view s = t.text;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    fail_at(t, fmt::format("expected an integer that fits in int64 for {}, found {}", what,
                           describe(t)));
  next();
  return v;
}

double TokenCursor::parse_double(std::string_view what) {
  const Token& t = peek();
  double v = 0;
  if (!is_float_token(t))
    fail_at(t, fmt::format("expected a floating-point number for {}, found {}", what, describe(t)));
  if (!read_floating(t, &v))
    fail_at(t, fmt::format("expected a number in the range of f64 for {}, found {}", what,
                           describe(t)));
  next();
  return v;
}

Scalar TokenCursor::parse_scalar(std::string_view what) {
  const Token& t = peek();
  if (is_ident(t, "true") || is_ident(t, "false")) {
    next();
    return Scalar(t.text == "true");
  }
  if (t.kind == TokenKind::Int) return Scalar(parse_int(what));
  if (is_float_token(t)) return Scalar(parse_double(what));
  fail_at(t, fmt::format("expected a number or true/false for {}, found {}", what, describe(t)));
}

Shape TokenCursor::parse_int_list(std::string_view what) {
  expect(TokenKind::LBracket, fmt::format("'[' to start {}", what));
  Shape out;
  if (accept(TokenKind::RBracket)) return out;
  while (true) {
    out.push_back(parse_int(what));
    if (accept(TokenKind::Comma)) continue;
    expect(TokenKind::RBracket, fmt::format("',' or ']' in {}", what));
    return out;
  }
}

SymShape TokenCursor::parse_sym_list(std::string_view what) {
  expect(TokenKind::LBracket, fmt::format("'[' to start {}", what));
  SymShape out;
  if (accept(TokenKind::RBracket)) return out;
  while (true) {
    out.push_back(parse_sym_size(what));
    if (accept(TokenKind::Comma)) continue;
    expect(TokenKind::RBracket, fmt::format("',' or ']' in {}", what));
    return out;
  }
}

Device TokenCursor::parse_device(std::string_view what) {
  const Token& t = peek();
  if (is_ident(t, "cpu") || is_ident(t, "meta")) {
    next();
    return t.text == "cpu" ? kCPU : kMeta;
  }
  if (!is_ident(t, "cuda"))
    fail_at(t, fmt::format("expected a device (cpu, cuda:N or meta) for {}, found {}", what,
                           describe(t)));
  next();
  if (!accept(TokenKind::Colon)) return Device::cuda(0);
  const Token& index_tok = peek();
  int64_t index = parse_int("a CUDA device index");
  if (index < 0 || index > std::numeric_limits<int16_t>::max())
    fail_at(index_tok, fmt::format("expected a CUDA device index in [0, {}], found {}",
                                   std::numeric_limits<int16_t>::max(), index));
  return Device::cuda(static_cast<int>(index));
}

namespace {

bool is_operator(const Token& t, std::string_view op) {
  return t.kind == TokenKind::Operator && t.text == op;
}

// "s12" -> 12; -1 for any other identifier.
int64_t symbol_id(const Token& t) {
  if (t.kind != TokenKind::Ident || t.text.size() < 2 || t.text[0] != 's') return -1;
  int64_t id = 0;
  auto r = std::from_chars(t.text.data() + 1, t.text.data() + t.text.size(), id);
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size()) return -1;
  return id;
}

void check_type_sizes(ShapeRef sizes, const std::function<void(const std::string&)>& fail) {
  int64_t total = 1;
  for (int64_t s : sizes) {
    if (s < 0)
      fail(fmt::format("expected non-negative sizes in a type, found {}", shape_str(sizes)));
    if (__builtin_mul_overflow(total, std::max<int64_t>(s, 1), &total) || total > kMaxTypeElements)
      fail(fmt::format("expected a type with at most {} elements, found sizes {}", kMaxTypeElements,
                       shape_str(sizes)));
  }
}

}  // namespace

// Recursive descent over SymInt::str's grammar, on tokens: a sign before digits is lexed as
// part of an Int, so "s0 -1" reads as s0 + (-1).
SymInt TokenCursor::parse_sym_size(std::string_view what) {
  const Token& first = peek();
  auto arithmetic = [&](auto&& fn) {
    try {
      return fn();
    } catch (const Error& e) {
      // Overflow or a division by the integer 0 while combining the terms.
      fail_at(first, fmt::format("{} in {}", e.what(), what));
    }
  };
  std::function<SymInt()> sum, product, factor;
  factor = [&]() -> SymInt {
    const Token& t = peek();
    if (t.kind == TokenKind::Int) return parse_int(what);
    if (accept(TokenKind::LParen)) {
      SymInt v = sum();
      expect(TokenKind::RParen, fmt::format("')' in {}", what));
      return v;
    }
    if (is_ident(t, "floordiv") || is_ident(t, "mod")) {
      bool is_floordiv = t.text == "floordiv";
      next();
      expect(TokenKind::LParen, fmt::format("'(' after '{}' in {}", t.text, what));
      SymInt a = sum();
      expect(TokenKind::Comma, fmt::format("',' between the operands of '{}' in {}", t.text, what));
      SymInt b = sum();
      expect(TokenKind::RParen, fmt::format("')' after the operands of '{}' in {}", t.text, what));
      return arithmetic([&] { return is_floordiv ? floordiv(a, b) : mod(a, b); });
    }
    int64_t id = symbol_id(t);
    if (id < 0)
      fail_at(t, fmt::format("expected an integer, a symbol (s0, s1, ...), floordiv, mod or '(' "
                             "for {}, found {}",
                             what, describe(t)));
    next();
    return SymInt::symbol(id);
  };
  product = [&]() -> SymInt {
    bool negative = false;
    if (is_operator(peek(), "-")) {
      next();
      negative = true;
    }
    SymInt v = factor();
    while (is_operator(peek(), "*")) {
      next();
      SymInt f = factor();
      v = arithmetic([&] { return v * f; });
    }
    return negative ? arithmetic([&] { return -v; }) : v;
  };
  sum = [&]() -> SymInt {
    SymInt v = product();
    while (true) {
      const Token& t = peek();
      if (is_operator(t, "+") || is_operator(t, "-")) {
        bool minus = t.text == "-";
        next();
        SymInt p = product();
        v = arithmetic([&] { return minus ? v - p : v + p; });
      } else if (t.kind == TokenKind::Int && (t.text[0] == '-' || t.text[0] == '+')) {
        SymInt p = product();
        v = arithmetic([&] { return v + p; });
      } else {
        return v;
      }
    }
  };
  return sum();
}

void TokenCursor::evaluate_symbolic(TensorType& t, const Token& at) const {
  if (!t.is_symbolic()) return;
  auto check_symbols = [&](const SymShape& shape) {
    for (const SymInt& s : shape)
      for (int64_t id : s.symbols())
        if (static_cast<size_t>(id) >= hints_.size())
          fail_at(at, fmt::format("the symbol s{} in the type {} is not declared in the graph's "
                                  "symbols(...) clause",
                                  id, t.str()));
  };
  check_symbols(t.sym_sizes);
  check_symbols(t.sym_strides);
  try {
    t.evaluate_hints(hints_);
  } catch (const Error& e) {
    fail_at(at, fmt::format("the type {} at the symbols' hints: {}", t.str(), e.what()));
  }
  check_type_sizes(t.sizes, [&](const std::string& m) {
    fail_at(at, fmt::format("{} (the type {} at the symbols' hints)", m, t.str()));
  });
}

TensorType TokenCursor::parse_type() {
  const Token& dt = peek();
  if (dt.kind != TokenKind::Ident)
    fail_at(dt, "expected a type such as f32[4, 3], found " + describe(dt));
  TensorType t;
  if (!dtype_from_short_name(dt.text, &t.dtype))
    fail_at(dt, fmt::format("unknown dtype '{}'; expected one of {}", dt.text, kDTypeList));
  next();
  const Token sizes_tok = peek();
  SymShape sizes = parse_sym_list("the sizes of a type");
  if (is_static(sizes)) {
    t.sizes = expect_ints(sizes, "a type");
    check_type_sizes(t.sizes, [&](const std::string& m) { fail_at(sizes_tok, m); });
  } else {
    t.sym_sizes = std::move(sizes);
  }
  size_t rank = t.is_symbolic() ? t.sym_sizes.size() : t.sizes.size();
  if (is_ident(peek(), "strided")) {
    next();
    const Token& strides_tok = peek();
    SymShape strides = parse_sym_list("the strides of a type");
    if (strides.size() != rank)
      fail_at(strides_tok, fmt::format("expected {} strides for sizes {}, found {}", rank,
                                       sym_shape_str(t.symbolic_sizes()), strides.size()));
    if (t.is_symbolic()) {
      t.sym_strides = std::move(strides);
      // The printer leaves contiguous strides out, so they are stored as "contiguous" here.
      if (symbolic_strides_are_contiguous(t.sym_sizes, t.sym_strides)) t.sym_strides.clear();
    } else if (!is_static(strides)) {
      // Integer sizes with symbolic strides (a row of a symbolic matrix): a symbolic type.
      t.sym_sizes = to_sym_shape(t.sizes);
      t.sym_strides = std::move(strides);
    } else {
      t.strides = expect_ints(strides, "a type");
      if (strides_are_contiguous(t.sizes, t.strides)) t.strides.clear();
    }
  }
  const Token& d = peek();
  if (is_ident(d, "cpu") || is_ident(d, "cuda") || is_ident(d, "meta"))
    t.device = parse_device("a type");
  if (is_ident(peek(), "requires_grad")) {
    next();
    t.requires_grad = true;
  }
  if (symbols_known_) evaluate_symbolic(t, sizes_tok);
  return t;
}

void TokenCursor::parse_field(const AttrField& f, std::string_view kind) {
  std::string what = fmt::format("'{}' of '{}'", f.name, kind);
  std::visit(
      [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        const Token& t = peek();
        if constexpr (std::is_same_v<T, bool>) {
          if (!is_ident(t, "true") && !is_ident(t, "false"))
            fail_at(t, fmt::format("expected true or false for {}, found {}", what, describe(t)));
          *p = t.text == "true";
          next();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          *p = parse_int(what);
        } else if constexpr (std::is_same_v<T, double>) {
          *p = parse_double(what);
        } else if constexpr (std::is_same_v<T, std::string>) {
          *p = expect(TokenKind::String, "a string in double quotes for " + what).text;
        } else if constexpr (std::is_same_v<T, Scalar>) {
          *p = parse_scalar(what);
        } else if constexpr (std::is_same_v<T, std::optional<Scalar>> ||
                             std::is_same_v<T, std::optional<int64_t>>) {
          if (is_ident(t, "none")) {
            next();
            p->reset();
          } else if constexpr (std::is_same_v<T, std::optional<Scalar>>) {
            *p = parse_scalar(what + " (or none)");
          } else {
            *p = parse_int(what + " (or none)");
          }
        } else if constexpr (std::is_same_v<T, Shape>) {
          *p = parse_int_list(what);
        } else if constexpr (std::is_same_v<T, SymShape> || std::is_same_v<T, SymInt>) {
          SymShape sizes;
          if constexpr (std::is_same_v<T, SymShape>) {
            *p = sizes = parse_sym_list(what);
          } else {
            *p = parse_sym_size(what);
            sizes = {*p};
          }
          for (const SymInt& s : sizes)
            for (int64_t id : s.symbols())
              if (symbols_known_ && static_cast<size_t>(id) >= hints_.size())
                fail_at(t, fmt::format("the symbol s{} in {} is not declared in the graph's "
                                       "symbols(...) clause",
                                       id, what));
        } else if constexpr (std::is_same_v<T, DType>) {
          if (t.kind != TokenKind::Ident || !dtype_from_short_name(t.text, p))
            fail_at(t, fmt::format("expected a dtype ({}) for {}, found {}", kDTypeList, what,
                                   describe(t)));
          next();
        } else {
          static_assert(std::is_same_v<T, Device>);
          *p = parse_device(what);
        }
      },
      f.ref);
}

namespace {

// One constant element of C++ type T from token `t`; false when `t` is not one.
template <class T>
bool read_element(const Token& t, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!is_ident(t, "true") && !is_ident(t, "false")) return false;
    *out = t.text == "true";
    return true;
  } else if constexpr (std::is_integral_v<T>) {
    if (t.kind != TokenKind::Int) return false;
    std::string_view s = t.text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  } else if constexpr (std::is_same_v<T, double>) {
    return is_float_token(t) && read_floating(t, out);
  } else {
    // f32 directly; f16 and bf16 go through float, which holds each of their values exactly.
    float f = 0;
    if (!is_float_token(t) || !read_floating(t, &f)) return false;
    *out = T(f);
    return true;
  }
}

}  // namespace

Tensor TokenCursor::parse_constant_value(const TensorType& type) {
  const Token& open = peek();
  int64_t numel = type.numel();
  if (numel > kMaxConstantElements)
    fail_at(open, fmt::format("expected a constant with at most {} elements, its type {} has {}",
                              kMaxConstantElements, format_type_of(type), numel));
  expect(TokenKind::LBracket, "'[' to start the constant's elements");
  std::string dtype_name(dtype_short_name(type.dtype));
  auto read_all = [&]<class T>(T /*tag*/) {
    std::vector<T> data;
    if (!accept(TokenKind::RBracket)) {
      while (true) {
        const Token& t = peek();
        T v{};
        if (!read_element<T>(t, &v))
          fail_at(t, fmt::format("expected an element of dtype {} for the constant, found {}",
                                 dtype_name, describe(t)));
        if (static_cast<int64_t>(data.size()) == numel)
          fail_at(t, fmt::format("expected {} elements for a constant of type {}, found more",
                                 numel, format_type_of(type)));
        data.push_back(v);
        next();
        if (accept(TokenKind::Comma)) continue;
        expect(TokenKind::RBracket, "',' or ']' in the constant's elements");
        break;
      }
    }
    if (static_cast<int64_t>(data.size()) != numel)
      fail_at(tokens_[pos_ - 1],
              fmt::format("expected {} elements for a constant of type {}, found {}", numel,
                          format_type_of(type), data.size()));
    Tensor out = empty_tensor(type.sizes, type.dtype, kCPU);
    if (numel > 0) {
      if constexpr (std::is_same_v<T, bool>) {
        bool* dst = static_cast<bool*>(out.raw_data());
        for (size_t i = 0; i < data.size(); ++i)
          dst[i] = data[i];
      } else {
        std::memcpy(out.raw_data(), data.data(), data.size() * sizeof(T));
      }
    }
    return out;
  };
  Tensor t;
  switch (type.dtype) {
    case kBool:
      t = read_all(bool{});
      break;
    case kUInt8:
      t = read_all(uint8_t{});
      break;
    case kInt8:
      t = read_all(int8_t{});
      break;
    case kInt16:
      t = read_all(int16_t{});
      break;
    case kInt32:
      t = read_all(int32_t{});
      break;
    case kInt64:
      t = read_all(int64_t{});
      break;
    case kFloat16:
      t = read_all(Half{});
      break;
    case kBFloat16:
      t = read_all(BFloat16{});
      break;
    case kFloat32:
      t = read_all(float{});
      break;
    case kFloat64:
      t = read_all(double{});
      break;
  }
  if (!type.device.is_cpu()) {
    try {
      ExcludeDispatchKeysGuard guard(
          DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Autograd));
      t = t.to(type.device);
    } catch (const Error& e) {
      fail_at(open, fmt::format("expected a constant that can be placed on {}: {}",
                                type.device.str(), e.what()));
    }
  }
  return t;
}

Tensor TokenCursor::empty_meta(const TensorType& type) {
  return empty_tensor(type.sizes, type.dtype, kMeta);
}

std::string TokenCursor::format_type_of(const TensorType& type) {
  return format_type(type);
}

}  // namespace kiln::ir
