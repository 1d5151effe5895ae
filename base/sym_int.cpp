#include "kiln/base/sym_int.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <utility>

#include "kiln/base/error.h"

namespace kiln {

// The polynomial form (Note [Symbolic sizes]); named rather than anonymous because SymInt::Node
// holds a Poly.
namespace sym_detail {

struct Atom;
using AtomPtr = std::shared_ptr<const Atom>;

// c * f0 * f1 * ...: the factors sorted (cmp_atom), repeated for powers.
struct Term {
  std::vector<AtomPtr> factors;
  int64_t coeff = 0;
};
// A sum of terms in canonical order (cmp_monomial), no two with the same factors, none zero.
struct Poly {
  std::vector<Term> terms;
};

struct Atom {
  enum class Kind { kSymbol, kFloorDiv, kMod } kind = Kind::kSymbol;
  int64_t id = 0;  // kSymbol
  Poly num, den;   // kFloorDiv, kMod
};

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  KILN_CHECK(!__builtin_add_overflow(a, b, &r), "symbolic size: {} + {} overflows int64", a, b);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  KILN_CHECK(!__builtin_mul_overflow(a, b, &r), "symbolic size: {} * {} overflows int64", a, b);
  return r;
}
// Python's // and %.
int64_t floor_div(int64_t a, int64_t b) {
  KILN_CHECK(b != 0, "symbolic size: division by zero");
  KILN_CHECK(!(a == INT64_MIN && b == -1), "symbolic size: {} // -1 overflows int64", a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  return a - checked_mul(floor_div(a, b), b);
}

int cmp_poly(const Poly& a, const Poly& b);

int cmp_atom(const Atom& a, const Atom& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == Atom::Kind::kSymbol) return a.id < b.id ? -1 : (a.id > b.id ? 1 : 0);
  if (int c = cmp_poly(a.num, b.num)) return c;
  return cmp_poly(a.den, b.den);
}

// Higher degree first, then by factors; the constant (no factors) last.
int cmp_monomial(const std::vector<AtomPtr>& a, const std::vector<AtomPtr>& b) {
  if (a.size() != b.size()) return a.size() > b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = cmp_atom(*a[i], *b[i])) return c;
  return 0;
}

int cmp_poly(const Poly& a, const Poly& b) {
  size_t n = std::min(a.terms.size(), b.terms.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = cmp_monomial(a.terms[i].factors, b.terms[i].factors)) return c;
    if (a.terms[i].coeff != b.terms[i].coeff) return a.terms[i].coeff < b.terms[i].coeff ? -1 : 1;
  }
  if (a.terms.size() != b.terms.size()) return a.terms.size() < b.terms.size() ? -1 : 1;
  return 0;
}

Poly normalize(std::vector<Term> terms) {
  for (Term& t : terms) {
    std::sort(t.factors.begin(), t.factors.end(),
              [](const AtomPtr& x, const AtomPtr& y) { return cmp_atom(*x, *y) < 0; });
  }
  std::sort(terms.begin(), terms.end(),
            [](const Term& x, const Term& y) { return cmp_monomial(x.factors, y.factors) < 0; });
  Poly out;
  for (Term& t : terms) {
    if (!out.terms.empty() && cmp_monomial(out.terms.back().factors, t.factors) == 0) {
      out.terms.back().coeff = checked_add(out.terms.back().coeff, t.coeff);
    } else {
      out.terms.push_back(std::move(t));
    }
  }
  std::erase_if(out.terms, [](const Term& t) { return t.coeff == 0; });
  return out;
}

Poly constant(int64_t v) {
  Poly p;
  if (v != 0) p.terms.push_back(Term{{}, v});
  return p;
}

std::optional<int64_t> as_constant(const Poly& p) {
  if (p.terms.empty()) return 0;
  if (p.terms.size() == 1 && p.terms[0].factors.empty()) return p.terms[0].coeff;
  return std::nullopt;
}

Poly add(const Poly& a, const Poly& b) {
  std::vector<Term> terms = a.terms;
  terms.insert(terms.end(), b.terms.begin(), b.terms.end());
  return normalize(std::move(terms));
}

Poly scale(const Poly& a, int64_t c) {
  std::vector<Term> terms = a.terms;
  for (Term& t : terms)
    t.coeff = checked_mul(t.coeff, c);
  return normalize(std::move(terms));
}

