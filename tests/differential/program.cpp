#include "differential/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace kiln_test::differential {
namespace {

using kiln::Shape;
using kiln::Tensor;
using Rng = std::mt19937_64;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool chance(Rng& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

Shape random_shape(Rng& rng) {
  // Sizes 1 and 0 often, since broadcasting and empty tensors are where kernels go wrong.
  static const int64_t kSizes[] = {1, 1, 2, 3, 4, 5, 0};
  Shape s(static_cast<size_t>(pick(rng, 0, 3)));
  for (int64_t& d : s)
    d = kSizes[pick(rng, 0, chance(rng, 0.1) ? 6 : 5)];
  return s;
}

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

// Whether `from` broadcasts to exactly `to` (an in-place operand).
bool broadcasts_to(const Shape& from, const Shape& to) {
  return from.size() <= to.size() && broadcastable(from, to) &&
         kiln::broadcast_shapes("fuzz", from, to) == to;
}

Tensor unary(int variant, const Tensor& x) {
  switch (variant) {
    case 0:
      return x.tanh();
    case 1:
      return x.sigmoid();
    case 2:
      return (x.tanh() * 3.0).sin();  // sin of a large float32 value is noise, so bound it
    case 3:
      return x.neg();
    case 4:
      return x.relu();
    case 5:
      return x.tanh().exp();
    case 6:
      return (x * x + 1.0).sqrt();
    case 7:
      return (x * x + 1.0).log();
    case 8:
      return x.gelu();
    case 9:
      return x.silu();
    case 10:
      return x.erf();
    case 11:
      return x.pow(2);
    default:
      return x.clamp(-0.5, 0.75);
  }
}
constexpr int kUnaryVariants = 13;

Tensor binary(int variant, const Tensor& a, const Tensor& b) {
  switch (variant) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return a / (b * b + 1.0);
    case 4:
      return kiln::maximum(a, b);
    default:
      return kiln::minimum(a, b);
  }
}
constexpr int kBinaryVariants = 6;

Tensor apply_step(const Step& s, std::vector<Tensor>& pool) {
  const Tensor& a = pool.at(static_cast<size_t>(s.a));
  switch (s.kind) {
    case StepKind::Unary:
      return unary(s.variant, a);
    case StepKind::Binary:
      return binary(s.variant, a, pool.at(static_cast<size_t>(s.b)));
    case StepKind::Scalar:
      switch (s.variant) {
        case 0:
          return a + s.constant;
        case 1:
          return a * s.constant;
        case 2:
          return a.neg() + s.constant;
        default:
          return a / s.constant;
      }
    case StepKind::Reduce:
      switch (s.variant) {
        case 0:
          return a.sum({s.dim}, s.keepdim);
        case 1:
          return a.mean({s.dim}, s.keepdim);
        case 2:
          return a.amax({s.dim}, s.keepdim);
        default:
          return a.logsumexp({s.dim}, s.keepdim);
      }
    case StepKind::Softmax:
      return s.variant == 0 ? a.softmax(s.dim) : a.log_softmax(s.dim);
    case StepKind::View:
      switch (s.variant) {
        case 0:
          return a.transpose(s.dim, s.start);
        case 1:
          return a.slice(s.dim, s.start, s.end, s.keepdim ? 2 : 1);
        case 2:
          return a.unsqueeze(s.dim);
        case 3:
          return a.select(s.dim, s.start);
        case 4:
          return a.expand(s.shape);
        default:
          return a.reshape(s.shape);
      }
    case StepKind::InPlace: {
      if (s.variant == 3) {  // straight into the value itself (an input without grad)
        pool.at(static_cast<size_t>(s.a)).mul_(s.constant).add_(0.25);
        return pool.at(static_cast<size_t>(s.a));
      }
      Tensor c = a * 1.0;  // a fresh value: writing it leaves `a` and saved tensors alone
      if (s.variant == 0) {
        c.mul_(s.constant);
      } else if (s.variant == 1) {
        c.add_(pool.at(static_cast<size_t>(s.b)));
      } else {
        c.select(s.dim, s.start).mul_(s.constant);  // through a view of c
      }
      return c;
    }
    case StepKind::Matmul: {
      // Through tanh, so that chained products stay within k (at most 5) of 1 in size.
      Tensor t = a.tanh();
      return t.dim() == 1 ? t.matmul(t) : t.matmul(t.transpose(-1, -2));
    }
    case StepKind::Cat:
      return kiln::cat({a, pool.at(static_cast<size_t>(s.b))}, s.dim);
  }
  return a;
}

// A random valid step on the values in `pool` (shapes known), or false when none was found.
bool random_step(Rng& rng, const std::vector<Tensor>& pool, const Program& p, Step* out) {
  Step s;
  s.a = static_cast<int>(pick(rng, 0, static_cast<int64_t>(pool.size()) - 1));
  const Tensor& a = pool[static_cast<size_t>(s.a)];
  auto nd = static_cast<int64_t>(a.dim());
  auto partner = [&](auto&& fits) {
    std::vector<int> ok;
    for (size_t i = 0; i < pool.size(); ++i)
      if (fits(pool[i].sizes())) ok.push_back(static_cast<int>(i));
    return ok.empty() ? -1
                      : ok[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(ok.size()) - 1))];
  };
  switch (pick(rng, 0, 10)) {
    case 0:
    case 1:
      s.kind = StepKind::Unary;
      s.variant = static_cast<int>(pick(rng, 0, kUnaryVariants - 1));
      break;
    case 2:
    case 3:
      s.kind = StepKind::Binary;
      s.variant = static_cast<int>(pick(rng, 0, kBinaryVariants - 1));
      s.b = partner([&](const Shape& b) { return broadcastable(a.sizes(), b); });
      break;
    case 4:
      s.kind = StepKind::Scalar;
      s.variant = static_cast<int>(pick(rng, 0, 3));
      s.constant = (chance(rng, 0.5) ? 1 : -1) * (0.5 + static_cast<double>(pick(rng, 0, 6)) / 4);
      break;
    case 5:
      if (nd == 0) return false;
      s.kind = StepKind::Reduce;
      s.variant = static_cast<int>(pick(rng, 0, 3));
      s.dim = pick(rng, -nd, nd - 1);
      s.keepdim = chance(rng, 0.5);
      break;
    case 6:
      if (nd == 0) return false;
      s.kind = StepKind::Softmax;
      s.variant = static_cast<int>(pick(rng, 0, 1));
      s.dim = pick(rng, -nd, nd - 1);
      break;
    case 7: {
      s.kind = StepKind::View;
      s.variant = static_cast<int>(pick(rng, 0, 5));
      if (s.variant == 0) {
        if (nd < 2) return false;
        s.dim = pick(rng, 0, nd - 1);
        s.start = pick(rng, 0, nd - 1);
      } else if (s.variant == 1) {
        if (nd == 0) return false;
        s.dim = pick(rng, 0, nd - 1);
        int64_t size = a.size(s.dim);
        s.start = pick(rng, -size - 1, size);
        s.end = pick(rng, -size, size + 1);
        s.keepdim = chance(rng, 0.3);  // step 2
      } else if (s.variant == 2) {
        s.dim = pick(rng, -nd - 1, nd);
      } else if (s.variant == 3) {
        if (nd == 0) return false;
        s.dim = pick(rng, 0, nd - 1);
        if (a.size(s.dim) == 0) return false;
        s.start = pick(rng, -a.size(s.dim), a.size(s.dim) - 1);
      } else if (s.variant == 4) {
        s.shape = a.sizes();
        for (int64_t& d : s.shape)
          if (d == 1 && chance(rng, 0.7)) d = pick(rng, 2, 3);
        if (chance(rng, 0.5) || s.shape == a.sizes()) s.shape.insert(s.shape.begin(), 2);
      } else {
        s.shape = {a.numel()};
        if (a.numel() > 0 && a.numel() % 2 == 0 && chance(rng, 0.5)) s.shape = {2, a.numel() / 2};
      }
      break;
    }
    case 8: {
      s.kind = StepKind::InPlace;
      s.variant = static_cast<int>(pick(rng, 0, 2));
      s.constant = chance(rng, 0.5) ? 2.0 : -0.5;
      if (s.variant == 1) {
        s.b = partner([&](const Shape& b) { return broadcasts_to(b, a.sizes()); });
        if (s.b < 0) s.variant = 0;
      }
      if (s.variant == 2) {
        if (nd == 0 || a.size(0) == 0) return false;
        s.dim = 0;
        s.start = pick(rng, 0, a.size(0) - 1);
      }
      // Writing into an input itself, where inputs take no gradient (Note [Aliased inputs]).
      if (!p.inputs_require_grad && s.a < static_cast<int>(p.input_shapes.size()) &&
          chance(rng, 0.5))
        s.variant = 3;
      break;
    }
    case 9:
      if (nd == 0 || nd > 3) return false;
      s.kind = StepKind::Matmul;
      break;
    default: {
      if (nd == 0) return false;
      s.kind = StepKind::Cat;
      s.dim = pick(rng, 0, nd - 1);
      s.b = partner([&](const Shape& b) {
        if (b.size() != a.sizes().size()) return false;
        for (size_t i = 0; i < b.size(); ++i)
          if (static_cast<int64_t>(i) != s.dim && b[i] != a.size(static_cast<int64_t>(i)))
            return false;
        return true;
      });
      break;
    }
  }
  if ((s.kind == StepKind::Binary || s.kind == StepKind::Cat) && s.b < 0) s.b = s.a;
  *out = s;
  return true;
}

