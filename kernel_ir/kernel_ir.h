// The kernel IR: the loop level below the graph IR (DESIGN.md principle 4). A Kernel is one
// launch: buffers (its tensor arguments), a statement tree of loops, loads and stores, and an
// arena of scalar expressions that the statements reference by id. Every backend reads this one
// form: the kernel-IR interpreter (the reference executor), the LLVM backend and the CUDA C
// emitter.
//
// Note [Kernel IR]
// - Sizes are static unless the kernel declares size parameters (Note [Size parameters]): a
//   loop's extent is a constant, and so is every stride and offset inside an index expression
//   (a symbolic graph's sizes become size parameters: Note [Symbolic types] in ir/type.h).
// - A buffer is addressed in elements from the tensor's first element (its data pointer, storage
//   offset included); index expressions are Int64 and built from loop variables and constants,
//   so a kernel reads any strided layout, broadcasts (stride 0) included.
// - Scalar expressions are typed with the tensor dtypes. Pointwise math is built by instantiating
//   the op table's math templates (base/pointwise_math.h) with `Val`, so every primitive below
//   is the one the eager kernels call for the same dtype (Note [Pointwise math is written once]).
// - Variables are loop indices, `let` bindings and accumulators. Each is defined once and is in
//   scope in the rest of the block that defines it (a loop index: in the loop's body). An
//   accumulator starts at its reduction's identity, is combined by `accumulate` statements and
//   is read as an ordinary variable.
// - The verifier (kernel_verifier.h) checks all of this, plus that every index expression stays
//   inside its buffer for every iteration.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/base/dtype.h"

namespace kiln::kir {

// Note [ExprId is not int]
// ExprId is a builtin integer type distinct from int and from int64_t: Val has a constructor for
// an expression (ExprId) and constructors for constants (int, int64_t, ...), and the math
// templates' `V(1)` must pick the constant one. With ExprId = int32_t both would be Val(int).
using ExprId = std::conditional_t<std::is_same_v<int64_t, long>, long long, long>;
using VarId = int32_t;
using BufferId = int32_t;
inline constexpr ExprId kNoExpr = -1;

enum class ExprKind : uint8_t {
  Const,   // `value` (floating dtypes) or `ivalue` (integer and bool dtypes)
  Var,     // `var`
  Load,    // buffers[buffer][args[0]]; its dtype is the buffer's
  Unary,   // unary(args[0])
  Binary,  // binary(args[0], args[1])
  Select,  // args[0] (Bool) ? args[1] : args[2]
  Cast,    // args[0] converted to `dtype` (as static_cast between the C++ types)
};

// The primitives of base/pointwise_math.h. Each evaluates exactly as that header's overload
// for the operand's dtype does (e.g. Exp on Float32 is kiln::math::exp(float)).
// Exp2 and GeluExact are the primitives the gelus are written with (kiln::math::gelu_tanh and
// gelu_erf); they come after Not so that the older ops keep their numbers.
enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Sin,
  Cos,
  Tanh,
  Erf,
  Not,
  Exp2,
  GeluExact
};
// Arithmetic ops take and give the operands' dtype; comparisons give Bool; And/Or take Bool.
// Div on integers truncates (index arithmetic); Rem is the matching remainder.
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Rem, Pow, Max, Min, Eq, Ne, Lt, Le, And, Or };

std::string_view unary_op_name(UnaryOp op);    // "neg", "exp", ...
std::string_view binary_op_name(BinaryOp op);  // "add", "lt", ...
bool is_comparison(BinaryOp op);               // Eq Ne Lt Le

struct Expr {
  ExprKind kind = ExprKind::Const;
  DType dtype = kFloat32;
  uint8_t op = 0;  // UnaryOp or BinaryOp
  ExprId args[3] = {kNoExpr, kNoExpr, kNoExpr};
  double value = 0;      // Const, floating
  int64_t ivalue = 0;    // Const, integer or bool
  VarId var = -1;        // Var
  BufferId buffer = -1;  // Load
};

// How an accumulator combines values. Max and Min propagate NaN (as amax/amin do): once a NaN
// is combined the accumulator stays NaN.
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };
std::string_view reduce_op_name(ReduceOp op);