Poly mul(const Poly& a, const Poly& b) {
  std::vector<Term> terms;
  for (const Term& x : a.terms) {
    for (const Term& y : b.terms) {
      Term t{x.factors, checked_mul(x.coeff, y.coeff)};
      t.factors.insert(t.factors.end(), y.factors.begin(), y.factors.end());
      terms.push_back(std::move(t));
    }
  }
  return normalize(std::move(terms));
}

Poly atom_poly(Atom atom) {
  return Poly{{Term{{std::make_shared<const Atom>(std::move(atom))}, 1}}};
}

// a / b when b is one term whose factors and coefficient divide every term of a exactly.
std::optional<Poly> exact_quotient(const Poly& a, const Poly& b) {
  if (b.terms.size() != 1) return std::nullopt;
  const Term& d = b.terms[0];
  std::vector<Term> terms;
  for (const Term& t : a.terms) {
    if (t.coeff % d.coeff != 0) return std::nullopt;
    Term q{t.factors, t.coeff / d.coeff};
    for (const AtomPtr& f : d.factors) {
      auto it = std::find_if(q.factors.begin(), q.factors.end(),
                             [&](const AtomPtr& g) { return cmp_atom(*f, *g) == 0; });
      if (it == q.factors.end()) return std::nullopt;
      q.factors.erase(it);
    }
    terms.push_back(std::move(q));
  }
  return normalize(std::move(terms));
}

// a = c * quotient + rest, with every coefficient of rest in [0, c) (c > 0).
std::pair<Poly, Poly> split_by_constant(const Poly& a, int64_t c) {
  std::vector<Term> quotient, rest;
  for (const Term& t : a.terms) {
    quotient.push_back(Term{t.factors, floor_div(t.coeff, c)});
    rest.push_back(Term{t.factors, floor_mod(t.coeff, c)});
  }
  return {normalize(std::move(quotient)), normalize(std::move(rest))};
}

Poly poly_floordiv(const Poly& a, const Poly& b) {
  std::optional<int64_t> bc = as_constant(b);
  KILN_CHECK(!bc || *bc != 0, "symbolic size: division by zero");
  if (std::optional<int64_t> ac = as_constant(a); ac && bc) return constant(floor_div(*ac, *bc));
  if (a.terms.empty()) return a;
  if (std::optional<Poly> q = exact_quotient(a, b)) return *q;
  if (bc) {
    if (*bc < 0) return poly_floordiv(scale(a, -1), constant(-*bc));
    auto [quotient, rest] = split_by_constant(a, *bc);
    if (as_constant(rest)) return quotient;  // 0 <= rest < c
    return add(quotient, atom_poly(Atom{Atom::Kind::kFloorDiv, 0, rest, b}));
  }
  if (cmp_poly(a, b) == 0) return constant(1);
  return atom_poly(Atom{Atom::Kind::kFloorDiv, 0, a, b});
}

Poly poly_mod(const Poly& a, const Poly& b) {
  std::optional<int64_t> bc = as_constant(b);
  KILN_CHECK(!bc || *bc != 0, "symbolic size: modulo by zero");
  if (std::optional<int64_t> ac = as_constant(a); ac && bc) return constant(floor_mod(*ac, *bc));
  if (exact_quotient(a, b)) return Poly{};
  if (bc) {
    if (*bc < 0) return scale(poly_mod(scale(a, -1), constant(-*bc)), -1);
    Poly rest = split_by_constant(a, *bc).second;
    if (std::optional<int64_t> r = as_constant(rest)) return constant(*r);
    return atom_poly(Atom{Atom::Kind::kMod, 0, rest, b});
  }
  return atom_poly(Atom{Atom::Kind::kMod, 0, a, b});
}

int64_t eval_poly(const Poly& p, std::span<const int64_t> values);

int64_t eval_atom(const Atom& a, std::span<const int64_t> values) {
  switch (a.kind) {
    case Atom::Kind::kSymbol:
      KILN_CHECK(a.id >= 0 && static_cast<size_t>(a.id) < values.size(),
                 "symbolic size: s{} has no value (only {} symbols are bound)", a.id,
                 values.size());
      return values[a.id];
    case Atom::Kind::kFloorDiv:
      return floor_div(eval_poly(a.num, values), eval_poly(a.den, values));
    case Atom::Kind::kMod:
      return floor_mod(eval_poly(a.num, values), eval_poly(a.den, values));
  }
  return 0;
}

