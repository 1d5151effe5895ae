// OpDef::expr against the eager kernels (Note [Pointwise math is written once]): every fusible
// pointwise op has an expression, and on every OpInfo sample that reaches such an op, a
// single-op kernel built from the expression and run by the kernel-IR interpreter gives the
// eager result. Integer and bool results must be identical. Floating results may differ slightly,
// since the eager kernels are compiled with -ffp-contract=fast and may fuse a multiply and an add
// that the interpreter rounds twice (see Distance).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/kernels/copy_attrs.h"
#include "kiln/runtime/kernels/pointwise_attrs.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/type_promotion.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Tensor;
namespace kir = kiln::kir;

constexpr double kMaxUlp = 4;  // in ulp of max(|value|, 1): see Distance

bool fusible_pointwise(const kiln::OpDef& op) {
  return op.has(kiln::kPointwise) && !op.has(kiln::kInPlace) && !op.has(kiln::kRandom);
}

struct Counts {
  int samples = 0;
  int edge_cases = 0;   // AttributesAndDTypeEdges
  int ops_checked = 0;  // pointwise nodes compared, over all samples
  int bitwise = 0;
  int within_tolerance = 0;
  int empty = 0;  // nodes with an empty output: no loop to build
  int64_t max_ulp = 0;
  double max_scaled = 0;  // Distance::scaled
  std::map<std::string, int64_t> max_ulp_by_op;
};
Counts& counts() {
  static Counts c;
  return c;
}

class ReportCounts : public ::testing::Environment {
 public:
  void TearDown() override {
    const Counts& c = counts();
    if (c.samples + c.edge_cases == 0) return;
    std::printf(
        "[pointwise expr] %d OpInfo samples (each also scaled) and %d edge cases; %d pointwise op "
        "calls compared: %d bitwise equal, %d within tolerance (max %lld ulp; max %.3g ulp of "
        "max(|value|, 1), allowed %g); %d with an empty output\n",
        c.samples, c.edge_cases, c.ops_checked, c.bitwise, c.within_tolerance,
        static_cast<long long>(c.max_ulp), c.max_scaled, kMaxUlp, c.empty);
    for (const auto& [op, ulp] : c.max_ulp_by_op) {
      if (ulp > 0) {
        std::printf("[pointwise expr]   %s: max %lld ulp\n", op.c_str(),
                    static_cast<long long>(ulp));
      }
    }
  }
};
[[maybe_unused]] auto* const kReport =
    ::testing::AddGlobalTestEnvironment(new ReportCounts());  // gtest owns it

TEST(PointwiseExpr, EveryFusiblePointwiseOpHasAnExpression) {
  int n = 0;
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (!fusible_pointwise(*op)) continue;
    ++n;
    EXPECT_NE(op->expr, nullptr) << "pointwise op '" << op->name << "' has no OpDef::expr";
  }
  EXPECT_GT(n, 0);
}

// ---- the single-op kernel ----

// Elements addressable from t's first element (its strides are non-negative).
int64_t extent_of(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t e = 1;
  for (size_t d = 0; d < t.sizes().size(); ++d)
    e += (t.sizes()[d] - 1) * t.strides()[d];
  return e;
}

// out[i] = cast(expr(in_0[...], in_1[...], ...)) for i over the output's row-major positions,
// each input read at its own strides, broadcast to the output shape (stride 0 on broadcast dims).
// With `operand_dtype`, the loaded operands are converted to it before the expression sees them.
kir::Kernel single_op_kernel(const kiln::OpDef& op, const void* attrs,
                             const std::vector<Tensor>& inputs, const kiln::Shape& out_sizes,
                             DType out_dtype, std::optional<DType> operand_dtype = {}) {
  kir::Kernel k;
  k.name = op.name;
  kir::Builder b(k);
  std::vector<kir::BufferId> in_bufs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_bufs.push_back(
        b.buffer("in" + std::to_string(i), inputs[i].dtype(), false, extent_of(inputs[i])));
  }
  int64_t n = kiln::shape_numel(out_sizes);
  kir::BufferId out = b.buffer("out", out_dtype, true, n);
  kir::VarId i = b.var("i", kiln::kInt64);

  // The output's multi-index: idx[d] = (i / inner[d]) % sizes[d].
  size_t nd = out_sizes.size();
  std::vector<kir::ExprId> idx(nd);
  int64_t inner = 1;
  for (size_t d = nd; d-- > 0;) {
    kir::ExprId q = b.binary(kir::BinaryOp::Div, b.var_ref(i), b.iconstant(inner));
    idx[d] = b.binary(kir::BinaryOp::Rem, q, b.iconstant(out_sizes[d]));
    inner *= out_sizes[d];
  }

  std::vector<kir::Val> loaded;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& t = inputs[j];
    size_t lead = nd - t.sizes().size();
    kir::ExprId index = b.iconstant(0);
    for (size_t d = 0; d < t.sizes().size(); ++d) {
      if (t.sizes()[d] == 1) continue;  // broadcast (or size 1): stride 0
      kir::ExprId term = b.binary(kir::BinaryOp::Mul, idx[lead + d], b.iconstant(t.strides()[d]));
      index = b.binary(kir::BinaryOp::Add, index, term);
    }
    kir::ExprId v = b.load(in_bufs[j], index);
    loaded.emplace_back(operand_dtype ? b.cast(v, *operand_dtype) : v);
  }

  kir::ExprId value;
  {
    kir::MathScope scope(b, kir::compute_dtype(out_dtype));
    kir::Val v = op.expr(op, loaded, attrs, out_dtype);
    value = b.cast(v.id(), out_dtype);
  }
  kir::Stmt store;
  store.kind = kir::StmtKind::Store;
  store.buffer = out;
  store.index = b.var_ref(i);
  store.value = value;
  kir::Stmt loop;
  loop.kind = kir::StmtKind::Loop;
  loop.var = i;
  loop.extent = n;
  loop.body.push_back(std::move(store));
  k.body.push_back(std::move(loop));
  return k;
}

