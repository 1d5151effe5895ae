#include "kiln/codegen/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_math.h"
#include "kiln/codegen/cuda/cuda_scalar.h"
#include "kiln/codegen/cuda/cuda_vector_access.h"
#include "kiln/kernel_ir/kernel_verifier.h"

namespace kiln::codegen::cuda {

using kir::BinaryOp;
using kir::Expr;
using kir::ExprId;
using kir::ExprKind;
using kir::Kernel;
using kir::LoopKind;
using kir::ReduceOp;
using kir::Stmt;
using kir::StmtKind;
using kir::UnaryOp;
using kir::VarId;

namespace {

// Note [CUDA kernel mapping]
// The kernel IR's loops say what may run in parallel (parallel, vector) but not how to spread it
// over a GPU. Each top-level loop becomes one __global__ entry, launched in order (so a later
// loop sees everything an earlier one stored); a kernel with top-level statements other than
// loops (a full reduction's accumulator, say) is one entry over its whole body. Within an entry,
// the "row nest" is the chain of loops that each hold exactly one non-vector loop, and its body
// decides the mapping:
// - no accumulators and no further loops but at most one innermost vector loop: Elementwise,
//   every loop flattened into one index that a grid-stride loop walks (adjacent threads touch
//   adjacent elements of contiguous buffers);
// - vector loops, with accumulators reduced only across vector iterations: BlockPerRow. The
//   vector loops are split over the block's threads; an accumulator declared outside a vector
//   loop and combined inside it is reduced over the block (warp shuffles, then shared memory)
//   right after the statement of its own block that holds those combines, so every thread reads
//   the full value afterwards. Stores outside vector loops are made by thread 0, and a
//   __syncthreads follows each statement that stores or holds a vector loop, so a later walk
//   over the row sees them (Note [Row cache] reads back what an earlier walk stored).
//   Refused (ThreadPerRow instead) when an accumulator is also combined outside the vector
//   loops, or read inside the statement that combines it across threads: a thread would see a
//   partial value;
// - otherwise (loops without vector loops, a column sum): ThreadPerRow, each iteration of the
//   nest on its own thread, serially.
// A body with no loop nest above it gets BlockPerRow over a single row, or SingleThread.
//
// Note [CUDA kernel ABI]
// Every entry takes the kernel's buffers in order as typed pointers to their first element
// (bool as unsigned char, the 16-bit floats as their bits in unsigned short), inputs const.
// Values of 16-bit float dtypes are floats already rounded to the dtype, as in the interpreter.
// Integer arithmetic on data wraps (it is done unsigned); index arithmetic, which the verifier
// bounds, is plain signed. A zero integer divisor divides by 1: unlike the CPU backends, the
// kernel does not report it.

std::string ident(std::string_view name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

// ---- analysis of statement trees ----

using StmtFn = std::function<void(const Stmt&, int)>;

// Calls f on s and every statement inside it, with the number of vector loops around each
// (counted from s's level).
void walk_stmt(const Stmt& s, const StmtFn& f, int vector_depth = 0);

void walk(const std::vector<Stmt>& body, const StmtFn& f, int vector_depth = 0) {
  for (const Stmt& s : body)
    walk_stmt(s, f, vector_depth);
}

void walk_stmt(const Stmt& s, const StmtFn& f, int vector_depth) {
  f(s, vector_depth);
  int inner = vector_depth + (s.kind == StmtKind::Loop && s.loop_kind == LoopKind::Vector);
  walk(s.body, f, inner);
  walk(s.else_body, f, inner);
}

bool any_stmt(const std::vector<Stmt>& body, const std::function<bool(const Stmt&)>& pred) {
  bool found = false;
  walk(body, [&](const Stmt& s, int) { found = found || pred(s); });
  return found;
}

bool stmt_has(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  bool found = false;
  walk_stmt(s, [&](const Stmt& t, int) { found = found || pred(t); });
  return found;
}

struct RowNest {
  std::vector<const Stmt*> loops;           // outermost first
  const std::vector<Stmt>* body = nullptr;  // the innermost loop's body
};

RowNest row_nest(const Stmt& top) {
  RowNest n;
  const Stmt* s = &top;
  while (true) {
    n.loops.push_back(s);
    if (s->body.size() == 1 && s->body[0].kind == StmtKind::Loop &&
        s->body[0].loop_kind != LoopKind::Vector) {
      s = &s->body[0];
      continue;
    }
    break;
  }
  n.body = &n.loops.back()->body;
  return n;
}

class Emitter {
 public:
  explicit Emitter(const Kernel& k) : k_(k) {
    reads_acc_.resize(k.exprs.size(), false);
    has_load_.resize(k.exprs.size(), false);
    walk(k.body, [&](const Stmt& s, int) {
      if (s.kind == StmtKind::Accumulator) acc_vars_.insert(s.var);
    });
    for (size_t i = 0; i < k.exprs.size(); ++i) {
      const Expr& e = k.exprs[i];
      bool acc = e.kind == ExprKind::Var && acc_vars_.count(e.var);
      bool load = e.kind == ExprKind::Load;
      for (ExprId a : e.args) {
        if (a == kir::kNoExpr) continue;
        acc = acc || reads_acc_[static_cast<size_t>(a)];
        load = load || has_load_[static_cast<size_t>(a)];
      }
      reads_acc_[i] = acc;
      has_load_[i] = load;
    }
  }

  // `body` as lines at `indent` with the Elementwise mapping's plain statements, for a caller
  // that writes the function around them (emit_cuda_statements).
  std::string statements(const std::vector<Stmt>& body, int indent) {
    mapping_ = Mapping::Elementwise;
    out_.clear();
    memo_.assign(1, {});
    counter_ = 0;
    indent_ = indent;
    stmts(body, /*vector_level=*/false);
    return out_;
  }

  CudaSource run() {
    CudaSource src;
    src.name = k_.name;
    src.num_sizes = static_cast<int>(k_.sizes().size());
    bool all_loops = std::all_of(k_.body.begin(), k_.body.end(),
                                 [](const Stmt& s) { return s.kind == StmtKind::Loop; });
    if (all_loops && !k_.body.empty()) {
      for (size_t i = 0; i < k_.body.size(); ++i)
        entry_for_loop(src, k_.body[i], static_cast<int>(i));
    } else {
      entry_for_body(src, k_.body, 0);
    }
    return src;
  }

 private:
  // ---- entries ----

  std::string symbol(int index) const { return fmt::format("kiln_{}_{}", ident(k_.name), index); }

  std::string signature(const std::string& sym, int block) const {
    std::string params;
    for (const kir::Buffer& b : k_.buffers) {
      if (!params.empty()) params += ", ";
      params += fmt::format("{}{}* __restrict__ {}", b.output ? "" : "const ",
                            storage_type(b.dtype), buffer_name(b));
    }
    // Note [Size parameters]: after the buffers, in order.
    for (VarId v : k_.sizes())
      params += fmt::format("{}const long long {}", params.empty() ? "" : ", ", var_name(v));
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({})", block, sym,
                       params);
  }

  static std::string buffer_name(const kir::Buffer& b) { return cuda_buffer_name(b); }
  std::string var_name(VarId v) const { return cuda_var_name(k_.vars[static_cast<size_t>(v)]); }

  // A loop's bound in a `long long` comparison.
  std::string extent_limit(const Stmt& l) const {
    return l.extent_size >= 0 ? var_name(l.extent_size) : fmt::format("{}ll", l.extent);
  }

  // The number of iterations of `loops` as C, and whether it is known here (`work`) or depends
  // on size parameters (`code`, evaluated in the kernel; the launcher computes it as well).
  struct Work {
    int64_t work = 1;
    std::string code;
    std::vector<int> sizes;  // positions in the kernel's size parameters
    bool runtime() const { return !code.empty(); }
  };
  Work work_of(const std::vector<const Stmt*>& loops) const {
    Work w;
    std::string code;
    std::vector<VarId> params = k_.sizes();
    for (const Stmt* l : loops) {
      if (l->extent_size >= 0) {
        code += fmt::format("{}(unsigned long long){}", code.empty() ? "" : " * ",
                            var_name(l->extent_size));
        auto at = std::find(params.begin(), params.end(), l->extent_size);
        w.sizes.push_back(static_cast<int>(at - params.begin()));
      } else {
        w.work *= l->extent;
      }
    }
    if (!code.empty())
      w.code = fmt::format("{}{}", code, w.work == 1 ? "" : fmt::format(" * {}ull", w.work));
    return w;
  }

  void entry_for_loop(CudaSource& src, const Stmt& top, int index) {
    RowNest nest = row_nest(top);
    std::vector<const Stmt*> flat = nest.loops;
    const std::vector<Stmt>* body = nest.body;
    bool elementwise = false;
    if (top.loop_kind == LoopKind::Vector) {
      elementwise = !has_loops_or_accs(*body);
    } else if (body->size() == 1 && (*body)[0].kind == StmtKind::Loop &&
               (*body)[0].loop_kind == LoopKind::Vector && !has_loops_or_accs((*body)[0].body)) {
      flat.push_back(&(*body)[0]);
      body = &(*body)[0].body;
      elementwise = true;
    } else {
      elementwise = !has_loops_or_accs(*body);
    }
    Work work = work_of(flat);
    if (elementwise) {
      // Vector accesses need the innermost extent at emission (Note [CUDA vector accesses]).
      VectorPlan plan = plan_vector_access(k_, flat, *body);
      emit_flat(src, index, flat, *body, Mapping::Elementwise, work, 256, &plan);
      return;
    }
    Work rows = work_of(nest.loops);
    if (block_per_row_ok(*nest.body)) {
      emit_flat(src, index, nest.loops, *nest.body, Mapping::BlockPerRow, rows,
                row_block(*nest.body));
    } else {
      emit_flat(src, index, nest.loops, *nest.body, Mapping::ThreadPerRow, rows, 128);
    }
  }

  void entry_for_body(CudaSource& src, const std::vector<Stmt>& body, int index) {
    if (block_per_row_ok(body))
      emit_flat(src, index, {}, body, Mapping::BlockPerRow, Work{}, row_block(body));
    else
      emit_flat(src, index, {}, body, Mapping::SingleThread, Work{}, 1);
  }

  static bool has_loops_or_accs(const std::vector<Stmt>& body) {
    return any_stmt(body, [](const Stmt& s) {
      return s.kind == StmtKind::Loop || s.kind == StmtKind::Accumulator ||
             s.kind == StmtKind::Accumulate;
    });
  }

  // Threads per block for a row body: about four elements of its longest vector loop per
  // thread, 32 to 512 threads; 256 when a vector loop's extent is a size parameter.
  static int row_block(const std::vector<Stmt>& body) {
    int64_t longest = 1;
    walk(body, [&](const Stmt& s, int) {
      if (s.kind == StmtKind::Loop && s.loop_kind == LoopKind::Vector)
        longest = std::max(longest, s.extent_size >= 0 ? int64_t{1024} : s.extent);
    });
    int block = 32;
    while (block < 512 && block * 4 < longest)
      block *= 2;
    return block;
  }

  // Note [CUDA kernel mapping]'s conditions for BlockPerRow.
  bool block_per_row_ok(const std::vector<Stmt>& body) const {
    if (!any_stmt(body, [](const Stmt& s) {
          return s.kind == StmtKind::Loop && s.loop_kind == LoopKind::Vector;
        }))
      return false;
    std::set<VarId> strided, plain;
    walk(body, [&](const Stmt& s, int depth) {
      if (s.kind == StmtKind::Accumulate) (depth > 0 ? strided : plain).insert(s.var);
    });
    // Accumulators declared inside a vector loop are per element: they do not count.
    std::set<VarId> declared_in_vector;
    walk(body, [&](const Stmt& s, int depth) {
      if (s.kind == StmtKind::Accumulator && depth > 0) declared_in_vector.insert(s.var);
    });
    for (VarId v : strided)
      if (!declared_in_vector.count(v) && plain.count(v)) return false;
    return reads_ok(body, declared_in_vector);
  }

  // No statement of a block-level list reads an accumulator that it also combines inside a
  // vector loop (checked in every list outside vector loops).
  bool reads_ok(const std::vector<Stmt>& list, const std::set<VarId>& per_element) const {
    for (const Stmt& s : list) {
      for (VarId v : strided_accs_in(s))
        if (!per_element.count(v) && stmt_reads_var(s, v)) return false;
      if (s.kind == StmtKind::Loop && s.loop_kind == LoopKind::Vector) continue;
      if (!reads_ok(s.body, per_element) || !reads_ok(s.else_body, per_element)) return false;
    }
    return true;
  }

  // The accumulators s combines inside a vector loop (s itself one, or one inside s).
  static std::set<VarId> strided_accs_in(const Stmt& s) {
    std::set<VarId> out;
    walk_stmt(s, [&](const Stmt& t, int depth) {
      if (t.kind == StmtKind::Accumulate && depth > 0) out.insert(t.var);
    });
    return out;
  }

  // Which expressions read variable v, directly or through operands: one pass over the arena,
  // whose operands come before their users (a walk of the expression DAG could revisit shared
  // operands exponentially often).
  std::vector<bool> readers_of(VarId v) const {
    std::vector<bool> reads(k_.exprs.size(), false);
    for (size_t i = 0; i < k_.exprs.size(); ++i) {
      const Expr& x = k_.exprs[i];
      bool r = x.kind == ExprKind::Var && x.var == v;
      for (ExprId a : x.args)
        r = r || (a != kir::kNoExpr && reads[static_cast<size_t>(a)]);
      reads[i] = r;
    }
    return reads;
  }

  bool stmt_reads_var(const Stmt& s, VarId v) const {
    std::vector<bool> reads = readers_of(v);
    bool found = false;
    walk_stmt(s, [&](const Stmt& t, int) {
      for (ExprId e : {t.index, t.value, t.cond})
        found = found || (e != kir::kNoExpr && reads[static_cast<size_t>(e)]);
    });
    return found;
  }

  // One __global__ function: the loops in `flat` walked as one index space by the mapping,
  // then `body` for each point of it.
  void emit_flat(CudaSource& src, int index, const std::vector<const Stmt*>& flat,
                 const std::vector<Stmt>& body, Mapping mapping, const Work& size, int block,
                 const VectorPlan* plan = nullptr) {
    int64_t work = size.work;
    mapping_ = mapping;
    out_.clear();
    memo_.assign(1, {});
    counter_ = 0;
    std::string sym = symbol(index);
    CudaEntry entry{sym, mapping, size.runtime() ? 0 : work, block, 1};
    int64_t per_block = mapping == Mapping::BlockPerRow ? 1 : block;
    if (size.runtime()) {
      entry.grid = 0;
      entry.work_factor = work;
      entry.work_sizes = size.sizes;
    } else if (mapping != Mapping::SingleThread)
      entry.grid = (work + per_block - 1) / per_block;
    src.entries.push_back(entry);

    std::string code = signature(sym, block) + " {\n";
    indent_ = 1;
    if (mapping == Mapping::BlockPerRow) {
      std::set<DType> scratch;
      walk(body, [&](const Stmt& s, int depth) {
        if (s.kind == StmtKind::Accumulate && depth > 0)
          scratch.insert(k_.vars[static_cast<size_t>(s.var)].dtype);
      });
      for (DType t : scratch)
        line(fmt::format("__shared__ {} scratch_{}[32];", value_type(t), dtype_suffix(t)));
    }
    // 32-bit index arithmetic when the whole space fits: 64-bit division is slow on GPUs.
    std::string it =
        !size.runtime() && work < (int64_t{1} << 31) ? "unsigned" : "unsigned long long";
    std::string bound = size.runtime() ? fmt::format("({})", size.code) : fmt::format("{}u", work);
    std::string first, step;
    switch (mapping) {
      case Mapping::Elementwise:
      case Mapping::ThreadPerRow:
        first = fmt::format("({})blockIdx.x * blockDim.x + threadIdx.x", it);
        step = fmt::format("({})gridDim.x * blockDim.x", it);
        break;
      case Mapping::BlockPerRow:
        first = "blockIdx.x";
        step = "gridDim.x";
        break;
      case Mapping::SingleThread:
        line("if (blockIdx.x != 0 || threadIdx.x != 0) return;");
        break;
    }
    if (mapping == Mapping::SingleThread || (work == 1 && !size.runtime())) {
      if (mapping != Mapping::SingleThread && mapping != Mapping::BlockPerRow)
        line("if (blockIdx.x != 0 || threadIdx.x != 0) return;");
      if (mapping == Mapping::BlockPerRow) line("if (blockIdx.x != 0) return;");
      for (const Stmt* l : flat)
        line(fmt::format("const long long {} = 0;", var_name(l->var)));
      stmts(body, /*vector_level=*/false);
    } else {
      if (plan != nullptr && plan->width > 1)
        emit_vector_walk(*plan, flat, body, size, it, first, step);
      line(fmt::format("for ({} flat = {}; flat < {}; flat += {}) {{", it, first, bound, step));
      ++indent_;
      memo_.emplace_back();
      if (flat.size() == 1) {
        line(fmt::format("const long long {} = (long long)flat;", var_name(flat[0]->var)));
      } else {
        line(fmt::format("{} rest = flat;", it));
        split_rest(flat, flat.size());
      }
      stmts(body, false);
      // The next row's walks must not overtake this row's last reads of what it stored.
      if (mapping == Mapping::BlockPerRow && !out_.ends_with("__syncthreads();\n"))
        line("__syncthreads();");
      memo_.pop_back();
      --indent_;
      line("}");
    }
    code += out_ + "}\n";
    src.code += code;
  }

  // Note [CUDA vector accesses]: when every vectorized pointer is aligned, the walk over
  // groups of plan.width innermost iterations, which returns; otherwise the scalar walk after it
  // runs.
  void emit_vector_walk(const VectorPlan& plan, const std::vector<const Stmt*>& flat,
                        const std::vector<Stmt>& body, const Work& work, const std::string& it,
                        const std::string& first, const std::string& step) {
    const int w = plan.width;
    std::string misaligned;
    for (kir::BufferId b : plan.buffers) {
      const kir::Buffer& buf = k_.buffers[static_cast<size_t>(b)];
      misaligned += fmt::format("{}((unsigned long long){} & {}u)", misaligned.empty() ? "" : " | ",
                                buffer_name(buf), element_size(buf.dtype) * w - 1);
    }
    // Note [CUDA vector accesses]: sizes the vectorized indices rely on being multiples of w.
    for (VarId v : plan.divisible_sizes)
      misaligned += fmt::format(" | ((unsigned long long){} % {}u)", var_name(v), w);
    line(fmt::format("if (({}) == 0) {{", misaligned));
    ++indent_;
    std::string group_bound = work.runtime() ? fmt::format("({}) / {}u", work.code, w)
                                             : fmt::format("{}u", work.work / w);
    line(fmt::format("for ({} group = {}; group < {}; group += {}) {{", it, first, group_bound,
                     step));
    ++indent_;
    memo_.emplace_back();
    const Stmt* inner = flat.back();
    std::string groups = inner->extent_size >= 0 ? fmt::format("((unsigned long long){} / {}u)",
                                                               var_name(inner->extent_size), w)
                                                 : fmt::format("{}u", inner->extent / w);
    line(fmt::format("{} rest = group;", it));
    line(fmt::format("const long long lane0 = (long long)(rest % {}) * {};", groups, w));
    line(fmt::format("rest /= {};", groups));
    split_rest(flat, flat.size() - 1);
    // The contiguous accesses' indices at lane 0, in a memo level of their own: the lanes
    // must not reuse them (an index bound here is lane 0's).
    memo_.emplace_back();
    line(fmt::format("const long long {} = lane0;", var_name(inner->var)));
    std::vector<std::string> store_lines;
    for (const auto& [b, index] : plan.loads) {
      const kir::Buffer& buf = k_.buffers[static_cast<size_t>(b)];
      std::string arr = fmt::format("vec{}", counter_++);
      std::string vt(vector_word(element_size(buf.dtype) * static_cast<size_t>(w)));
      line(fmt::format("__align__(16) {} {}[{}];", storage_type(buf.dtype), arr, w));
      line(fmt::format("*reinterpret_cast<{}*>({}) = *reinterpret_cast<const {}*>({} + {});", vt,
                       arr, vt, buffer_name(buf), expr(index)));
      lane_loads_[{b, index}] = arr;
    }
    for (const Stmt* st : plan.stores) {
      const kir::Buffer& buf = k_.buffers[static_cast<size_t>(st->buffer)];
      std::string arr = fmt::format("vec{}", counter_++);
      std::string vt(vector_word(element_size(buf.dtype) * static_cast<size_t>(w)));
      line(fmt::format("__align__(16) {} {}[{}];", storage_type(buf.dtype), arr, w));
      store_lines.push_back(
          fmt::format("*reinterpret_cast<{}*>({} + {}) = *reinterpret_cast<const {}*>({});", vt,
                      buffer_name(buf), expr(st->index), vt, arr));
      lane_stores_[st] = arr;
    }
    memo_.pop_back();
    for (int u = 0; u < w; ++u) {
      line("{");
      ++indent_;
      memo_.emplace_back();
      lane_ = u;
      line(fmt::format("const long long {} = lane0 + {};", var_name(inner->var), u));
      stmts(body, false);
      lane_ = -1;
      memo_.pop_back();
      --indent_;
      line("}");
    }
    for (const std::string& l : store_lines)
      line(l);
    lane_loads_.clear();
    lane_stores_.clear();
    memo_.pop_back();
    --indent_;
    line("}");
    line("return;");
    --indent_;
    line("}");
  }

  // Binds the variables of loops[0, count) from `rest`, a flat index over them (innermost
  // last); the outermost takes what is left.
  void split_rest(const std::vector<const Stmt*>& loops, size_t count) {
    for (size_t i = count; i-- > 0;) {
      const Stmt* l = loops[i];
      if (i == 0) {
        line(fmt::format("const long long {} = (long long)rest;", var_name(l->var)));
      } else {
        std::string e = l->extent_size >= 0
                            ? fmt::format("(unsigned long long){}", var_name(l->extent_size))
                            : fmt::format("{}u", l->extent);
        line(fmt::format("const long long {} = (long long)(rest % {});", var_name(l->var), e));
        line(fmt::format("rest /= {};", e));
      }
    }
  }

  // The integer type of a `bytes`-byte vector access.
  static std::string_view vector_word(size_t bytes) {
    switch (bytes) {
      case 16:
        return "uint4";
      case 8:
        return "uint2";
      case 4:
        return "unsigned int";
      default:
        return "unsigned short";
    }
  }

  // ---- statements ----

  void line(const std::string& s) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  // `vector_level`: inside a vector loop (in BlockPerRow, one thread's share of it).
  void stmts(const std::vector<Stmt>& list, bool vector_level) {
    const std::vector<Stmt>* outer_list = current_list_;
    current_list_ = &list;
    for (const Stmt& s : list) {
      stmt(s, vector_level);
      if (mapping_ != Mapping::BlockPerRow || vector_level) continue;
      // Reduce what this statement combined across the block's threads (Note [CUDA kernel
      // mapping]); only accumulators of this list or outer ones reach here.
      bool reduced = false;  // kiln_block_reduce ends with a __syncthreads
      for (VarId v : strided_accs_in(s)) {
        if (!declared_.count(v) || declared_[v] != &list) continue;
        reduced = true;
        const kir::Var& var = k_.vars[static_cast<size_t>(v)];
        ReduceOp op = reduce_of_.at(v);
        line(fmt::format("{} = kiln_block_reduce({}, {}, {}, scratch_{});", var_name(v),
                         var_name(v), combine_functor(op, var.dtype),
                         identity_literal(op, var.dtype), dtype_suffix(var.dtype)));
      }
      bool syncs = stmt_has(s, [](const Stmt& t) {
        return t.kind == StmtKind::Store ||
               (t.kind == StmtKind::Loop && t.loop_kind == LoopKind::Vector);
      });
      if (syncs && !reduced) line("__syncthreads();");
    }
    current_list_ = outer_list;
  }

  void block(const std::vector<Stmt>& list, bool vector_level) {
    memo_.emplace_back();
    ++indent_;
    stmts(list, vector_level);
    --indent_;
    memo_.pop_back();
  }

  void stmt(const Stmt& s, bool vector_level) {
    switch (s.kind) {
      case StmtKind::Loop: {
        std::string v = var_name(s.var);
        bool strided =
            mapping_ == Mapping::BlockPerRow && s.loop_kind == LoopKind::Vector && !vector_level;
        if (strided) {
          line(fmt::format("for (long long {} = threadIdx.x; {} < {}; {} += blockDim.x) {{", v, v,
                           extent_limit(s), v));
        } else {
          line(fmt::format("for (long long {} = 0; {} < {}; ++{}) {{", v, v, extent_limit(s), v));
        }
        block(s.body, vector_level || s.loop_kind == LoopKind::Vector);
        line("}");
        return;
      }
      case StmtKind::Store: {
        const kir::Buffer& b = k_.buffers[static_cast<size_t>(s.buffer)];
        if (lane_ >= 0 && lane_stores_.count(&s)) {
          std::string value = to_storage(convert(expr(s.value), dtype(s.value), b.dtype), b.dtype);
          line(fmt::format("{}[{}] = {};", lane_stores_.at(&s), lane_, value));
          return;
        }
        std::string idx = expr(s.index);
        std::string value = to_storage(convert(expr(s.value), dtype(s.value), b.dtype), b.dtype);
        std::string store = fmt::format("{}[{}] = {};", buffer_name(b), idx, value);
        if (mapping_ == Mapping::BlockPerRow && !vector_level)
          line("if (threadIdx.x == 0) " + store);
        else
          line(store);
        return;
      }
      case StmtKind::Let: {
        const kir::Var& var = k_.vars[static_cast<size_t>(s.var)];
        line(fmt::format("const {} {} = {};", value_type(var.dtype), var_name(s.var),
                         convert(expr(s.value), dtype(s.value), var.dtype)));
        return;
      }
      case StmtKind::Accumulator: {
        const kir::Var& var = k_.vars[static_cast<size_t>(s.var)];
        line(fmt::format("{} {} = {};", value_type(var.dtype), var_name(s.var),
                         identity_literal(s.reduce, var.dtype)));
        reduce_of_[s.var] = s.reduce;
        declared_[s.var] = current_list_;
        return;
      }
      case StmtKind::Accumulate: {
        const kir::Var& var = k_.vars[static_cast<size_t>(s.var)];
        std::string v = var_name(s.var);
        std::string x = convert(expr(s.value), dtype(s.value), var.dtype);
        line(fmt::format("{} = {};", v, combine_code(s.reduce, var.dtype, v, x)));
        return;
      }
      case StmtKind::If: {
        line(fmt::format("if ({}) {{", expr(s.cond)));
        block(s.body, vector_level);
        if (!s.else_body.empty()) {
          line("} else {");
          block(s.else_body, vector_level);
        }
        line("}");
        return;
      }
    }
  }

  // ---- expressions ----

  DType dtype(ExprId e) const { return k_.exprs[static_cast<size_t>(e)].dtype; }

  // An expression as C: constants and variables inline, everything else bound once per scope
  // to a temporary. An expression that reads an accumulator is bound again at each use, since
  // the accumulator changes between uses.
  std::string expr(ExprId id) {
    const Expr& e = k_.exprs[static_cast<size_t>(id)];
    if (e.kind == ExprKind::Const) {
      return is_floating(e.dtype) ? float_literal(e.value, e.dtype)
                                  : int_literal(e.ivalue, e.dtype);
    }
    if (e.kind == ExprKind::Var) return var_name(e.var);
    bool memoize = !reads_acc_[static_cast<size_t>(id)];
    if (memoize) {
      for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
        auto found = it->find(id);
        if (found != it->end()) return found->second;
      }
    }
    std::string code = compute(e, id);
    std::string name = fmt::format("e{}", counter_++);
    line(fmt::format("const {} {} = {};", value_type(e.dtype), name, code));
    if (memoize) memo_.back().emplace(id, name);
    return name;
  }

