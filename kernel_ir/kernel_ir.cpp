#include "kiln/kernel_ir/kernel_ir.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "kiln/base/dtype.h"
#include "kiln/base/error.h"
#include "kiln/base/half.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/kernel_ir/kernel_ir_rules.h"

namespace kiln::kir {

namespace {
constexpr int64_t kParallelGrainWork = 1 << 15;
constexpr int64_t kSizedLoopGuess = 1024;

// Innermost iterations of one iteration of a loop with this body (saturating).
int64_t innermost_work(const std::vector<Stmt>& body) {
  int64_t w = 1;
  for (const Stmt& s : body) {
    // A loop that runs to a size parameter counts as kSizedLoopGuess iterations.
    int64_t extent = s.extent_size >= 0 ? kSizedLoopGuess : s.extent;
    int64_t inner = s.kind == StmtKind::Loop
                        ? std::min<int64_t>(extent, kParallelGrainWork) * innermost_work(s.body)
                    : s.kind == StmtKind::If
                        ? std::max(innermost_work(s.body), innermost_work(s.else_body))
                        : 0;
    w = std::min<int64_t>(w + inner, kParallelGrainWork);
  }
  return w;
}
}  // namespace

int64_t parallel_grain(const std::vector<Stmt>& body) {
  return std::max<int64_t>(1, kParallelGrainWork / innermost_work(body));
}

namespace {

// names[v], or "?" for a value outside the enum.
template <size_t N>
std::string_view name_of(const std::string_view (&names)[N], uint8_t v) {
  return v < N ? names[v] : "?";
}

constexpr std::string_view kUnaryNames[] = {"neg",   "abs",  "exp",  "log",       "log1p",
                                            "expm1", "sqrt", "sin",  "cos",       "tanh",
                                            "erf",   "not",  "exp2", "gelu_exact"};
constexpr std::string_view kBinaryNames[] = {"add", "sub", "mul", "div", "rem", "pow", "max",
                                             "min", "eq",  "ne",  "lt",  "le",  "and", "or"};
constexpr std::string_view kReduceNames[] = {"sum", "prod", "max", "min"};
constexpr std::string_view kLoopKindNames[] = {"serial", "parallel", "vector"};

}  // namespace

std::string_view unary_op_name(UnaryOp op) {
  return name_of(kUnaryNames, static_cast<uint8_t>(op));
}

std::string_view binary_op_name(BinaryOp op) {
  return name_of(kBinaryNames, static_cast<uint8_t>(op));
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le;
}

std::string_view reduce_op_name(ReduceOp op) {
  return name_of(kReduceNames, static_cast<uint8_t>(op));
}

std::string_view loop_kind_name(LoopKind k) {
  return name_of(kLoopKindNames, static_cast<uint8_t>(k));
}

DType compute_dtype(DType t) {
  if (t == kFloat16 || t == kBFloat16) return kFloat32;
  return is_small_integral(t) ? kInt32 : t;
}

// ---- Builder ----

namespace {

// A free name: `base` itself, else base1, base2, ... (the printer shows names, so two variables
// or buffers must not share one).
template <class Items>
std::string unique_name(const Items& items, std::string requested) {
  std::string base = requested.empty() ? std::string(1, 'v') : std::move(requested);
  auto taken = [&](const std::string& n) {
    for (const auto& it : items)
      if (it.name == n) return true;
    return false;
  };
  if (!taken(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string n = fmt::format("{}{}", base, i);
    if (!taken(n)) return n;
  }
}

bool int_const(const Expr& e, int64_t* v) {
  if (e.kind != ExprKind::Const || !is_integral(e.dtype, false)) return false;
  *v = e.ivalue;
  return true;
}

// Integer arithmetic that wraps as the interpreter's does (two's complement, in the dtype).
int64_t wrap(int64_t v, DType t) {
  return wrap_integer(v, t);
}
int64_t wrapping(BinaryOp op, int64_t a, int64_t b, DType t) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinaryOp::Add:
      return wrap(static_cast<int64_t>(ua + ub), t);
    case BinaryOp::Sub:
      return wrap(static_cast<int64_t>(ua - ub), t);
    case BinaryOp::Mul:
      return wrap(static_cast<int64_t>(ua * ub), t);
    default:
      return 0;
  }
}

}  // namespace

