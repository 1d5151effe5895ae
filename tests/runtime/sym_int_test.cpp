// SymInt (base/sym_int.h): canonical forms, printing and parsing, and floor division and modulo
// checked against plain integer arithmetic at many values of the symbols.
#include <gtest/gtest.h>

#include <random>

#include "kiln/base/error.h"
#include "kiln/base/sym_int.h"

namespace kiln {
namespace {

const SymInt s0 = SymInt::symbol(0);
const SymInt s1 = SymInt::symbol(1);
const SymInt s2 = SymInt::symbol(2);

// Python's // and %, written out separately from the library's.
int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
int64_t py_mod(int64_t a, int64_t b) {
  return a - py_floordiv(a, b) * b;
}

TEST(SymInt, IntegersStayIntegers) {
  SymInt a = 6, b = 4;
  EXPECT_EQ((a * b + 1).maybe_int(), 25);
  EXPECT_EQ(floordiv(SymInt(-7), SymInt(2)).maybe_int(), -4);
  EXPECT_EQ(mod(SymInt(-7), SymInt(2)).maybe_int(), 1);
  EXPECT_EQ(mod(SymInt(7), SymInt(-2)).maybe_int(), -1);
  EXPECT_FALSE(a.is_symbolic());
  EXPECT_THROW(floordiv(s0, SymInt(0)), Error);
  EXPECT_THROW(SymInt(INT64_MAX) + 1, Error);
}

TEST(SymInt, CanonicalFormsCompareEqual) {
  EXPECT_EQ(s0 * 2, s0 + s0);
  EXPECT_EQ((s0 + 1) * (s0 - 1), s0 * s0 - 1);
  EXPECT_EQ(s0 * s1, s1 * s0);
  EXPECT_EQ(s0 - s0, SymInt(0));
  EXPECT_FALSE((s0 - s0).is_symbolic());
  EXPECT_NE(s0, s1);
  EXPECT_NE(s0, SymInt(2));
  EXPECT_EQ((s0 * s1 + 3).hash(), (3 + s1 * s0).hash());
}

TEST(SymInt, ExactDivisionsSimplify) {
  EXPECT_EQ(floordiv(32 * s0 * s1, 32 * s0), s1);
  EXPECT_EQ(floordiv(s0 * 8 + 16, SymInt(8)), s0 + 2);
  EXPECT_EQ(floordiv(2 * s0 + 1, SymInt(2)), s0);  // 0 <= 1 < 2
  EXPECT_EQ(mod(s0 * 8, SymInt(8)), SymInt(0));
  EXPECT_EQ(mod(2 * s0 + 3, SymInt(2)), SymInt(1));
  EXPECT_EQ(mod(3 * s0, SymInt(2)), mod(s0, SymInt(2)));
  EXPECT_EQ(floordiv(s0 + s1, s0 + s1), SymInt(1));
  EXPECT_EQ(floordiv(s0 - 1, SymInt(2)).str(), "floordiv(s0 + 1, 2) - 1");
}

TEST(SymInt, PrintsAndParsesBack) {
  const SymInt cases[] = {
      s0,
      32 * s0 * s1 + 1,
      s0 - 1,
      -s0 + 3,
      s0 * s0 * 2 - s1,
      floordiv(s0 + 2 * 1 - 3, SymInt(2)) + 1,
      mod(s0, SymInt(8)),
      floordiv(s0 * s1, s2 + 1),
      mod(s0 + 5, s1),
      SymInt(-12),
  };
  for (const SymInt& c : cases) {
    SCOPED_TRACE(c.str());
    SymInt back = parse_sym_int(c.str());
    EXPECT_EQ(back, c);
    EXPECT_EQ(back.str(), c.str());
  }
  EXPECT_EQ((32 * s0 * s1 + 1).str(), "32*s0*s1 + 1");
  EXPECT_EQ((-s0 + 3).str(), "-s0 + 3");
  EXPECT_EQ(parse_sym_int(" (s0+1) * ( s0 - 1 ) "), s0 * s0 - 1);
  EXPECT_EQ(parse_sym_int("-(s1 * 2)"), -2 * s1);
}

TEST(SymInt, ParseErrorsNameTheOffset) {
  try {
    parse_sym_int("s0 + * 2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "symbolic size \"s0 + * 2\": expected an integer at offset 5");
  }
  EXPECT_THROW(parse_sym_int("s0 s1"), Error);
  EXPECT_THROW(parse_sym_int("floordiv(s0)"), Error);
  EXPECT_THROW(parse_sym_int("99999999999999999999"), Error);
  EXPECT_THROW(parse_sym_int(""), Error);
}

TEST(SymInt, ExpectIntNamesTheUse) {
  EXPECT_EQ(SymInt(5).expect_int("view"), 5);
  try {
    (s0 * 4).expect_int("the kernel's loop");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "the kernel's loop needs a concrete size, got the symbolic size 4*s0");
  }
  EXPECT_EQ(sym_shape_str(SymShape{s0, 32}), "[s0, 32]");
  EXPECT_EQ(expect_ints(to_sym_shape(std::vector<int64_t>{2, 3}), "x"),
            (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(expect_ints(SymShape{s0}, "x"), Error);
}

// Random expressions from the grammar the shape rules produce, compared after evaluation with
// plain int64 arithmetic at every point of a small grid of symbol values.
TEST(SymInt, EvaluatesAsIntegerArithmetic) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  struct Both {
    SymInt sym;
    std::function<int64_t(const std::vector<int64_t>&)> ref;
  };
  std::function<Both(int)> make = [&](int depth) -> Both {
    int kind = depth == 0 ? pick(2) : pick(7);
    if (kind == 0) {
      int64_t c = pick(9) - 3;
      return {SymInt(c), [c](const auto&) { return c; }};
    }
    if (kind == 1) {
      int id = pick(3);
      return {SymInt::symbol(id), [id](const auto& v) { return v[id]; }};
    }
    Both a = make(depth - 1), b = make(depth - 1);
    switch (kind) {
      case 2:
        return {a.sym + b.sym, [a, b](const auto& v) { return a.ref(v) + b.ref(v); }};
      case 3:
        return {a.sym - b.sym, [a, b](const auto& v) { return a.ref(v) - b.ref(v); }};
      case 4:
        return {a.sym * b.sym, [a, b](const auto& v) { return a.ref(v) * b.ref(v); }};
      default: {
        // Divide by a positive constant or by a symbol (both never zero on the grid).
        Both d = pick(2) ? Both{SymInt(pick(5) + 1), nullptr} : make(0);
        if (!d.ref) {
          int64_t c = d.sym.maybe_int().value();
          d.ref = [c](const auto&) { return c; };
        }
        if (d.sym.maybe_int() == 0) d = {SymInt(3), [](const auto&) { return int64_t{3}; }};
        if (kind == 5)
          return {floordiv(a.sym, d.sym),
                  [a, d](const auto& v) { return py_floordiv(a.ref(v), d.ref(v)); }};
        return {mod(a.sym, d.sym), [a, d](const auto& v) { return py_mod(a.ref(v), d.ref(v)); }};
      }
    }
  };
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Both e = make(3);
    SymInt parsed = parse_sym_int(e.sym.str());
    ASSERT_EQ(parsed, e.sym) << e.sym.str();
    for (int64_t a = 2; a <= 7; ++a) {
      for (int64_t b = 2; b <= 6; ++b) {
        for (int64_t c : {2, 5, 9}) {
          std::vector<int64_t> v{a, b, c};
          ASSERT_EQ(e.sym.evaluate(v), e.ref(v))
              << e.sym.str() << " at " << a << "," << b << "," << c;
          ++checked;
        }
      }
    }
    // substitute: s0 -> 3, s1 -> s1, s2 -> s0 + 2 (an integer, the same symbol, an
    // expression), against the reference at the composed values.
    SymInt sub = e.sym.substitute(std::vector<SymInt>{SymInt(3), s1, s0 + 2});
    for (int64_t a = 2; a <= 5; ++a) {
      for (int64_t b = 2; b <= 4; ++b) {
        ASSERT_EQ(sub.evaluate(std::vector<int64_t>{a, b, 0}), e.ref({3, b, a + 2}))
            << e.sym.str() << " substituted: " << sub.str();
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

// terms(), symbol_id() and division() describe the canonical form; rebuilding an expression
// from them gives it back.
TEST(SymInt, StructureRebuildsTheExpression) {
  SymInt e = 2 * s0 * s1 + floordiv(s0 + 1, SymInt(2)) - 3;
  std::function<SymInt(const SymInt&)> rebuild = [&](const SymInt& x) -> SymInt {
    if (!x.is_symbolic()) return x;
    SymInt sum = 0;
    for (const SymTerm& t : x.terms()) {
      SymInt prod = t.coeff;
      for (const SymInt& f : t.factors) {
        if (std::optional<int64_t> id = f.symbol_id()) {
          prod = prod * SymInt::symbol(*id);
        } else {
          SymDivision d = f.division().value();
          SymInt n = rebuild(d.num), q = rebuild(d.den);
          prod = prod * (d.is_mod ? mod(n, q) : floordiv(n, q));
        }
      }
      sum = sum + prod;
    }
    return sum;
  };
  EXPECT_EQ(rebuild(e), e);
  std::vector<SymTerm> terms = e.terms();
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].coeff, 2);
  EXPECT_EQ(terms[0].factors, (std::vector<SymInt>{s0, s1}));
  EXPECT_EQ(terms[2].coeff, -3);
  EXPECT_TRUE(terms[2].factors.empty());
  EXPECT_EQ(s1.symbol_id(), 1);
  EXPECT_FALSE((2 * s1).symbol_id().has_value());
  EXPECT_FALSE(s1.division().has_value());
  SymDivision d = mod(s0 + s1, s2).division().value();
  EXPECT_TRUE(d.is_mod);
  EXPECT_EQ(d.num, s0 + s1);
  EXPECT_EQ(d.den, s2);
  EXPECT_TRUE(SymInt(0).terms().empty());
  EXPECT_EQ(SymInt(7).terms().size(), 1u);
  // substitute rebuilds the same way, and is canonical: replacing the divisor makes the
  // division exact.
  EXPECT_EQ(e.substitute(std::vector<SymInt>{s0, s1}), e);
  EXPECT_EQ(floordiv(4 * s0 * s1, s2).substitute(std::vector<SymInt>{s0, s1, 2 * s1}), 2 * s0);
  EXPECT_THROW(e.substitute(std::vector<SymInt>{s0}), kiln::Error);
}

TEST(SymFact, PrintsParsesAndHolds) {
  SymFact f = parse_sym_fact("mod(s0, 8) == 0");
  EXPECT_EQ(f.str(), "mod(s0, 8) == 0");
  std::vector<int64_t> v16{16}, v12{12};
  EXPECT_TRUE(f.holds(v16));
  EXPECT_FALSE(f.holds(v12));
  EXPECT_EQ(parse_sym_fact("s0 >= 2"), (SymFact{s0, SymFact::Relation::kGe, 2}));
  EXPECT_EQ(parse_sym_fact("s1<s0*2").str(), "s1 < 2*s0");
  EXPECT_EQ(parse_sym_fact("s1 != s2").relation, SymFact::Relation::kNe);
  EXPECT_THROW(parse_sym_fact("s0 + 1"), Error);
  EXPECT_THROW(parse_sym_fact("s0 =< 1"), Error);
  std::vector<int64_t> none;
  EXPECT_THROW(f.holds(none), Error);
}

}  // namespace
}  // namespace kiln