  std::string compute(const Expr& e, ExprId id) {
    auto arg = [&](int i) { return expr(e.args[i]); };
    switch (e.kind) {
      case ExprKind::Load: {
        const kir::Buffer& b = k_.buffers[static_cast<size_t>(e.buffer)];
        auto lane_load = lane_ >= 0 ? lane_loads_.find({e.buffer, e.args[0]}) : lane_loads_.end();
        if (lane_load != lane_loads_.end())
          return from_storage(fmt::format("{}[{}]", lane_load->second, lane_), b.dtype);
        return from_storage(fmt::format("{}[{}]", buffer_name(b), arg(0)), b.dtype);
      }
      case ExprKind::Unary:
        return unary_code(k_.name, static_cast<UnaryOp>(e.op), dtype(e.args[0]), arg(0),
                          has_load_[static_cast<size_t>(id)]);
      case ExprKind::Binary: {
        std::string a = arg(0), b = arg(1);
        const Expr& rhs = k_.exprs[static_cast<size_t>(e.args[1])];
        return binary_code(k_.name, static_cast<BinaryOp>(e.op), dtype(e.args[0]), a, b,
                           rhs.kind == ExprKind::Const && rhs.ivalue > 0,
                           has_load_[static_cast<size_t>(id)]);
      }
      case ExprKind::Select: {
        std::string c = arg(0), a = arg(1), b = arg(2);
        return fmt::format("{} ? {} : {}", c, a, b);
      }
      case ExprKind::Cast:
        return convert(arg(0), dtype(e.args[0]), e.dtype);
      default:
        break;
    }
    KILN_ERROR("cuda emitter: kernel {}: unexpected expression kind", k_.name);
  }