int64_t eval_poly(const Poly& p, std::span<const int64_t> values) {
  int64_t sum = 0;
  for (const Term& t : p.terms) {
    int64_t v = t.coeff;
    for (const AtomPtr& f : t.factors)
      v = checked_mul(v, eval_atom(*f, values));
    sum = checked_add(sum, v);
  }
  return sum;
}

void collect_symbols(const Poly& p, std::vector<int64_t>* out) {
  for (const Term& t : p.terms) {
    for (const AtomPtr& f : t.factors) {
      if (f->kind == Atom::Kind::kSymbol) {
        out->push_back(f->id);
      } else {
        collect_symbols(f->num, out);
        collect_symbols(f->den, out);
      }
    }
  }
}

std::string poly_str(const Poly& p);

std::string atom_str(const Atom& a) {
  switch (a.kind) {
    case Atom::Kind::kSymbol:
      return fmt::format("s{}", a.id);
    case Atom::Kind::kFloorDiv:
      return fmt::format("floordiv({}, {})", poly_str(a.num), poly_str(a.den));
    case Atom::Kind::kMod:
      return fmt::format("mod({}, {})", poly_str(a.num), poly_str(a.den));
  }
  return "";
}

std::string poly_str(const Poly& p) {
  if (p.terms.empty()) return "0";
  std::string s;
  for (size_t i = 0; i < p.terms.size(); ++i) {
    const Term& t = p.terms[i];
    bool negative = t.coeff < 0;
    // The magnitude as text; INT64_MIN has none, so it keeps its sign inside the term.
    std::string magnitude =
        t.coeff == INT64_MIN ? fmt::format("({})", t.coeff) : fmt::format("{}", std::abs(t.coeff));
    if (t.coeff == INT64_MIN) negative = false;
    if (i == 0) {
      if (negative) s += "-";
    } else {
      s += negative ? " - " : " + ";
    }
    std::string factors;
    for (const AtomPtr& f : t.factors) {
      if (!factors.empty()) factors += "*";
      factors += atom_str(*f);
    }
    if (factors.empty()) {
      s += magnitude;
    } else if (magnitude == "1") {
      s += factors;
    } else {
      s += magnitude + "*" + factors;
    }
  }
  return s;
}

size_t hash_poly(const Poly& p);

size_t hash_atom(const Atom& a) {
  size_t h = static_cast<size_t>(a.kind) * 0x9e3779b97f4a7c15ull;
  if (a.kind == Atom::Kind::kSymbol) return h ^ std::hash<int64_t>()(a.id);
  return h ^ (hash_poly(a.num) * 31 + hash_poly(a.den));
}

size_t hash_poly(const Poly& p) {
  size_t h = p.terms.size();
  for (const Term& t : p.terms) {
    h = h * 1000003 ^ std::hash<int64_t>()(t.coeff);
    for (const AtomPtr& f : t.factors)
      h = h * 1000003 ^ hash_atom(*f);
  }
  return h;
}

}  // namespace sym_detail

using namespace sym_detail;

struct SymInt::Node {
  Poly poly;
};

static const Atom* single_atom(const std::shared_ptr<const SymInt::Node>& node);

struct SymIntAccess {
  static Poly poly(const SymInt& s) { return s.node_ ? s.node_->poly : constant(s.value_); }
  static SymInt make(Poly p) {
    if (std::optional<int64_t> c = as_constant(p)) return SymInt(*c);
    SymInt s;
    s.node_ = std::make_shared<const SymInt::Node>(SymInt::Node{std::move(p)});
    return s;
  }
};

static const Atom* single_atom(const std::shared_ptr<const SymInt::Node>& node) {
  if (node == nullptr || node->poly.terms.size() != 1) return nullptr;
  const sym_detail::Term& t = node->poly.terms[0];
  if (t.coeff != 1 || t.factors.size() != 1) return nullptr;
  return t.factors[0].get();
}

SymInt SymInt::symbol(int64_t id) {
  KILN_CHECK(id >= 0, "symbolic size: symbol ids are non-negative, got {}", id);
  Atom a;
  a.id = id;
  return SymIntAccess::make(atom_poly(std::move(a)));
}

