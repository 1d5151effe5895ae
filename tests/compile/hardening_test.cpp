// compile() uses that probing found wrong or hanging (issue 34): gradients of cat with more
// than 64 inputs, aliased inputs written in place, Meta inputs, stats() and recursion inside
// the compiled function, and a compiled function called inside another. Eager is the reference.
#include <gtest/gtest.h>

#include <string>

#include "compile/compare.h"
#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::CompiledFunction;
using kiln::Tensor;
namespace ag = kiln::autograd;
using Fn = CompiledFunction::Fn;

std::vector<kiln::Backend> cpu_backends() {
  return {kiln::Backend::Interpreter, kiln::Backend::LLVM};
}

kiln::CompileOptions with_backend(kiln::Backend b) {
  kiln::CompileOptions o;
  o.backend = b;
  return o;
}

// Runs fn eagerly and compiled on fresh leaves with the same values, then backward through the
// first output's sum; compares outputs and the leaves' gradients.
void expect_same_as_eager(const Fn& fn, const std::vector<Tensor>& values, kiln::Backend b,
                          double tol) {
  auto leaves = [&] {
    std::vector<Tensor> out;
    for (const Tensor& v : values)
      out.push_back(v.detach().clone().requires_grad_());
    return out;
  };
  std::vector<Tensor> eager_in = leaves(), compiled_in = leaves();
  std::vector<Tensor> want = fn(eager_in);
  want[0].sum().backward();
  CompiledFunction cf = kiln::compile(fn, with_backend(b));
  for (int call = 0; call < 2; ++call) {
    for (Tensor& t : compiled_in)
      t.mutable_grad() = Tensor();
    std::vector<Tensor> got = cf(compiled_in);
    expect_all_close(got, want, tol, "output");
    got[0].sum().backward();
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_TRUE(close(compiled_in[i].grad(), eager_in[i].grad(), tol))
          << "gradient of input " << i << ", call " << call;
  }
}

// The compiled backward's gradients become the leaves' .grad without a copy: the plan keeps no
// handle to its outputs, so AccumulateGrad finds the engine's buffer the only holder.
TEST(CompileHardening, GradientsOfACompiledBackwardBecomeDotGradWithoutACopy) {
  Tensor w = kiln::randn({256, 64}, kiln::requires_grad());
  Tensor b = kiln::randn({64}, kiln::requires_grad());
  std::vector<const float*> arrived(2);
  w.register_hook([&](const Tensor& g) {
    arrived[0] = g.data_ptr<float>();
    return g;
  });
  b.register_hook([&](const Tensor& g) {
    arrived[1] = g.data_ptr<float>();
    return g;
  });
  CompiledFunction f = kiln::compile([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{kiln::mean(kiln::tanh(kiln::matmul(in[0], w) + b))};
  });
  for (int step = 0; step < 2; ++step) {
    w.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
    f({kiln::randn({32, 256})})[0].backward();
    EXPECT_EQ(w.grad().data_ptr<float>(), arrived[0]) << "step " << step;
    EXPECT_EQ(b.grad().data_ptr<float>(), arrived[1]) << "step " << step;
  }
}

TEST(CompileHardening, CatOfOneHundredInputsHasEveryGradient) {
  kiln::manual_seed(340);
  Fn fn = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> parts;
    for (int i = 0; i < 100; ++i)
      parts.push_back(in[0] * static_cast<double>(i + 1));
    for (int i = 0; i < 70; ++i)
      parts.push_back(in[1].slice(0, i, i + 1));
    return std::vector<Tensor>{kiln::cat(parts).pow(2)};
  };
  for (kiln::Backend b : cpu_backends())
    expect_same_as_eager(fn, {kiln::randn({2}), kiln::randn({70})}, b, kPointwiseTol);
}

Fn doubles_first_then_adds() {
  return [](const std::vector<Tensor>& in) {
    in[0].mul_(2);
    return std::vector<Tensor>{in[0] + in[1]};
  };
}