// A loop's annotation, a promise the backends may use: Parallel iterations are independent and
// may run on different threads; a Vector loop is an innermost loop whose iterations may run in
// SIMD lanes (its accumulates may be split over several partial accumulators).
enum class LoopKind : uint8_t { Serial, Parallel, Vector };
std::string_view loop_kind_name(LoopKind k);
struct Stmt;
// Iterations of a Parallel loop with this body per thread-pool chunk: enough for about 2^15
// innermost iterations a chunk (a loop that runs to a size parameter counted as 1024). The
// executors share it, so they split a static kernel's loops alike.
int64_t parallel_grain(const std::vector<Stmt>& body);

enum class StmtKind : uint8_t {
  Loop,         // for var in [0, extent): body
  Store,        // buffers[buffer][index] = value (converted to the buffer's dtype)
  Let,          // var = value, for the rest of the enclosing block
  Accumulator,  // declares var with the identity of `reduce` (dtype: the var's)
  Accumulate,   // var = reduce(var, value)
  If,           // if cond: body else: else_body
};

struct Stmt {
  StmtKind kind = StmtKind::Store;
  VarId var = -1;          // Loop, Let, Accumulator, Accumulate
  int64_t extent = 0;      // Loop
  VarId extent_size = -1;  // Loop: when set, a size parameter giving the extent at launch
  LoopKind loop_kind = LoopKind::Serial;
  BufferId buffer = -1;             // Store
  ExprId index = kNoExpr;           // Store
  ExprId value = kNoExpr;           // Store, Let, Accumulate
  ExprId cond = kNoExpr;            // If
  ReduceOp reduce = ReduceOp::Sum;  // Accumulator, Accumulate
  std::vector<Stmt> body;           // Loop, If
  std::vector<Stmt> else_body;      // If
};

struct Buffer {
  std::string name;
  DType dtype = kFloat32;
  bool output = false;  // written by the kernel; inputs are only read
  // Elements addressable from the first one (the verifier's bound), or kRuntimeExtent in a
  // kernel with size parameters: bound at launch.
  int64_t extent = 0;
};
inline constexpr int64_t kRuntimeExtent = -1;

// Note [Size parameters]
// A kernel that runs at many sizes declares them as size parameters: Int64 variables bound at
// launch (after the buffers, in declaration order), in scope everywhere and defined by no
// statement. A loop's extent may be one (Stmt::extent_size) and index expressions may read them;
// buffers then have kRuntimeExtent. The verifier checks such a kernel's structure alone, and
// its index bounds once sizes and buffer extents are known: verify(specialize_sizes(...)), as
// the interpreter and the LLVM launcher do on every run. The LLVM backend and the CUDA emitter take
// the sizes as kernel arguments, so one compiled kernel serves every shape (the eager CUDA
// kernels of Note [Row programs]); specialize_sizes (kernel_passes.h) turns such a kernel into
// a static one.
struct Var {
  std::string name;
  DType dtype = kInt64;
  bool size = false;  // a size parameter
};

struct Kernel {
  std::string name;
  std::vector<Buffer> buffers;  // in launch-argument order
  std::vector<Var> vars;
  std::vector<Expr> exprs;
  std::vector<Stmt> body;

  std::string str() const;  // the kernel-IR text (kernel_printer.h)
  // The size parameters in launch order.
  std::vector<VarId> sizes() const;
};

// ---- statements ----

// Constructors for the statements, which are plain structs (`Stmt s; s.kind = ...` works too).
namespace stmt {
Stmt loop(VarId var, int64_t extent, std::vector<Stmt> body, LoopKind kind = LoopKind::Serial);
// A loop that runs to the size parameter `size` (Note [Size parameters]).
Stmt sized_loop(VarId var, VarId size, std::vector<Stmt> body, LoopKind kind = LoopKind::Serial);
Stmt store(BufferId buffer, ExprId index, ExprId value);
Stmt let(VarId var, ExprId value);
Stmt accumulator(VarId var, ReduceOp op);
Stmt accumulate(VarId var, ReduceOp op, ExprId value);
Stmt if_(ExprId cond, std::vector<Stmt> body, std::vector<Stmt> else_body = {});
}  // namespace stmt