ExprId Builder::add(Expr e) {
  auto id = static_cast<ExprId>(k_->exprs.size());
  std::string problem = expr_problem(*k_, id, e);
  KILN_CHECK(problem.empty(), "kernel IR builder (kernel {}): {}", k_->name, problem);
  k_->exprs.push_back(e);
  return id;
}

BufferId Builder::buffer(std::string name, DType dtype, bool output, int64_t extent) {
  KILN_CHECK(extent >= 0 || extent == kRuntimeExtent,
             "kernel IR builder (kernel {}): buffer {} has negative extent {}", k_->name, name,
             extent);
  Buffer b{unique_name(k_->buffers, std::move(name)), dtype, output, extent};
  k_->buffers.push_back(std::move(b));
  return static_cast<BufferId>(k_->buffers.size() - 1);
}

VarId Builder::var(std::string name, DType dtype) {
  Var v{unique_name(k_->vars, std::move(name)), dtype};
  k_->vars.push_back(std::move(v));
  return static_cast<VarId>(k_->vars.size() - 1);
}

namespace stmt {
Stmt loop(VarId var, int64_t extent, std::vector<Stmt> body, LoopKind kind) {
  Stmt s;
  s.kind = StmtKind::Loop;
  s.var = var;
  s.extent = extent;
  s.loop_kind = kind;
  s.body = std::move(body);
  return s;
}
Stmt sized_loop(VarId var, VarId size, std::vector<Stmt> body, LoopKind kind) {
  Stmt s = loop(var, 0, std::move(body), kind);
  s.extent_size = size;
  return s;
}
Stmt store(BufferId buffer, ExprId index, ExprId value) {
  Stmt s;
  s.kind = StmtKind::Store;
  s.buffer = buffer;
  s.index = index;
  s.value = value;
  return s;
}
Stmt let(VarId var, ExprId value) {
  Stmt s;
  s.kind = StmtKind::Let;
  s.var = var;
  s.value = value;
  return s;
}
Stmt accumulator(VarId var, ReduceOp op) {
  Stmt s;
  s.kind = StmtKind::Accumulator;
  s.var = var;
  s.reduce = op;
  return s;
}
Stmt accumulate(VarId var, ReduceOp op, ExprId value) {
  Stmt s = accumulator(var, op);
  s.kind = StmtKind::Accumulate;
  s.value = value;
  return s;
}
Stmt if_(ExprId cond, std::vector<Stmt> body, std::vector<Stmt> else_body) {
  Stmt s;
  s.kind = StmtKind::If;
  s.cond = cond;
  s.body = std::move(body);
  s.else_body = std::move(else_body);
  return s;
}
}  // namespace stmt

VarId Builder::size(std::string name) {
  VarId v = var(std::move(name), kInt64);
  k_->vars[static_cast<size_t>(v)].size = true;
  return v;
}

std::vector<VarId> Kernel::sizes() const {
  std::vector<VarId> out;
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].size) out.push_back(static_cast<VarId>(i));
  return out;
}

ExprId Builder::constant(double v, DType dtype) {
  Expr e;
  e.kind = ExprKind::Const;
  e.dtype = dtype;
  switch (dtype) {
    case DType::Float64:
      e.value = v;
      break;
    case DType::Float32:
      e.value = static_cast<float>(v);
      break;
    case DType::Float16:
      e.value = static_cast<float>(Half(static_cast<float>(v)));
      break;
    case DType::BFloat16:
      e.value = static_cast<float>(BFloat16(static_cast<float>(v)));
      break;
    case DType::Bool:
      e.ivalue = v != 0;
      break;
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: {
      // The bounds as doubles: exact for every integer dtype (-2^63 and 2^63 for int64).
      double lo = static_cast<double>(integer_min(dtype));
      double hi = dtype == kInt64 ? 0x1p63 : static_cast<double>(integer_max(dtype)) + 1;
      KILN_CHECK(v >= lo && v < hi, "kernel IR builder (kernel {}): constant {} does not fit {}",
                 k_->name, v, dtype_short_name(dtype));
      e.ivalue = static_cast<int64_t>(v);
      break;
    }
  }
  return add(e);
}