TEST(CompileHardening, AliasedInputsWrittenInPlaceMatchEager) {
  for (kiln::Backend b : cpu_backends()) {
    CompiledFunction cf = kiln::compile(doubles_first_then_adds(), with_backend(b));
    // Distinct inputs first: this signature compiles.
    Tensor x = kiln::ones({3}), y = kiln::ones({3});
    EXPECT_EQ(cf({x, y})[0].to_vector<float>(), (std::vector<float>{3, 3, 3}));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 2, 2}));
    // The same tensor twice: eager gives 4 (the write is seen through the alias).
    Tensor a = kiln::ones({3});
    EXPECT_EQ(cf({a, a})[0].to_vector<float>(), (std::vector<float>{4, 4, 4}));
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 2, 2}));
    // Overlapping slices of one tensor.
    Tensor base = kiln::arange(4, kiln::kFloat32), ref = base.clone();
    Tensor got = cf({base.slice(0, 0, 3), base.slice(0, 1, 4)})[0];
    Tensor want = doubles_first_then_adds()({ref.slice(0, 0, 3), ref.slice(0, 1, 4)})[0];
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    EXPECT_EQ(base.to_vector<float>(), ref.to_vector<float>());
    // Distinct inputs again still use the compiled plan.
    Tensor p = kiln::ones({3}), q = kiln::ones({3});
    EXPECT_EQ(cf({p, q})[0].to_vector<float>(), (std::vector<float>{3, 3, 3}));
  }
}

TEST(CompileHardening, AliasedInputsWithoutWritesStillCompile) {
  CompiledFunction cf = kiln::compile(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1] + 1.0}; });
  Tensor a = kiln::arange(3, kiln::kFloat32);
  EXPECT_EQ(cf({a, a})[0].to_vector<float>(), (std::vector<float>{1, 2, 5}));
  EXPECT_EQ(cf.stats().eager_calls, 0);
}

TEST(CompileHardening, MetaInputsGiveMetaOutputsOfTheRightShape) {
  for (kiln::Backend b : {kiln::Backend::Auto, kiln::Backend::Interpreter, kiln::Backend::LLVM}) {
    CompiledFunction cf = kiln::compile(
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{(in[0] * 2.0 + 1.0).sum({1}), kiln::matmul(in[0], in[1])};
        },
        with_backend(b));
    std::vector<Tensor> out =
        cf({kiln::ones({4, 3}, kiln::kMeta), kiln::ones({3, 5}, kiln::kMeta)});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].device().is_meta());
    EXPECT_EQ(out[0].sizes(), (kiln::Shape{4}));
    EXPECT_EQ(out[1].sizes(), (kiln::Shape{4, 5}));
  }
}

TEST(CompileHardening, StatsInsideTheCompiledFunctionDoesNotDeadlock) {
  CompiledFunction* self = nullptr;
  int64_t seen_compiles = -1;
  CompiledFunction cf = kiln::compile([&](const std::vector<Tensor>& in) {
    seen_compiles = self->stats().compiles;
    (void)self->dump();
    return std::vector<Tensor>{in[0] + 1.0};
  });
  self = &cf;
  EXPECT_EQ(cf({kiln::ones({2})})[0].to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(seen_compiles, 0);  // stats() during the first capture
  EXPECT_EQ(cf.stats().compiles, 1);
}

TEST(CompileHardening, AFunctionThatCallsItselfThrowsNamingTheRecursion) {
  CompiledFunction* self = nullptr;
  kiln::CompileOptions o;
  o.name = "recursive_fn";
  CompiledFunction cf =
      kiln::compile([&](const std::vector<Tensor>& in) { return (*self)({in[0] * 2.0}); }, o);
  self = &cf;
  try {
    cf({kiln::ones({2})});
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("recursion"), std::string::npos) << m;
    EXPECT_NE(m.find("recursive_fn"), std::string::npos) << m;
  }
  // The function is still usable after the error (no lock left held).
  EXPECT_EQ(cf.stats().compiles, 0);
}