// ---- building ----

// Appends to a kernel: expressions (with constant folding of index arithmetic, so index
// expressions stay readable) and variables. Statements are plain structs the caller assembles.
class Builder {
 public:
  explicit Builder(Kernel& k) : k_(&k) {}
  Kernel& kernel() const { return *k_; }

  BufferId buffer(std::string name, DType dtype, bool output, int64_t extent);
  VarId var(std::string name, DType dtype);
  VarId size(std::string name);  // a size parameter (Note [Size parameters])

  ExprId constant(double v, DType dtype);  // converted to dtype as static_cast would
  ExprId iconstant(int64_t v, DType dtype = kInt64);
  ExprId var_ref(VarId v);
  ExprId load(BufferId b, ExprId index);
  ExprId unary(UnaryOp op, ExprId a);
  ExprId binary(BinaryOp op, ExprId a, ExprId b);
  ExprId select(ExprId c, ExprId a, ExprId b);
  ExprId cast(ExprId a, DType dtype);  // no node when a already has dtype
  // `e` appended as given: checked like every expression, but neither folded nor reordered
  // (for the text parser, which must build what the text says).
  ExprId raw(const Expr& e) { return add(e); }

  const Expr& expr(ExprId e) const { return k_->exprs.at(static_cast<size_t>(e)); }
  DType dtype(ExprId e) const { return expr(e).dtype; }

 private:
  ExprId add(Expr e);
  Kernel* k_;
};

// ---- the value type that instantiates the pointwise math templates ----

// Val is an expression of the kernel being built. The templates of base/pointwise_math.h
// spell constants as `V(0.5)`; those become constants of the compute dtype set by the innermost
// MathScope on this thread, the dtype the eager kernel computes the same template in.
class Val {
 public:
  Val(ExprId id);  // NOLINT: an expression is a value
  Val(double c);   // NOLINT: a constant of the scope's compute dtype
  Val(float c);    // NOLINT
  Val(int c);      // NOLINT
  Val(int64_t c);  // NOLINT
  Val(bool c);     // NOLINT: a Bool constant (the templates' B(false))
  ExprId id() const { return id_; }
  DType dtype() const;

 private:
  ExprId id_;
};

class MathScope {
 public:
  MathScope(Builder& b, DType compute);
  ~MathScope();
  MathScope(const MathScope&) = delete;
  MathScope& operator=(const MathScope&) = delete;
  static Builder& builder();  // throws kiln::Error outside a scope
  static DType compute();

 private:
  Builder* prev_builder_;
  DType prev_compute_;
};

// The dtype eager kernels compute a dtype's values in (dtype.h's compute_t): Float32 for the
// 16-bit floats, Int32 for the small integers, the dtype itself otherwise.
DType compute_dtype(DType t);

Val operator+(Val a, Val b);
Val operator-(Val a, Val b);
Val operator*(Val a, Val b);
Val operator/(Val a, Val b);
Val operator-(Val a);
Val operator!(Val a);  // logical not of a Bool
Val operator==(Val a, Val b);
Val operator!=(Val a, Val b);
Val operator<(Val a, Val b);
Val operator<=(Val a, Val b);
Val operator>(Val a, Val b);
Val operator>=(Val a, Val b);
// The primitives the math templates call unqualified (found by argument-dependent lookup).
Val select(Val c, Val a, Val b);
Val abs(Val x);
Val exp(Val x);
Val log(Val x);
Val log1p(Val x);
Val expm1(Val x);
Val sqrt(Val x);
Val sin(Val x);
Val cos(Val x);
Val tanh(Val x);
Val erf(Val x);
Val exp2(Val x);
Val gelu_exact(Val x);
Val pow(Val a, Val b);
Val cast(Val x, DType dtype);
// x converted as the eager pointwise kernels convert an operand: to the op's result dtype
// (cast_inputs), then to that dtype's compute dtype.
Val to_compute(Val x, DType result);

}  // namespace kiln::kir