  const Kernel& k_;
  Mapping mapping_ = Mapping::Elementwise;
  std::string out_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<std::unordered_map<ExprId, std::string>> memo_;
  std::vector<bool> reads_acc_, has_load_;
  std::set<VarId> acc_vars_;
  std::unordered_map<VarId, ReduceOp> reduce_of_;
  std::unordered_map<VarId, const std::vector<Stmt>*> declared_;
  const std::vector<Stmt>* current_list_ = nullptr;
  // In a vector walk's lane (Note [CUDA vector accesses]): the lane, and the local arrays that
  // hold the group's contiguous loads and stores.
  int lane_ = -1;
  std::map<std::pair<kir::BufferId, ExprId>, std::string> lane_loads_;
  std::unordered_map<const Stmt*, std::string> lane_stores_;
};

}  // namespace

CudaSource emit_cuda(const Kernel& kernel) {
  kir::verify(kernel);
  return Emitter(kernel).run();
}

std::string emit_cuda_statements(const Kernel& kernel, int indent) {
  return Emitter(kernel).statements(kernel.body, indent);
}

std::string cuda_buffer_name(const kir::Buffer& b) {
  return "p_" + ident(b.name);
}

std::string cuda_var_name(const kir::Var& v) {
  return "v_" + ident(v.name);
}

}  // namespace kiln::codegen::cuda
