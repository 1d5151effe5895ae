// OpInfo entries of the factories (empty, full, arange, rand, randn and the *_like forms) and
// of dropout. The random references follow Note [Random streams] from Philox4x32::block,
// starting from a manual_seed done inside each sample's call.
#include <fmt/format.h>

#include <cmath>

#include "kiln/base/philox.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

RefTensor constant(const Shape& sizes, double value, DType dtype) {
  return RefTensor{
      sizes, std::vector<double>(static_cast<size_t>(ref_numel(sizes)), round_to(value, dtype)),
      dtype};
}

// ---- the Philox element formulas, restated from Note [Random streams] ----
uint32_t philox_word(uint64_t seed, uint64_t block, size_t word) {
  return kiln::Philox4x32::block(seed, block, 0)[word];
}
int mantissa_digits(DType t) {
  return t == kiln::kFloat16 ? 11 : t == kiln::kBFloat16 ? 8 : 24;
}
double ref_uniform(uint64_t seed, int64_t i, DType t) {
  auto u = static_cast<uint64_t>(i);
  if (t == kiln::kFloat64) {
    uint64_t hi = philox_word(seed, u / 2, 2 * (u % 2)),
             lo = philox_word(seed, u / 2, 2 * (u % 2) + 1);
    uint64_t bits = ((hi << 21) ^ (lo >> 11)) & ((uint64_t{1} << 53) - 1);
    return std::ldexp(static_cast<double>(bits), -53);
  }
  int digits = mantissa_digits(t);
  return std::ldexp(static_cast<double>(philox_word(seed, u / 4, u % 4) >> (32 - digits)), -digits);
}
double ref_normal(uint64_t seed, int64_t i) {
  auto u = static_cast<uint64_t>(i);
  double a = philox_word(seed, u / 2, 2 * (u % 2)), b = philox_word(seed, u / 2, 2 * (u % 2) + 1);
  double u1 = (a + 1.0) / 4294967296.0, u2 = b / 4294967296.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
}
RefTensor ref_random(const Shape& sizes, DType t, uint64_t seed, bool normal) {
  RefTensor out{sizes, {}, t};
  for (int64_t i = 0; i < ref_numel(sizes); ++i)
    out.data.push_back(round_to(normal ? ref_normal(seed, i) : ref_uniform(seed, i, t), t));
  return out;
}

const std::vector<Shape> kFactoryShapes = {{2, 3}, {7}, {}, {0, 4}, {3, 1, 5}};