std::string step_str(const Step& s) {
  static const char* kKinds[] = {"unary", "binary",  "scalar", "reduce", "softmax",
                                 "view",  "inplace", "matmul", "cat"};
  return fmt::format("{}#{} a=v{} b=v{} dim={} start={} end={} keepdim={} c={} shape={}",
                     kKinds[static_cast<int>(s.kind)], s.variant, s.a, s.b, s.dim, s.start, s.end,
                     s.keepdim, s.constant, kiln::shape_str(s.shape));
}

}  // namespace

std::string Program::str() const {
  std::string out = fmt::format("program {} ({} steps, inputs require grad: {})\n", seed,
                                steps.size(), inputs_require_grad);
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    out += fmt::format("  v{} = input {}", i, kiln::shape_str(input_shapes[i]));
    if (alias_of[i] >= 0) out += fmt::format(" (the same tensor as v{})", alias_of[i]);
    out += "\n";
  }
  for (size_t i = 0; i < steps.size(); ++i)
    out += fmt::format("  v{} = {}\n", input_shapes.size() + i, step_str(steps[i]));
  out += "  outputs:";
  for (int o : outputs)
    out += fmt::format(" v{}", o);
  return out + "\n";
}

std::vector<Tensor> make_inputs(const Program& p, kiln::DType dtype) {
  Rng rng(p.seed * 7919 + 17);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<Tensor> in;
  for (size_t i = 0; i < p.input_shapes.size(); ++i) {
    if (p.alias_of[i] >= 0) {
      in.push_back(in[static_cast<size_t>(p.alias_of[i])]);
      continue;
    }
    std::vector<float> v(static_cast<size_t>(kiln::shape_numel(p.input_shapes[i])));
    for (float& x : v)
      x = static_cast<float>(dist(rng));  // float32 values, so both dtypes start equal
    Tensor t = kiln::from_vector(v, p.input_shapes[i]).to(dtype);
    if (p.inputs_require_grad) t.requires_grad_();
    in.push_back(t);
  }
  return in;
}

