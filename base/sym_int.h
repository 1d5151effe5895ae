// SymInt: a size that is an integer or an expression over size symbols (s0, s1, ...), and the
// facts a graph assumes about them (s0 >= 2, s1 == s2, mod(s0, 8) == 0).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Note [Symbolic sizes]
// A symbolic size is a polynomial with int64 coefficients whose factors are symbols, or floor
// divisions and modulos that could not be simplified away (floordiv(s0 + 1, 2)). Every
// operation returns the canonical form: like terms merged, terms in one order, exact
// divisions done (floordiv(32*s0*s1, 32*s0) is s1), and a result without symbols is a plain
// integer. So equality is structural and exact: `a == b` holds when the two expressions are
// the same polynomial, which is what a shape rule needs to decide that two sizes match for
// every value of the symbols. It never consults a symbol's value; facts that relate different
// expressions (s1 == s2) are SymFacts, which a graph lists and a plan checks before reuse.
// Sizes 0 and 1 never become symbols (broadcasting depends on them), so every symbol is at
// least 2.
struct SymTerm;
struct SymDivision;

class SymInt {
 public:
  struct Node;

  SymInt(int64_t value = 0) : value_(value) {}  // NOLINT: implicit, as torch's c10::SymInt
  // The symbol s<id>.
  static SymInt symbol(int64_t id);

  bool is_symbolic() const { return node_ != nullptr; }
  std::optional<int64_t> maybe_int() const {
    return node_ ? std::nullopt : std::optional<int64_t>(value_);
  }
  // The integer, or kiln::Error "<what> needs a concrete size, got s0*4" when symbolic.
  int64_t expect_int(std::string_view what) const;

  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  SymInt operator-() const { return SymInt(0) - *this; }
  SymInt& operator+=(const SymInt& b) { return *this = *this + b; }
  SymInt& operator-=(const SymInt& b) { return *this = *this - b; }
  SymInt& operator*=(const SymInt& b) { return *this = *this * b; }
  // Floor division and its modulo, as Python's // and % (and torch's FloorDiv and Mod). A
  // divisor that is the integer 0 throws.
  friend SymInt floordiv(const SymInt& a, const SymInt& b);
  friend SymInt mod(const SymInt& a, const SymInt& b);

  // The same canonical expression (Note [Symbolic sizes]); not a guard on values.
  friend bool operator==(const SymInt& a, const SymInt& b);
  size_t hash() const;

  // The value with symbol s<k> bound to values[k]; throws when a symbol is unbound.
  int64_t evaluate(std::span<const int64_t> values) const;
  // The ids of the symbols it mentions, each once, increasing.
  std::vector<int64_t> symbols() const;
  // The expression with symbol s<k> replaced by replacement[k] (an integer or another
  // expression), in canonical form; throws when a symbol has no replacement.
  SymInt substitute(std::span<const SymInt> replacement) const;
  // "32*s0*s1 + 1", "floordiv(s0 - 1, 2) + 1"; parse_sym_int reads it back.
  std::string str() const;

  // The canonical form, for code that translates it (the kernel lowering): a sum of terms, each
  // a coefficient times factors, where each factor is an atom: a symbol, or a floordiv or mod
  // that did not simplify. An integer is one term without factors (none for 0).
  std::vector<SymTerm> terms() const;
  // For an atom: s<k>'s k; or the operands of floordiv(num, den) and mod(num, den).
  std::optional<int64_t> symbol_id() const;
  std::optional<SymDivision> division() const;

 private:
  int64_t value_ = 0;
  std::shared_ptr<const Node> node_;  // null: the integer value_
  friend struct SymIntAccess;
};

struct SymTerm {
  int64_t coeff = 0;
  std::vector<SymInt> factors;  // atoms
};
struct SymDivision {
  bool is_mod = false;  // mod(num, den); else floordiv(num, den)
  SymInt num, den;
};

using SymShape = std::vector<SymInt>;

SymShape to_sym_shape(std::span<const int64_t> sizes);
bool is_static(std::span<const SymInt> sizes);
// The integers, or kiln::Error naming `what` when any size is symbolic.
std::vector<int64_t> expect_ints(std::span<const SymInt> sizes, std::string_view what);
// The row-major strides of `sizes`: suffix products.
SymShape contiguous_strides(std::span<const SymInt> sizes);
// The broadcast of two shapes as torch broadcasts, with sizes compared as expressions (a
// symbol is never 1): throws kiln::Error naming `op` and both shapes when two sizes differ and
// neither is 1.
SymShape broadcast_shapes(std::string_view op, std::span<const SymInt> a,
                          std::span<const SymInt> b);
// "[s0, 32]" (torch-style shape text).
std::string sym_shape_str(std::span<const SymInt> sizes);
// The same under shape_str's name, so that a rule written over either size type prints its
// shapes with one call.
inline std::string shape_str(std::span<const SymInt> sizes) {
  return sym_shape_str(sizes);
}

// Reads an expression as str() prints it (and the same with any spacing and parentheses); throws
// kiln::Error naming the text and the offset of the first character it cannot read.
SymInt parse_sym_int(std::string_view text);

// A relation a graph assumes between sizes: "s0 >= 2", "s1 == s2", "mod(s0, 8) == 0".
struct SymFact {
  enum class Relation { kEq, kNe, kLt, kLe, kGt, kGe };
  SymInt lhs;
  Relation relation = Relation::kEq;
  SymInt rhs;

  bool holds(std::span<const int64_t> values) const;
  // `a <relation> b` for numbers (Python's kiln.SymInt compares with these relations too).
  template <class T>
  static bool compare(Relation relation, T a, T b) {
    switch (relation) {
      case Relation::kEq:
        return a == b;
      case Relation::kNe:
        return a != b;
      case Relation::kLt:
        return a < b;
      case Relation::kLe:
        return a <= b;
      case Relation::kGt:
        return a > b;
      case Relation::kGe:
        return a >= b;
    }
    return false;
  }
  std::string str() const;
  friend bool operator==(const SymFact&, const SymFact&) = default;
};
// Reads "lhs <relation> rhs" as SymFact::str prints it.
SymFact parse_sym_fact(std::string_view text);

}  // namespace kiln

// fmt prints a SymInt as str() does, so that error messages format either size type.
template <>
struct fmt::formatter<kiln::SymInt> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(const kiln::SymInt& s, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