Tensor run_single_op_kernel(const kir::Kernel& k, const std::vector<Tensor>& inputs,
                            const Tensor& like) {
  Tensor out = kiln::empty_tensor(like.sizes(), like.dtype(), like.device());
  std::vector<Tensor> args = inputs;
  args.push_back(out);
  kir::run_kernel(k, args);
  return out;
}

// ---- comparison ----

// A floating value's bits as an integer that orders like the value (-0 and +0 both 0), so that
// the difference of two of them counts the representable values between them.
int64_t ordered(uint64_t bits, int width) {
  uint64_t sign = uint64_t{1} << (width - 1);
  auto mag = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) != 0 ? -mag : mag;
}

struct FloatView {
  double value;
  int64_t ord;
};

FloatView float_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case kiln::kFloat32: {
      float v = t.data_ptr<float>()[i];
      return {v, ordered(std::bit_cast<uint32_t>(v), 32)};
    }
    case kiln::kFloat64: {
      double v = t.data_ptr<double>()[i];
      return {v, ordered(std::bit_cast<uint64_t>(v), 64)};
    }
    case kiln::kFloat16: {
      kiln::Half v = t.data_ptr<kiln::Half>()[i];
      return {static_cast<float>(v), ordered(v.bits, 16)};
    }
    case kiln::kBFloat16: {
      kiln::BFloat16 v = t.data_ptr<kiln::BFloat16>()[i];
      return {static_cast<float>(v), ordered(v.bits, 16)};
    }
    default:
      throw std::runtime_error("float_at: not a floating dtype");
  }
}

// How far a result is from eager's. `ulp` counts the representable values between them;
// `scaled` is the difference in ulp of the larger magnitude, or of 1 when both are smaller: a
// contracted multiply-add is exact where the eager code rounds twice, and when the terms cancel
// (gelu's 1 + tanh near x = -4, a + alpha * b), the difference is an ulp of the terms, not of the
// small result. `exact` is false for a difference no tolerance covers: NaN against a number, an
// infinity against anything else, or differing integer or bool bits.
struct Distance {
  bool exact = true;
  int64_t ulp = 0;
  double scaled = 0;
  std::string where;  // the worst element
};

int mantissa_bits(DType t) {
  switch (t) {
    case kiln::kFloat64:
      return 52;
    case kiln::kFloat16:
      return 10;
    case kiln::kBFloat16:
      return 7;
    default:
      return 23;
  }
}

// Both tensors are contiguous and of one dtype.
Distance distance(const Tensor& got, const Tensor& want) {
  Distance r;
  if (!kiln::is_floating(want.dtype())) {
    size_t es = want.element_size();
    const auto* g = static_cast<const char*>(got.raw_data());
    const auto* w = static_cast<const char*>(want.raw_data());
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (std::memcmp(g + i * es, w + i * es, es) != 0) {
        r.exact = false;
        r.where = "element " + std::to_string(i);
        return r;
      }
    }
    return r;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    FloatView g = float_at(got, i), w = float_at(want, i);
    bool gn = std::isnan(g.value), wn = std::isnan(w.value);
    std::string where = fmt::format("element {}: got {}, eager {}", i, g.value, w.value);
    if (gn || wn || std::isinf(g.value) || std::isinf(w.value)) {
      if ((gn && wn) || g.value == w.value) continue;
      r.exact = false;
      r.where = where;
      return r;
    }
    int64_t ulp = std::abs(g.ord - w.ord);
    double m = std::max({std::abs(g.value), std::abs(w.value), 1.0});
    double scaled =
        std::abs(g.value - w.value) / std::ldexp(1.0, std::ilogb(m) - mantissa_bits(want.dtype()));
    r.ulp = std::max(r.ulp, ulp);
    if (scaled > r.scaled) {
      r.scaled = scaled;
      r.where = where;
    }
  }
  return r;
}