std::vector<Tensor> run(const Program& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> pool(inputs.begin(), inputs.end());
  for (const Step& s : p.steps)
    pool.push_back(apply_step(s, pool));
  std::vector<Tensor> out;
  for (int o : p.outputs)
    out.push_back(pool.at(static_cast<size_t>(o)));
  return out;
}

Program generate(uint64_t seed) {
  Rng rng(seed);
  Program p;
  p.seed = seed;
  p.inputs_require_grad = !chance(rng, 0.25);
  int64_t inputs = pick(rng, 1, 3);
  for (int64_t i = 0; i < inputs; ++i) {
    int alias = -1;
    if (i > 0 && chance(rng, 0.2)) alias = static_cast<int>(pick(rng, 0, i - 1));
    p.alias_of.push_back(alias);
    p.input_shapes.push_back(alias >= 0 ? p.input_shapes[static_cast<size_t>(alias)]
                                        : random_shape(rng));
  }
  // Steps are chosen against the float64 values, so every kept step is valid there.
  std::vector<Tensor> pool = make_inputs(p, kiln::kFloat64);
  int64_t want = pick(rng, 5, 40);
  for (int tries = 0; static_cast<int64_t>(p.steps.size()) < want && tries < 400; ++tries) {
    Step s;
    if (!random_step(rng, pool, p, &s)) continue;
    try {
      kiln::NoGradGuard no_grad;  // only shapes matter here; in-place writes on leaves are fine
      std::vector<Tensor> trial = pool;
      if (s.kind == StepKind::InPlace && s.variant == 3)
        trial[static_cast<size_t>(s.a)] = trial[static_cast<size_t>(s.a)].clone();
      Tensor v = apply_step(s, trial);
      if (v.numel() > 4096) continue;  // keep programs small
      // Keep values within 1e3: past that, float32's rounding of a difference of two large
      // values is bigger than the tolerance, a flaw of the program, not of Kiln.
      if (v.numel() > 0 && v.abs().amax().item<double>() > 1e3) continue;
      pool.push_back(v);
      p.steps.push_back(s);
    } catch (const kiln::Error&) {
      // An invalid combination (a slice past the end, a cat of unequal shapes): another step.
    }
  }
  auto last = static_cast<int>(pool.size()) - 1;
  p.outputs.push_back(last);
  for (int extra = static_cast<int>(pick(rng, 0, 2)); extra > 0; --extra) {
    int o = static_cast<int>(pick(rng, 0, last));
    if (std::find(p.outputs.begin(), p.outputs.end(), o) == p.outputs.end()) p.outputs.push_back(o);
  }
  return p;
}

}  // namespace kiln_test::differential