ExprId Builder::iconstant(int64_t v, DType dtype) {
  if (is_floating(dtype)) {
    // As static_cast<float>(int64) does: one rounding, straight from the integer.
    double d = dtype == kFloat64 ? static_cast<double>(v) : static_cast<float>(v);
    return constant(d, dtype);
  }
  Expr e;
  e.kind = ExprKind::Const;
  e.dtype = dtype;
  e.ivalue = dtype == kBool ? (v != 0) : wrap(v, dtype);
  return add(e);
}

ExprId Builder::var_ref(VarId v) {
  KILN_CHECK(v >= 0 && static_cast<size_t>(v) < k_->vars.size(),
             "kernel IR builder (kernel {}): variable id {} is out of range (the kernel has {})",
             k_->name, v, k_->vars.size());
  Expr e;
  e.kind = ExprKind::Var;
  e.dtype = k_->vars[static_cast<size_t>(v)].dtype;
  e.var = v;
  return add(e);
}

ExprId Builder::load(BufferId b, ExprId index) {
  KILN_CHECK(b >= 0 && static_cast<size_t>(b) < k_->buffers.size(),
             "kernel IR builder (kernel {}): buffer id {} is out of range (the kernel has {})",
             k_->name, b, k_->buffers.size());
  Expr e;
  e.kind = ExprKind::Load;
  e.dtype = k_->buffers[static_cast<size_t>(b)].dtype;
  e.buffer = b;
  e.args[0] = index;
  return add(e);
}

ExprId Builder::unary(UnaryOp op, ExprId a) {
  Expr e;
  e.kind = ExprKind::Unary;
  e.op = static_cast<uint8_t>(op);
  e.args[0] = a;
  e.dtype = a >= 0 && a < static_cast<ExprId>(k_->exprs.size()) ? dtype(a) : kFloat32;
  return add(e);
}

ExprId Builder::binary(BinaryOp op, ExprId a, ExprId b) {
  auto size = static_cast<ExprId>(k_->exprs.size());
  bool valid = a >= 0 && a < size && b >= 0 && b < size;
  if (valid && dtype(a) == dtype(b) && is_integral(dtype(a), false)) {
    // Index arithmetic stays short: fold constants and the identities of 0 and 1.
    DType t = dtype(a);
    int64_t ca = 0, cb = 0;
    bool ka = int_const(expr(a), &ca), kb = int_const(expr(b), &cb);
    bool commutative = op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::Max ||
                       op == BinaryOp::Min || op == BinaryOp::Eq || op == BinaryOp::Ne;
    if (ka && !kb && commutative) {  // constants go right: %i * 64, not 64 * %i
      std::swap(a, b);
      std::swap(ca, cb);
      std::swap(ka, kb);
    }
    if (ka && kb) {
      switch (op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Mul:
          return iconstant(wrapping(op, ca, cb, t), t);
        case BinaryOp::Div:
        case BinaryOp::Rem:
          // A zero divisor (or the overflowing MIN / -1) stays a node: it fails when it runs.
          if (cb != 0 && !(cb == -1 && ca == (t == kInt32 ? INT32_MIN : INT64_MIN)))
            return iconstant(op == BinaryOp::Div ? ca / cb : ca % cb, t);
          break;
        case BinaryOp::Pow:
          return iconstant(t == kInt32
                               ? math::pow(static_cast<int32_t>(ca), static_cast<int32_t>(cb))
                               : math::pow(ca, cb),
                           t);
        case BinaryOp::Max:
          return iconstant(std::max(ca, cb), t);
        case BinaryOp::Min:
          return iconstant(std::min(ca, cb), t);
        case BinaryOp::Eq:
          return iconstant(ca == cb, kBool);
        case BinaryOp::Ne:
          return iconstant(ca != cb, kBool);
        case BinaryOp::Lt:
          return iconstant(ca < cb, kBool);
        case BinaryOp::Le:
          return iconstant(ca <= cb, kBool);
        default:
          break;
      }
    } else if (kb) {
      if ((op == BinaryOp::Add || op == BinaryOp::Sub) && cb == 0) return a;
      if ((op == BinaryOp::Mul || op == BinaryOp::Div) && cb == 1) return a;
      if (op == BinaryOp::Mul && cb == 0) return iconstant(0, t);
      if (op == BinaryOp::Rem && (cb == 1 || cb == -1)) return iconstant(0, t);
      // (x + c1) + c2 -> x + (c1 + c2), and the same for products.
      const Expr& ea = expr(a);
      int64_t c1 = 0;
      if ((op == BinaryOp::Add || op == BinaryOp::Mul) && ea.kind == ExprKind::Binary &&
          ea.op == static_cast<uint8_t>(op) && int_const(expr(ea.args[1]), &c1)) {
        ExprId x = ea.args[0];  // before iconstant grows the arena under `ea`
        return binary(op, x, iconstant(wrapping(op, c1, cb, t), t));
      }
    }
  }
  Expr e;
  e.kind = ExprKind::Binary;
  e.op = static_cast<uint8_t>(op);
  e.args[0] = a;
  e.args[1] = b;
  e.dtype = is_comparison(op) ? kBool : valid ? dtype(a) : kFloat32;
  return add(e);
}