// Runs `op` eagerly and as its single-op kernel on `inputs`, and compares the two.
void check_op(const kiln::OpDef& op, const void* attrs, const std::vector<Tensor>& inputs,
              const Tensor& eager) {
  SCOPED_TRACE("op " + op.name);
  ASSERT_NE(op.expr, nullptr);
  if (eager.numel() == 0) {
    ++counts().empty;
    return;
  }
  kir::Kernel k = single_op_kernel(op, attrs, inputs, eager.sizes(), eager.dtype());
  try {
    kir::verify(k);
  } catch (const std::exception& e) {
    FAIL() << "verifier: " << e.what() << "\n" << k.str();
  }
  Tensor got = run_single_op_kernel(k, inputs, eager);

  Distance d = distance(got, eager.contiguous());
  ++counts().ops_checked;
  ASSERT_TRUE(d.exact) << "differs from eager at " << d.where << "\n" << k.str();
  EXPECT_LE(d.scaled, kMaxUlp) << d.where << " (" << d.ulp << " ulp)\n" << k.str();
  if (d.ulp == 0) {
    ++counts().bitwise;
  } else {
    ++counts().within_tolerance;
  }
  counts().max_ulp = std::max(counts().max_ulp, d.ulp);
  counts().max_scaled = std::max(counts().max_scaled, d.scaled);
  int64_t& by_op = counts().max_ulp_by_op[op.name];
  by_op = std::max(by_op, d.ulp);
}

// Replays a traced graph node by node, so that every fusible pointwise node, including those a
// composite op (linear, mse_loss) calls, is checked on the tensors its eager call gets.
void check_graph(const kiln::ir::Graph& g, const std::vector<Tensor>& inputs) {
  replay_graph(g, inputs, [](const kiln::ir::Node& node, const std::vector<Tensor>& args) {
    std::vector<Tensor> outs = kiln::call_op(*node.op(), args, node.attrs());
    if (fusible_pointwise(*node.op())) check_op(*node.op(), node.attrs(), args, outs[0]);
    return outs;
  });
}

// The sample's inputs, and the same with floating inputs scaled by 0.75 (in the same layout),
// for values the sample's author did not pick.
void check_sample(const Sample& s) {
  kiln::TracedFunction f = kiln::trace(s.call, s.inputs);
  ++counts().samples;
  check_graph(f.graph(), s.inputs);
  std::vector<Tensor> scaled;
  for (const Tensor& t : s.inputs)
    scaled.push_back(kiln::is_floating(t.dtype()) ? scaled_same_layout(t, 0.75) : t);
  SCOPED_TRACE("inputs scaled by 0.75");
  check_graph(f.graph(), scaled);
}

bool covers_fusible_pointwise(const OpInfo& info) {
  for (const std::string& c : info.covers) {
    const kiln::OpDef* op = kiln::OpTable::instance().find(c);
    if (op != nullptr && fusible_pointwise(*op)) return true;
  }
  return false;
}

std::vector<std::string> pointwise_opinfo_names() {
  std::vector<std::string> names;
  for (const std::string& n : opinfo_names()) {
    if (covers_fusible_pointwise(find_opinfo(n))) names.push_back(n);
  }
  return names;
}

class PointwiseExprOpInfo : public ::testing::TestWithParam<std::string> {};

TEST_P(PointwiseExprOpInfo, KernelMatchesEager) {
  for_each_sample(find_opinfo(GetParam()), check_sample);
}

INSTANTIATE_TEST_SUITE_P(Ops, PointwiseExprOpInfo, ::testing::ValuesIn(pointwise_opinfo_names()),
                         opinfo_test_name);

}  // namespace
}  // namespace kiln_test