int64_t SymInt::expect_int(std::string_view what) const {
  KILN_CHECK(!node_, "{} needs a concrete size, got the symbolic size {}", what, str());
  return value_;
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return checked_add(a.value_, b.value_);
  return SymIntAccess::make(add(SymIntAccess::poly(a), SymIntAccess::poly(b)));
}

SymInt operator-(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) {
    int64_t r = 0;
    KILN_CHECK(!__builtin_sub_overflow(a.value_, b.value_, &r),
               "symbolic size: {} - {} overflows int64", a.value_, b.value_);
    return r;
  }
  return SymIntAccess::make(add(SymIntAccess::poly(a), scale(SymIntAccess::poly(b), -1)));
}

SymInt operator*(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return checked_mul(a.value_, b.value_);
  return SymIntAccess::make(mul(SymIntAccess::poly(a), SymIntAccess::poly(b)));
}

SymInt floordiv(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return floor_div(a.value_, b.value_);
  return SymIntAccess::make(poly_floordiv(SymIntAccess::poly(a), SymIntAccess::poly(b)));
}

SymInt mod(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return floor_mod(a.value_, b.value_);
  return SymIntAccess::make(poly_mod(SymIntAccess::poly(a), SymIntAccess::poly(b)));
}

bool operator==(const SymInt& a, const SymInt& b) {
  if (!a.node_ && !b.node_) return a.value_ == b.value_;
  if (!a.node_ || !b.node_) return false;  // canonical: a symbolic one is never an integer
  return a.node_ == b.node_ || cmp_poly(a.node_->poly, b.node_->poly) == 0;
}

size_t SymInt::hash() const {
  return node_ ? hash_poly(node_->poly) : std::hash<int64_t>()(value_);
}

int64_t SymInt::evaluate(std::span<const int64_t> values) const {
  return node_ ? eval_poly(node_->poly, values) : value_;
}

std::vector<int64_t> SymInt::symbols() const {
  std::vector<int64_t> ids;
  if (node_) collect_symbols(node_->poly, &ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

SymInt SymInt::substitute(std::span<const SymInt> replacement) const {
  if (!node_) return *this;
  // Rebuilt through the public arithmetic, so the result is canonical again (a replacement
  // may make a division exact or cancel a term).
  SymInt sum = 0;
  for (const SymTerm& term : terms()) {
    SymInt product = term.coeff;
    for (const SymInt& atom : term.factors) {
      if (std::optional<int64_t> id = atom.symbol_id()) {
        KILN_CHECK(*id >= 0 && static_cast<size_t>(*id) < replacement.size(),
                   "SymInt::substitute: symbol s{} of {} has no replacement ({} given)", *id, str(),
                   replacement.size());
        product *= replacement[static_cast<size_t>(*id)];
        continue;
      }
      std::optional<SymDivision> d = atom.division();
      KILN_CHECK(d.has_value(), "SymInt::substitute: {} has an atom of no known kind", str());
      SymInt num = d->num.substitute(replacement), den = d->den.substitute(replacement);
      product *= d->is_mod ? mod(num, den) : floordiv(num, den);
    }
    sum += product;
  }
  return sum;
}

std::vector<SymTerm> SymInt::terms() const {
  std::vector<SymTerm> out;
  for (const sym_detail::Term& t : SymIntAccess::poly(*this).terms) {
    SymTerm term{t.coeff, {}};
    for (const AtomPtr& f : t.factors)
      term.factors.push_back(SymIntAccess::make(Poly{{sym_detail::Term{{f}, 1}}}));
    out.push_back(std::move(term));
  }
  return out;
}

std::optional<int64_t> SymInt::symbol_id() const {
  const Atom* a = single_atom(node_);
  if (a == nullptr || a->kind != Atom::Kind::kSymbol) return std::nullopt;
  return a->id;
}

std::optional<SymDivision> SymInt::division() const {
  const Atom* a = single_atom(node_);
  if (a == nullptr || a->kind == Atom::Kind::kSymbol) return std::nullopt;
  return SymDivision{a->kind == Atom::Kind::kMod, SymIntAccess::make(a->num),
                     SymIntAccess::make(a->den)};
}

std::string SymInt::str() const {
  return node_ ? poly_str(node_->poly) : fmt::format("{}", value_);
}

SymShape to_sym_shape(std::span<const int64_t> sizes) {
  return SymShape(sizes.begin(), sizes.end());
}

bool is_static(std::span<const SymInt> sizes) {
  return std::none_of(sizes.begin(), sizes.end(), [](const SymInt& s) { return s.is_symbolic(); });
}

std::vector<int64_t> expect_ints(std::span<const SymInt> sizes, std::string_view what) {
  std::vector<int64_t> out;
  out.reserve(sizes.size());
  for (const SymInt& s : sizes)
    out.push_back(s.expect_int(what));
  return out;
}

SymShape contiguous_strides(std::span<const SymInt> sizes) {
  SymShape out(sizes.size());
  SymInt running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    out[i] = running;
    running = running * sizes[i];
  }
  return out;
}

std::string sym_shape_str(std::span<const SymInt> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += sizes[i].str();
  }
  return s + "]";
}