ExprId Builder::select(ExprId c, ExprId a, ExprId b) {
  auto size = static_cast<ExprId>(k_->exprs.size());
  bool valid = c >= 0 && c < size && a >= 0 && a < size && b >= 0 && b < size;
  if (valid && dtype(a) == dtype(b) && dtype(c) == kBool && expr(c).kind == ExprKind::Const)
    return expr(c).ivalue ? a : b;
  Expr e;
  e.kind = ExprKind::Select;
  e.args[0] = c;
  e.args[1] = a;
  e.args[2] = b;
  e.dtype = valid ? dtype(a) : kFloat32;
  return add(e);
}

ExprId Builder::cast(ExprId a, DType to) {
  if (a >= 0 && a < static_cast<ExprId>(k_->exprs.size())) {
    const Expr& ea = expr(a);
    if (ea.dtype == to) return a;
    // Folded only into a compute dtype: a small integer exists as a cast, never a constant
    // (Note [Kernel IR dtypes]).
    if (ea.kind == ExprKind::Const && is_integral(ea.dtype, true) && is_integral(to, true) &&
        is_compute_dtype(to))
      return iconstant(ea.ivalue, to);
  }
  Expr e;
  e.kind = ExprKind::Cast;
  e.dtype = to;
  e.args[0] = a;
  return add(e);
}

// ---- MathScope and Val ----

namespace {
thread_local Builder* t_builder = nullptr;
thread_local DType t_compute = kFloat32;
}  // namespace

MathScope::MathScope(Builder& b, DType compute)
    : prev_builder_(t_builder), prev_compute_(t_compute) {
  KILN_CHECK(is_compute_dtype(compute),
             "kir::MathScope: {} is not a compute dtype (b8, i32, i64, f32 or f64)",
             dtype_short_name(compute));
  t_builder = &b;
  t_compute = compute;
}

MathScope::~MathScope() {
  t_builder = prev_builder_;
  t_compute = prev_compute_;
}

Builder& MathScope::builder() {
  KILN_CHECK(t_builder != nullptr,
             "kir::Val used outside a kir::MathScope: expressions need a builder to add to");
  return *t_builder;
}

DType MathScope::compute() {
  KILN_CHECK(t_builder != nullptr,
             "kir::Val constant made outside a kir::MathScope: it has no compute dtype");
  return t_compute;
}

Val::Val(ExprId id) : id_(id) {}
Val::Val(double c) : id_(MathScope::builder().constant(c, MathScope::compute())) {}
Val::Val(float c) : Val(static_cast<double>(c)) {}
Val::Val(int c) : Val(static_cast<int64_t>(c)) {}
Val::Val(int64_t c) : id_(MathScope::builder().iconstant(c, MathScope::compute())) {}
Val::Val(bool c) : id_(MathScope::builder().iconstant(c, kBool)) {}