namespace kiln_test {
namespace {

// A comparison computes in result_type, where a zero-dim operand ranks below a dimensioned one:
// eq(float32 tensor, float64 zero-dim 0.1) compares in float32, where 0.1 rounds to 0.1f. The
// expression sees only dtypes, so the caller passes such operands converted to result_type.
TEST(PointwiseExpr, ComparisonWithAWiderZeroDimOperand) {
  const kiln::OpDef& eq = kiln::get_op("eq");
  std::vector<Tensor> in = {kiln::from_vector(std::vector<float>{0.1f, 0.2f, -1.0f}, {3}),
                            kiln::from_vector(std::vector<double>{0.1}, {})};
  kiln::NoAttrs none;
  Tensor eager = kiln::call_op(eq, in, &none)[0];
  std::vector<kiln::MetaRef> metas = {kiln::MetaRef::of(in[0]), kiln::MetaRef::of(in[1])};
  DType compute = kiln::result_type(metas);
  ASSERT_EQ(compute, kiln::kFloat32);
  kir::Kernel k = single_op_kernel(eq, &none, in, eager.sizes(), kiln::kBool, compute);
  Tensor got = run_single_op_kernel(k, in, eager);
  EXPECT_TRUE(identical(got, eager)) << k.str();
  EXPECT_TRUE(got.data_ptr<bool>()[0]);
}

}  // namespace
}  // namespace kiln_test