namespace {

// Recursive descent over str()'s grammar:
//   sum := product (('+' | '-') product)*
//   product := ['-'] factor ('*' factor)*
//   factor := integer | 's' integer | ('floordiv' | 'mod') '(' sum ',' sum ')' | '(' sum ')'
class SymParser {
 public:
  explicit SymParser(std::string_view text) : text_(text) {}

  SymInt parse_all() {
    SymInt v = sum();
    skip_space();
    if (pos_ != text_.size()) fail("an operator");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) {
    KILN_ERROR("symbolic size \"{}\": expected {} at offset {}", text_, expected, pos_);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  int64_t integer() {
    skip_space();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v))
        fail("an integer within int64");
      ++pos_;
    }
    if (pos_ == start) fail("an integer");
    return v;
  }
  SymInt sum() {
    SymInt v = product();
    while (true) {
      if (eat("+")) {
        v = v + product();
      } else if (eat("-")) {
        v = v - product();
      } else {
        return v;
      }
    }
  }
  SymInt product() {
    bool negative = eat("-");
    SymInt v = factor();
    while (eat("*"))
      v = v * factor();
    return negative ? -v : v;
  }
  SymInt call(SymInt (*fn)(const SymInt&, const SymInt&)) {
    if (!eat("(")) fail("'('");
    SymInt a = sum();
    if (!eat(",")) fail("','");
    SymInt b = sum();
    if (!eat(")")) fail("')'");
    return fn(a, b);
  }
  SymInt factor() {
    skip_space();
    if (eat("floordiv")) return call(floordiv);
    if (eat("mod")) return call(mod);
    if (eat("(")) {
      SymInt v = sum();
      if (!eat(")")) fail("')'");
      return v;
    }
    if (eat("s")) return SymInt::symbol(integer());
    return integer();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

constexpr std::pair<std::string_view, SymFact::Relation> kRelations[] = {
    {"==", SymFact::Relation::kEq}, {"!=", SymFact::Relation::kNe}, {"<=", SymFact::Relation::kLe},
    {">=", SymFact::Relation::kGe}, {"<", SymFact::Relation::kLt},  {">", SymFact::Relation::kGt},
};

}  // namespace

SymInt parse_sym_int(std::string_view text) {
  return SymParser(text).parse_all();
}

bool SymFact::holds(std::span<const int64_t> values) const {
  return compare(relation, lhs.evaluate(values), rhs.evaluate(values));
}

std::string SymFact::str() const {
  for (const auto& [text, r] : kRelations)
    if (r == relation) return fmt::format("{} {} {}", lhs.str(), text, rhs.str());
  return "";
}

SymFact parse_sym_fact(std::string_view text) {
  // The relation is the first of these characters: an expression has none of them.
  size_t at = text.find_first_of("=!<>");
  KILN_CHECK(at != std::string_view::npos,
             "symbolic fact \"{}\": expected a relation (==, !=, <, <=, >, >=)", text);
  for (const auto& [token, relation] : kRelations) {
    if (text.substr(at, token.size()) == token) {
      return SymFact{parse_sym_int(text.substr(0, at)), relation,
                     parse_sym_int(text.substr(at + token.size()))};
    }
  }
  KILN_ERROR("symbolic fact \"{}\": expected a relation (==, !=, <, <=, >, >=) at offset {}", text,
             at);
}

}  // namespace kiln