namespace kiln_test::differential {
namespace {

// One run's results: outputs, the inputs' values afterwards (in-place writes), and gradients.
struct Result {
  bool threw = false;
  std::string error;
  std::vector<Tensor> outputs, inputs_after, grads;
};

// The tensors that take gradients: each distinct input once.
std::vector<Tensor> leaves(const Program& p, const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  if (!p.inputs_require_grad) return out;
  for (size_t i = 0; i < in.size(); ++i)
    if (p.alias_of[i] < 0) out.push_back(in[i]);
  return out;
}

// The weights of each output in the loss whose gradient is compared: fixed by the seed.
std::vector<Tensor> output_weights(const Program& p, const std::vector<Tensor>& outputs,
                                   kiln::DType dtype) {
  Rng rng(p.seed * 104729 + 3);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<Tensor> w;
  for (const Tensor& o : outputs) {
    std::vector<float> v(static_cast<size_t>(o.numel()));
    for (float& x : v)
      x = static_cast<float>(dist(rng));
    w.push_back(kiln::from_vector(v, o.sizes()).to(dtype));
  }
  return w;
}

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

Result run_variant(const Program& p, kiln::DType dtype, const Fn& fn) {
  Result r;
  std::vector<Tensor> in = make_inputs(p, dtype);
  try {
    r.outputs = fn(in);
    std::vector<Tensor> wrt = leaves(p, in), diff, weights;
    std::vector<Tensor> w = output_weights(p, r.outputs, dtype);
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      if (!r.outputs[i].requires_grad()) continue;
      diff.push_back(r.outputs[i]);
      weights.push_back(w[i]);
    }
    if (!diff.empty() && !wrt.empty()) {
      r.grads = kiln::autograd::grad(diff, wrt, weights, /*retain_graph=*/false,
                                     /*create_graph=*/false, /*allow_unused=*/true);
    }
    for (Tensor& o : r.outputs)
      o = o.detach();
    for (const Tensor& t : in)
      r.inputs_after.push_back(t.detach().clone());
  } catch (const kiln::Error& e) {
    r.threw = true;
    r.error = e.what();
  }
  return r;
}

// |got - want| <= tol (1 + |want|) elementwise, NaN equal to NaN, infinities equal when the
// same. An undefined tensor stands for zeros (an unused input's gradient).
std::string compare(const Tensor& got, const Tensor& want, double tol) {
  if (!got.defined() && !want.defined()) return "";
  const Tensor& shape_of = got.defined() ? got : want;
  Tensor g = got.defined() ? got : kiln::zeros(shape_of.sizes(), kiln::kFloat64);
  Tensor w = want.defined() ? want : kiln::zeros(shape_of.sizes(), kiln::kFloat64);
  if (g.sizes() != w.sizes())
    return fmt::format("shape {} against {}", kiln::shape_str(g.sizes()),
                       kiln::shape_str(w.sizes()));
  std::vector<double> x = g.to(kiln::kFloat64).contiguous().to_vector<double>();
  std::vector<double> y = w.to(kiln::kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::isinf(y[i]) && x[i] == y[i]) continue;
    if (!(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i]))))
      return fmt::format("element {}: {} against {}", i, x[i], y[i]);
  }
  return "";
}