namespace kiln_test {
namespace {

template <class T>
Tensor vec(std::vector<T> v, DType dtype) {
  auto n = static_cast<int64_t>(v.size());
  return kiln::from_vector(v, {n}).to(dtype);
}

template <class A>
void check_case(const std::string& op_name, const std::vector<Tensor>& inputs, const A& attrs) {
  SCOPED_TRACE(op_name + " " + kiln::get_op(op_name).attrs_str(&attrs));
  const kiln::OpDef& op = kiln::get_op(op_name);
  Tensor eager = kiln::call_op(op, inputs, &attrs)[0];
  ++counts().edge_cases;
  check_op(op, &attrs, inputs, eager);
}

// What the OpInfo samples leave out: attributes other than the defaults (a float alpha rounded to
// float32 or to a 16-bit result's compute type, int64 attributes beyond double's 53 bits), bool
// arithmetic (add is or, mul is and), and conversions at the edges (double to half through float,
// NaN and -0 to bool and int).
TEST(PointwiseExpr, AttributesAndDTypeEdges) {
  using kiln::AlphaAttrs;
  using kiln::ScalarOperandAttrs;
  using kiln::ScalarOtherAttrs;
  const DType f32 = kiln::kFloat32, f64 = kiln::kFloat64, f16 = kiln::kFloat16,
              bf16 = kiln::kBFloat16, i32 = kiln::kInt32, i64 = kiln::kInt64, b8 = kiln::kBool;
  Tensor x32 = make_input({64}, f32, Layout::Contiguous, -5, 5, 1);
  Tensor y32 = make_input({64}, f32, Layout::Contiguous, -5, 5, 2);
  Tensor x16 = make_input({64}, f16, Layout::Contiguous, -5, 5, 3);
  Tensor y16 = make_input({64}, f16, Layout::Transposed, -5, 5, 7);
  Tensor xb16 = make_input({64}, bf16, Layout::Strided, -5, 5, 5);
  Tensor x64 = make_input({64}, f64, Layout::Contiguous, -5, 5, 6);
  Tensor pa = vec<bool>({false, false, true, true}, b8),
         pb = vec<bool>({false, true, false, true}, b8);
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor ia = vec<int64_t>({big, -big, 7, 0}, i64),
         ib = vec<int64_t>({(int64_t{1} << 58) + 3, 5, -2, 1}, i64);
  Tensor i32a = vec<int32_t>({-3, -1, 0, 1, 2, 5}, i32);
  Tensor special =
      vec<double>({NAN, -0.0, 0.0, INFINITY, -INFINITY, 1e300, 0.1, 65519.99, 3e9, -2.5}, f64);

  check_case("add", {x32, y32}, AlphaAttrs{0.1});
  check_case("sub", {x32, y32}, AlphaAttrs{-2.7});
  check_case("add", {x16, y16}, AlphaAttrs{0.1});
  check_case("sub", {xb16, x16}, AlphaAttrs{1.5});
  check_case("add", {x64, y32}, AlphaAttrs{0.1});
  check_case("add", {ia, ib}, AlphaAttrs{3});
  // A large alpha against small operands: alpha * b stays in range (signed overflow would be
  // undefined in the eager kernel too).
  check_case("sub", {ia, vec<int64_t>({3, 5, -2, 1}, i64)}, AlphaAttrs{int64_t{1} << 40});
  check_case("add", {pa, pb}, AlphaAttrs{true});
  check_case("add", {pa, pb}, AlphaAttrs{false});
  check_case("mul", {pa, pb}, AlphaAttrs{});
  check_case("add_scalar", {x32}, ScalarOperandAttrs{0.1, 2.5});
  check_case("add_scalar", {x16}, ScalarOperandAttrs{1e-3, 3});
  check_case("add_scalar", {ia}, ScalarOperandAttrs{(int64_t{1} << 53) + 1, 1});
  check_case("mul_scalar", {ia}, ScalarOperandAttrs{3, 1});
  check_case("div_scalar", {i32a}, ScalarOperandAttrs{3, 1});
  check_case("sub_scalar", {i32a}, ScalarOperandAttrs{0.25, 1});
  check_case("mul_scalar", {pa}, ScalarOperandAttrs{true, 1});
  check_case("maximum", {pa, pb}, kiln::NoAttrs{});
  check_case("minimum", {ia, ib}, kiln::NoAttrs{});
  check_case("lt", {pa, pb}, kiln::NoAttrs{});
  check_case("eq", {ia, ib}, kiln::NoAttrs{});
  check_case("le", {x16, y32}, kiln::NoAttrs{});
  check_case("gt_scalar", {i32a}, ScalarOtherAttrs{1.5});
  check_case("eq_scalar", {pa}, ScalarOtherAttrs{1});
  check_case("ne_scalar", {ia}, ScalarOtherAttrs{big});
  check_case("ge_scalar", {x16}, ScalarOtherAttrs{0.1});
  check_case("pow", {i32a, vec<int32_t>({3, -1, 2, -2, 0, 4}, i32)}, kiln::NoAttrs{});
  check_case("pow_scalar", {i32a}, ScalarOtherAttrs{3});
  check_case("pow_scalar", {x32}, ScalarOtherAttrs{2.5});
  Tensor special32 =
      vec<float>({NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1e30f, 0.1f, 6e19f, 3e9f, -2.5f}, f32);
  for (double e : {2.0, 3.0, -2.0, 0.5, -0.5, -1.0}) {  // Note [pow by a constant exponent]
    check_case("pow_scalar", {x32}, ScalarOtherAttrs{e});
    check_case("pow_scalar", {x64}, ScalarOtherAttrs{e});
    check_case("pow_scalar", {special32}, ScalarOtherAttrs{e});
    check_case("pow_scalar", {special}, ScalarOtherAttrs{e});
    check_case("pow_scalar", {x16}, ScalarOtherAttrs{e});  // pow itself for 16-bit floats
  }
  check_case("pow_scalar", {x32}, ScalarOtherAttrs{int64_t{2}});
  check_case("pow_scalar", {i32a}, ScalarOtherAttrs{-0.5});
  check_case("pow_scalar", {i32a}, ScalarOtherAttrs{0.5});
  check_case("clamp", {i32a}, kiln::ClampAttrs{-1, 2});
  check_case("clamp", {i32a}, kiln::ClampAttrs{3, -1});
  check_case("clamp", {ia}, kiln::ClampAttrs{std::nullopt, big - 1});
  check_case("clamp", {x16}, kiln::ClampAttrs{-0.1, std::nullopt});
  check_case("clamp", {special}, kiln::ClampAttrs{-1e299, 1e299});
  check_case("gelu", {x16}, kiln::GeluAttrs{"tanh"});
  check_case("gelu", {xb16}, kiln::GeluAttrs{"none"});
  check_case("masked_fill", {pa, pb}, kiln::MaskedFillAttrs{true});
  check_case("masked_fill", {ia, pb}, kiln::MaskedFillAttrs{big});
  check_case("masked_fill", {x16, pb.slice(0, 0, 1)}, kiln::MaskedFillAttrs{0.1});
  check_case("where", {pb, pa, pb}, kiln::NoAttrs{});
  check_case("where", {pb, ia, pa}, kiln::NoAttrs{});
  check_case("logical_and", {special.slice(0, 0, 9), special.slice(0, 1, 10)}, kiln::NoAttrs{});
  check_case("logical_not", {special}, kiln::NoAttrs{});
  check_case("neg", {ia}, kiln::NoAttrs{});
  check_case("sign", {special}, kiln::NoAttrs{});
  check_case("relu", {special}, kiln::NoAttrs{});
  for (DType to : {f32, f16, bf16, i32, i64, b8})
    check_case("convert", {special}, kiln::DTypeAttrs{to});
  for (DType to : {f64, f16, bf16, b8})
    check_case("convert", {ia}, kiln::DTypeAttrs{to});
  check_case("convert", {x16}, kiln::DTypeAttrs{bf16});
  check_case("clone", {xb16}, kiln::NoAttrs{});
}

}  // namespace
}  // namespace kiln_test