DType Val::dtype() const {
  return MathScope::builder().dtype(id_);
}

namespace {

Val binary_op(BinaryOp op, Val a, Val b) {
  Builder& bld = MathScope::builder();
  DType ta = a.dtype(), tb = b.dtype();
  KILN_CHECK(ta == tb,
             "kir::Val {} of {} and {} operands (kernel {}): convert operands with to_compute "
             "or cast first",
             binary_op_name(op), dtype_short_name(ta), dtype_short_name(tb), bld.kernel().name);
  return bld.binary(op, a.id(), b.id());
}

Val unary_op(UnaryOp op, Val a) {
  return MathScope::builder().unary(op, a.id());
}

}  // namespace

Val operator+(Val a, Val b) {
  return binary_op(BinaryOp::Add, a, b);
}
Val operator-(Val a, Val b) {
  return binary_op(BinaryOp::Sub, a, b);
}
Val operator*(Val a, Val b) {
  return binary_op(BinaryOp::Mul, a, b);
}
Val operator/(Val a, Val b) {
  return binary_op(BinaryOp::Div, a, b);
}
Val operator-(Val a) {
  return unary_op(UnaryOp::Neg, a);
}
Val operator!(Val a) {
  return unary_op(UnaryOp::Not, a);
}
Val operator==(Val a, Val b) {
  return binary_op(BinaryOp::Eq, a, b);
}
Val operator!=(Val a, Val b) {
  return binary_op(BinaryOp::Ne, a, b);
}
Val operator<(Val a, Val b) {
  return binary_op(BinaryOp::Lt, a, b);
}
Val operator<=(Val a, Val b) {
  return binary_op(BinaryOp::Le, a, b);
}
Val operator>(Val a, Val b) {
  return binary_op(BinaryOp::Lt, b, a);
}
Val operator>=(Val a, Val b) {
  return binary_op(BinaryOp::Le, b, a);
}

Val select(Val c, Val a, Val b) {
  Builder& bld = MathScope::builder();
  KILN_CHECK(c.dtype() == kBool && a.dtype() == b.dtype(),
             "kir::Val select with a {} condition and {} and {} operands (kernel {}): the "
             "condition must be b8 and the operands must have one dtype",
             dtype_short_name(c.dtype()), dtype_short_name(a.dtype()), dtype_short_name(b.dtype()),
             bld.kernel().name);
  return bld.select(c.id(), a.id(), b.id());
}

Val abs(Val x) {
  return unary_op(UnaryOp::Abs, x);
}
Val exp(Val x) {
  return unary_op(UnaryOp::Exp, x);
}
Val log(Val x) {
  return unary_op(UnaryOp::Log, x);
}
Val log1p(Val x) {
  return unary_op(UnaryOp::Log1p, x);
}
Val expm1(Val x) {
  return unary_op(UnaryOp::Expm1, x);
}
Val sqrt(Val x) {
  return unary_op(UnaryOp::Sqrt, x);
}
Val sin(Val x) {
  return unary_op(UnaryOp::Sin, x);
}
Val cos(Val x) {
  return unary_op(UnaryOp::Cos, x);
}
Val tanh(Val x) {
  return unary_op(UnaryOp::Tanh, x);
}
Val erf(Val x) {
  return unary_op(UnaryOp::Erf, x);
}
Val exp2(Val x) {
  return unary_op(UnaryOp::Exp2, x);
}
Val gelu_exact(Val x) {
  return unary_op(UnaryOp::GeluExact, x);
}
Val pow(Val a, Val b) {
  return binary_op(BinaryOp::Pow, a, b);
}

Val cast(Val x, DType dtype) {
  return MathScope::builder().cast(x.id(), dtype);
}

Val to_compute(Val x, DType result) {
  return cast(cast(x, result), compute_dtype(result));
}

}  // namespace kiln::kir