std::string compare_all(const char* what, const std::vector<Tensor>& got,
                        const std::vector<Tensor>& want, double tol) {
  if (got.size() != want.size())
    return fmt::format("{}: {} values against {}", what, got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::string d = compare(got[i], want[i], tol); !d.empty())
      return fmt::format("{} {}: {}", what, i, d);
  return "";
}

}  // namespace

Verdict check(const Program& p) {
  Fn eager = [&p](const std::vector<Tensor>& in) { return run(p, in); };
  Result ref = run_variant(p, kiln::kFloat64, eager);
  // Each op adds a rounding of float32 (6e-8 relative) and can amplify what came before by a
  // small factor; gradients go through the program twice.
  double tol = 2e-5 * (1.0 + static_cast<double>(p.steps.size()));
  struct Variant {
    std::string name;
    Fn fn;
  };
  std::vector<Variant> variants{{"eager float32", eager}};
  for (kiln::Backend b : {kiln::Backend::Interpreter, kiln::Backend::LLVM}) {
    kiln::CompileOptions o;
    o.backend = b;
    o.name = fmt::format("fuzz_{}", p.seed);
    kiln::CompiledFunction cf = kiln::compile(eager, o);
    std::string name = fmt::format("compiled ({})", kiln::backend_name(b));
    // Two calls: the capture's, and one that reuses the plan.
    variants.push_back({name + " call 1", [cf](const std::vector<Tensor>& in) { return cf(in); }});
    variants.push_back({name + " call 2", [cf](const std::vector<Tensor>& in) { return cf(in); }});
  }
  for (const Variant& v : variants) {
    Result r = run_variant(p, kiln::kFloat32, v.fn);
    if (r.threw != ref.threw) {
      return {false, fmt::format("{}: {} where float64 eager {}", v.name,
                                 r.threw ? "threw (" + r.error + ")" : "ran",
                                 ref.threw ? "threw (" + ref.error + ")" : "ran")};
    }
    if (r.threw) continue;
    struct Part {
      const char* what;
      const std::vector<Tensor>& got;
      const std::vector<Tensor>& want;
    };
    const Part parts[] = {{"output", r.outputs, ref.outputs},
                          {"input after the call", r.inputs_after, ref.inputs_after},
                          {"gradient of input", r.grads, ref.grads}};
    for (const Part& part : parts) {
      if (std::string d = compare_all(part.what, part.got, part.want, tol); !d.empty())
        return {false, v.name + ": " + d};
    }
  }
  return {};
}

}  // namespace kiln_test::differential