KILN_REGISTER_OPINFO(empty_info, [] {
  OpInfo info{"empty", {"empty"}};
  info.samples = [] {
    std::vector<Sample> out;
    for (const Shape& shape : kFactoryShapes) {
      for (DType dt : {kiln::kFloat32, kiln::kInt64, kiln::kBool, kiln::kFloat16}) {
        Sample s;
        s.name = fmt::format("{}_[{}]", kiln::dtype_name(dt), shape_name(shape));
        s.call = [shape, dt](const std::vector<Tensor>&) {
          return std::vector{kiln::empty(shape, dt)};
        };
        s.check = [shape, dt](const std::vector<Tensor>&, const std::vector<Tensor>& outs) {
          ASSERT_EQ(outs.size(), 1u);
          EXPECT_EQ(outs[0].sizes(), shape);
          EXPECT_EQ(outs[0].dtype(), dt);
          EXPECT_TRUE(outs[0].is_contiguous());
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(full_info, [] {
  OpInfo info{"full", {"full"}};
  info.samples = [] {
    std::vector<Sample> out;
    for (const Shape& shape : kFactoryShapes) {
      for (DType dt :
           {kiln::kFloat32, kiln::kFloat64, kiln::kInt32, kiln::kBool, kiln::kBFloat16}) {
        for (double value : {2.5, -7.0}) {
          out.push_back(make_sample(
              fmt::format("{}_[{}]_{}", kiln::dtype_name(dt), shape_name(shape), value), {},
              [=](const std::vector<Tensor>&) { return std::vector{kiln::full(shape, value, dt)}; },
              [=](const std::vector<RefTensor>&) {
                return std::vector{constant(shape, value, dt)};
              }));
        }
      }
    }
    // zeros / ones and the default dtype.
    out.push_back(make_sample(
        "zeros_default", {},
        [](const std::vector<Tensor>&) {
          return std::vector{kiln::zeros({2, 3})};
        },
        [](const std::vector<RefTensor>&) {
          return std::vector{constant({2, 3}, 0, kiln::kFloat32)};
        }));
    out.push_back(make_sample(
        "ones_int64", {},
        [](const std::vector<Tensor>&) { return std::vector{kiln::ones({4}, kiln::kInt64)}; },
        [](const std::vector<RefTensor>&) { return std::vector{constant({4}, 1, kiln::kInt64)}; }));
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(arange_info, [] {
  OpInfo info{"arange", {"arange"}};
  info.samples = [] {
    struct C {
      double start, end, step;
      bool ints;  // pass the bounds as integers
      std::optional<DType> dtype;
      DType expected;
    };
    const std::vector<C> cases = {
        {0, 5, 1, true, std::nullopt, kiln::kInt64},
        {1, 10, 3, true, std::nullopt, kiln::kInt64},
        {10, 0, -3, true, std::nullopt, kiln::kInt64},
        {3, 3, 1, true, std::nullopt, kiln::kInt64},  // empty
        {0.5, 3, 0.5, false, std::nullopt, kiln::kFloat32},
        {0, 1, 0.1, false, kiln::kFloat64, kiln::kFloat64},
        {-2, 2, 1, true, kiln::kFloat32, kiln::kFloat32},
        {0, 7, 2, true, kiln::kInt32, kiln::kInt32},
        {-1, -2.5, -0.25, false, std::nullopt, kiln::kFloat32},
    };
    std::vector<Sample> out;
    for (const C& c : cases) {
      out.push_back(make_sample(
          fmt::format("{}_{}_{}_{}", c.start, c.end, c.step, kiln::dtype_name(c.expected)), {},
          [c](const std::vector<Tensor>&) {
            kiln::TensorOptions o;
            if (c.dtype) o = o.dtype(*c.dtype);
            if (c.ints) {
              auto s = static_cast<int64_t>(c.start), e = static_cast<int64_t>(c.end),
                   st = static_cast<int64_t>(c.step);
              if (s == 0 && st == 1) return std::vector{kiln::arange(e, o)};
              return std::vector{kiln::arange(s, e, st, o)};
            }
            return std::vector{kiln::arange(c.start, c.end, c.step, o)};
          },
          [c](const std::vector<RefTensor>&) {
            auto n = static_cast<int64_t>(std::ceil((c.end - c.start) / c.step));
            RefTensor r{{n}, {}, c.expected};
            for (int64_t i = 0; i < n; ++i)
              r.data.push_back(round_to(c.start + static_cast<double>(i) * c.step, c.expected));
            return std::vector{r};
          }));
    }
    return out;
  };
  return info;
}());

OpInfo random_info(const char* name, bool normal) {
  OpInfo info{name, {name}};
  info.samples = [name, normal] {
    std::vector<Sample> out;
    uint64_t seed = 42;
    for (const Shape& shape : {Shape{3, 5}, Shape{9}, Shape{}, Shape{0, 3}, Shape{2, 3, 7}}) {
      for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
        ++seed;
        out.push_back(make_sample(
            fmt::format("{}_{}_[{}]", name, kiln::dtype_name(dt), shape_name(shape)), {},
            [=](const std::vector<Tensor>&) {
              kiln::manual_seed(seed);
              return std::vector{normal ? kiln::randn(shape, dt) : kiln::rand(shape, dt)};
            },
            [=](const std::vector<RefTensor>&) {
              return std::vector{ref_random(shape, dt, seed, normal)};
            }));
        if (normal) out.back().atol = 1e-5;  // libm log/cos in float64, then rounded
      }
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(rand_info, random_info("rand", false));
KILN_REGISTER_OPINFO(randn_info, random_info("randn", true));

// ---- dropout ----
RefTensor ref_dropout(const RefTensor& x, double p, uint64_t seed) {
  RefTensor out{x.sizes, {}, x.dtype};
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool keep = ref_uniform(seed, i, kiln::kFloat32) >= p;
    out.data.push_back(keep ? round_to(x.data[static_cast<size_t>(i)] / (1 - p), x.dtype) : 0.0);
  }
  return out;
}

KILN_REGISTER_OPINFO(dropout_info, [] {
  OpInfo info{"dropout", {"dropout", "full"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 4000;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (double p : {0.0, 0.2, 0.5, 0.9, 1.0}) {
          for (bool train : {true, false}) {
            uint64_t gen_seed = seed;
            out.push_back(make_sample(
                fmt::format("{}_{}_p{}_{}", kiln::dtype_name(dt), layout_name(layout), p,
                            train ? "train" : "eval"),
                {make_input({6, 7}, dt, layout, -3, 3, seed++)},
                [=](const std::vector<Tensor>& in) {
                  kiln::manual_seed(gen_seed);
                  return std::vector{kiln::dropout(in[0], p, train)};
                },
                [=](const std::vector<RefTensor>& in) {
                  if (!train) return std::vector{in[0]};
                  return std::vector{ref_dropout(in[0], p, gen_seed)};
                }));
          }
        }
      }
    }
    // Size 0 and 0-dim inputs.
    for (const Shape& shape : {Shape{0, 3}, Shape{}}) {
      out.push_back(make_sample(
          fmt::format("train_[{}]", shape_name(shape)),
          {make_input(shape, kiln::kFloat32, Layout::Contiguous, -3, 3, seed++)},
          [](const std::vector<Tensor>& in) {
            kiln::manual_seed(7);
            return std::vector{kiln::dropout(in[0], 0.3, true)};
          },
          [](const std::vector<RefTensor>& in) {
            return std::vector{ref_dropout(in[0], 0.3, 7)};
          }));
    }
    return out;
  };
  return info;
}());

// ---- *_like ----
using LikeFn = std::function<Tensor(const Tensor&)>;

OpInfo like_info(const char* name, std::vector<std::string> covers, LikeFn fn,
                 std::function<double(const RefTensor&, int64_t)> value,
                 std::optional<DType> override_dtype) {
  OpInfo info{name, std::move(covers)};
  info.samples = [=] {
    std::vector<Sample> out;
    uint32_t seed = 4100;
    for (DType dt : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16}) {
      for (const Shape& shape : kFactoryShapes) {
        out.push_back(make_sample(
            fmt::format("{}_[{}]", kiln::dtype_name(dt), shape_name(shape)),
            {make_input(shape, dt, shape.size() >= 2 ? Layout::Transposed : Layout::Contiguous, -3,
                        3, seed++)},
            [fn](const std::vector<Tensor>& in) { return std::vector{fn(in[0])}; },
            [value, override_dtype](const std::vector<RefTensor>& in) {
              DType t = override_dtype.value_or(in[0].dtype);
              RefTensor r{in[0].sizes, {}, t};
              for (int64_t i = 0; i < in[0].numel(); ++i)
                r.data.push_back(round_to(value(in[0], i), t));
              return std::vector{r};
            }));
      }
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(zeros_like_info,
                     like_info(
                         "zeros_like", {"full"},
                         [](const Tensor& x) { return kiln::zeros_like(x); },
                         [](const RefTensor&, int64_t) { return 0.0; }, std::nullopt));
KILN_REGISTER_OPINFO(ones_like_info,
                     like_info(
                         "ones_like", {"full"}, [](const Tensor& x) { return kiln::ones_like(x); },
                         [](const RefTensor&, int64_t) { return 1.0; }, std::nullopt));
KILN_REGISTER_OPINFO(full_like_info,
                     like_info(
                         "full_like", {"full"},
                         [](const Tensor& x) { return kiln::full_like(x, -2.25); },
                         [](const RefTensor&, int64_t) { return -2.25; }, std::nullopt));
// The TensorOptions override: an int32 result from a floating input.
KILN_REGISTER_OPINFO(full_like_dtype_info,
                     like_info(
                         "full_like_dtype", {"full"},
                         [](const Tensor& x) { return kiln::full_like(x, 3.75, kiln::kInt32); },
                         [](const RefTensor&, int64_t) { return 3.75; }, kiln::kInt32));
KILN_REGISTER_OPINFO(rand_like_info,
                     like_info(
                         "rand_like", {"rand"},
                         [](const Tensor& x) {
                           kiln::manual_seed(99);
                           return kiln::rand_like(x);
                         },
                         [](const RefTensor& x, int64_t i) { return ref_uniform(99, i, x.dtype); },
                         std::nullopt));
KILN_REGISTER_OPINFO(randn_like_info,
                     like_info(
                         "randn_like", {"randn"},
                         [](const Tensor& x) {
                           kiln::manual_seed(98);
                           return kiln::randn_like(x, kiln::kFloat64);
                         },
                         [](const RefTensor&, int64_t i) { return ref_normal(98, i); },
                         kiln::kFloat64));

KILN_REGISTER_OPINFO(empty_like_info, [] {
  OpInfo info{"empty_like", {"empty"}};
  info.samples = [] {
    std::vector<Sample> out;
    for (DType dt : {kiln::kFloat32, kiln::kInt64}) {
      for (const Shape& shape : kFactoryShapes) {
        Sample s;
        s.name = fmt::format("{}_[{}]", kiln::dtype_name(dt), shape_name(shape));
        s.inputs = {make_input(shape, dt, Layout::Contiguous, -3, 3, 5)};
        s.call = [](const std::vector<Tensor>& in) { return std::vector{kiln::empty_like(in[0])}; };
        s.check = [](const std::vector<Tensor>& in, const std::vector<Tensor>& outs) {
          ASSERT_EQ(outs.size(), 1u);
          EXPECT_EQ(outs[0].sizes(), in[0].sizes());
          EXPECT_EQ(outs[0].dtype(), in[0].dtype());
          EXPECT_EQ(outs[0].device(), in[0].device());
        };
        out.push_back(std::move(s));
      }
    }
    return out;
  };
  return info;
}());

}  // namespace
}  // namespace kiln_test