TEST(CompileHardening, CompiledFunctionInsideAnotherIsTracedThrough) {
  kiln::manual_seed(341);
  CompiledFunction inner = kiln::compile(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{kiln::tanh(in[0]) * in[1]}; });
  Fn outer_fn = [inner](const std::vector<Tensor>& in) {
    Tensor h = inner({in[0], in[1]})[0];
    return std::vector<Tensor>{(h * h).sum({1})};
  };
  Fn eager_fn = [](const std::vector<Tensor>& in) {
    Tensor h = kiln::tanh(in[0]) * in[1];
    return std::vector<Tensor>{(h * h).sum({1})};
  };
  std::vector<Tensor> values{kiln::randn({3, 4}), kiln::randn({3, 4})};
  for (kiln::Backend b : cpu_backends()) {
    std::vector<Tensor> eager_in, compiled_in;
    for (const Tensor& v : values) {
      eager_in.push_back(v.clone().requires_grad_());
      compiled_in.push_back(v.clone().requires_grad_());
    }
    eager_fn(eager_in)[0].sum().backward();
    CompiledFunction outer = kiln::compile(outer_fn, with_backend(b));
    for (int call = 0; call < 2; ++call) {
      for (Tensor& t : compiled_in)
        t.mutable_grad() = Tensor();
      outer(compiled_in)[0].sum().backward();
      for (size_t i = 0; i < values.size(); ++i)
        EXPECT_TRUE(close(compiled_in[i].grad(), eager_in[i].grad(), kPointwiseTol))
            << "input " << i << ", call " << call;
    }
  }
}

// Note [Lifted tensors]: a tensor read from outside the arguments is read anew on every call.
TEST(CompileHardening, CapturedBuffersAreReadOnEveryCall) {
  for (kiln::Backend b : cpu_backends()) {
    Tensor mask = kiln::ones({3});
    Tensor lr = kiln::full({}, 0.5);
    CompiledFunction cf = kiln::compile(
        [mask, lr](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{in[0] * mask * lr};
        },
        with_backend(b));
    Tensor x = kiln::arange(3, kiln::kFloat32);
    EXPECT_EQ(cf({x})[0].to_vector<float>(), (std::vector<float>{0, 0.5, 1}));
    mask.fill_(2);
    lr.fill_(3);
    EXPECT_EQ(cf({x})[0].to_vector<float>(), (std::vector<float>{0, 6, 12}));
    EXPECT_EQ(cf.stats().compiles, 1);
  }
}

// A running statistic updated in place by the function, as batch norm's running mean is.
Fn running_mean_update(Tensor running) {
  return [running](const std::vector<Tensor>& in) {
    running.mul_(0.9).add_(in[0].mean({0}) * 0.1);
    return std::vector<Tensor>{in[0] - running};
  };
}

TEST(CompileHardening, InPlaceWritesToCapturedBuffersReachThem) {
  kiln::manual_seed(342);
  for (kiln::Backend b : cpu_backends()) {
    Tensor eager_running = kiln::zeros({4}), compiled_running = kiln::zeros({4});
    Fn eager = running_mean_update(eager_running);
    CompiledFunction cf = kiln::compile(running_mean_update(compiled_running), with_backend(b));
    for (int call = 0; call < 3; ++call) {
      Tensor x = kiln::randn({5, 4});
      Tensor want = eager({x})[0];
      Tensor got = cf({x})[0];
      EXPECT_TRUE(close(got, want, kPointwiseTol)) << "call " << call;
      EXPECT_TRUE(close(compiled_running, eager_running, kPointwiseTol)) << "call " << call;
    }
    EXPECT_EQ(cf.stats().compiles, 1);
    EXPECT_EQ(cf.stats().eager_calls, 0);
  }
}

TEST(CompileHardening, CapturedParameterUpdatesAreSeenByLaterCalls) {
  kiln::manual_seed(343);
  Tensor w = param({3, 2});
  Tensor w_eager = w.detach().clone().requires_grad_();
  Fn step_of = [](Tensor weight) {
    return Fn([weight](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{kiln::matmul(in[0], weight).pow(2).sum()};
    });
  }(w);
  CompiledFunction cf = kiln::compile(step_of);
  for (int call = 0; call < 3; ++call) {
    Tensor x = kiln::randn({4, 3});
    Tensor loss = cf({x})[0];
    loss.backward();
    Tensor loss_eager = kiln::matmul(x, w_eager).pow(2).sum();
    loss_eager.backward();
    EXPECT_TRUE(close(loss, loss_eager, kReductionTol)) << "call " << call;
    kiln::NoGradGuard no_grad;  // an SGD step outside the compiled function
    w.sub_(w.grad() * 0.01);
    w_eager.sub_(w_eager.grad() * 0.01);
    w.mutable_grad() = Tensor();
    w_eager.mutable_grad() = Tensor();
  }
}

TEST(CompileHardening, TensorsBuiltInsideTheFunctionStayConstants) {
  CompiledFunction cf = kiln::compile([](const std::vector<Tensor>& in) {
    Tensor table = kiln::from_vector(std::vector<float>{1, 2, 3}, {3});
    return std::vector<Tensor>{in[0] * table};
  });
  Tensor x = kiln::ones({3});
  EXPECT_EQ(cf({x})[0].to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(cf({x * 2.0})[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(cf.dump("traced").find("p0"), std::string::npos) << cf.dump("traced");
}

// A traceable custom Function whose backward reads a tensor from outside, which the forward
// never read: it is first met after the tangents, so it stays a constant (lifting it there
// broke every call of the plan).
struct ScaledBackward : ag::Function<ScaledBackward> {
  static constexpr bool is_traceable = true;
  static inline Tensor scale;
  static Tensor forward(ag::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static ag::variable_list backward(ag::AutogradContext*, ag::variable_list grads) {
    return {grads[0] * scale};
  }
};

TEST(CompileHardening, ATensorFirstReadByTheBackwardWorks) {
  ScaledBackward::scale = kiln::full({3}, 5.0);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ScaledBackward::apply(in[0]).sum()};
  };
  for (kiln::Backend b : cpu_backends())
    expect_same_as_eager(fn, {kiln::randn({3})}, b, kPointwiseTol);
  ScaledBackward::scale = Tensor();
}

// Note [Lifted tensors] and [Aliased inputs] together: an argument that is also a tensor the
// function writes from outside its arguments, and two outside views of one buffer.
TEST(CompileHardening, ArgumentsAndCapturedTensorsThatShareMemoryMatchEager) {
  auto writes_captured = [](Tensor buf) {
    return Fn([buf](const std::vector<Tensor>& in) {
      buf.add_(1.0);
      return std::vector<Tensor>{in[0] * 2.0 + buf};
    });
  };
  for (kiln::Backend b : cpu_backends()) {
    Tensor buf = kiln::zeros({3}), ref = kiln::zeros({3});
    CompiledFunction cf = kiln::compile(writes_captured(buf), with_backend(b));
    Fn eager = writes_captured(ref);
    EXPECT_EQ(cf({kiln::ones({3})})[0].to_vector<float>(),
              eager({kiln::ones({3})})[0].to_vector<float>());
    // The buffer itself as the argument: the write must be seen through it.
    EXPECT_EQ(cf({buf})[0].to_vector<float>(), eager({ref})[0].to_vector<float>());
    EXPECT_EQ(buf.to_vector<float>(), ref.to_vector<float>());
  }
  auto writes_base_reads_view = [](Tensor base, Tensor view) {
    return Fn([base, view](const std::vector<Tensor>& in) {
      Tensor v = view + 0.0;  // lifted before the write
      base.mul_(2.0);
      return std::vector<Tensor>{in[0] + v + view};
    });
  };
  for (kiln::Backend b : cpu_backends()) {
    Tensor base = kiln::arange(4, kiln::kFloat32), ref = base.clone();
    CompiledFunction cf =
        kiln::compile(writes_base_reads_view(base, base.slice(0, 1, 4)), with_backend(b));
    Fn eager = writes_base_reads_view(ref, ref.slice(0, 1, 4));
    for (int call = 0; call < 2; ++call) {
      EXPECT_EQ(cf({kiln::ones({3})})[0].to_vector<float>(),
                eager({kiln::ones({3})})[0].to_vector<float>())
          << "call " << call;
      EXPECT_EQ(base.to_vector<float>(), ref.to_vector<float>()) << "call " << call;
    }
  }
}

}  // namespace
}  // namespace kiln_test
