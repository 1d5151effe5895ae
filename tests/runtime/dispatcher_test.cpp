// The op table and the dispatcher: every op is complete, Meta tensors run only the shape and
// dtype rules, wrapper keys run in the order Tracer > Autograd > backend and redispatch by
// excluding themselves, and calls made inside a backend kernel bypass the wrapper keys.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "kiln/kiln.h"
#include "kiln/runtime/dispatch_key.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/op_table.h"
#include "test_util.h"

namespace {

using kiln::DispatchKey;
using kiln::DispatchKeySet;
using kiln::OpDef;
using kiln::OpTable;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::BoxedKernelSlot;
using kiln_test::throws_error_containing;

constexpr int kCpu = static_cast<int>(DispatchKey::CPU);

// ---- the op table ----

TEST(OpTable, EveryOpHasRulesAndACpuKernel) {
  const auto& ops = OpTable::instance().ops();
  ASSERT_FALSE(ops.empty());
  std::set<std::string> names;
  for (const OpDef* op : ops) {
    SCOPED_TRACE(op->name);
    EXPECT_TRUE(names.insert(op->name).second) << "registered twice";
    EXPECT_NE(op->shape, nullptr);
    EXPECT_NE(op->dtype, nullptr);
    EXPECT_NE(op->attrs, nullptr);
    EXPECT_FALSE(op->attrs_type.empty());
    if (!op->has(kiln::kView)) {
      // An op whose output size is counted from its values allocates it in a boxed kernel
      // (Note [Data-dependent output shapes]).
      EXPECT_TRUE(op->compute[kCpu] != nullptr || op->boxed[kCpu] != nullptr);
    }
    if (op->has(kiln::kFactory)) {
      EXPECT_NE(op->attr_device, nullptr);
      EXPECT_TRUE(op->input_names.empty());
    } else {
      EXPECT_FALSE(op->input_names.empty());
    }
    EXPECT_EQ(&OpTable::instance().get(op->name), op);
  }
}

TEST(OpTable, ContainsTheCoreOpsWithTheirFlags) {
  for (const char* name : {"add", "sub", "mul", "div", "add_scalar", "sub_scalar", "mul_scalar",
                           "div_scalar", "neg", "exp", "log", "tanh", "sigmoid", "relu"}) {
    const OpDef* op = OpTable::instance().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->has(kiln::kPointwise)) << name;
  }
  for (const char* name :
       {"view", "expand", "transpose", "permute", "squeeze", "unsqueeze", "slice", "select"}) {
    const OpDef* op = OpTable::instance().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->has(kiln::kView)) << name;
  }
  for (const char* name : {"sum", "mean"})
    EXPECT_TRUE(kiln::get_op(name).has(kiln::kReduction));
  for (const char* name : {"copy_", "fill_"})
    EXPECT_TRUE(kiln::get_op(name).has(kiln::kInPlace));
  for (const char* name : {"rand", "randn"})
    EXPECT_TRUE(kiln::get_op(name).has(kiln::kRandom));
  for (const char* name : {"mm", "bmm", "cat", "clone", "convert", "empty", "full", "arange"}) {
    EXPECT_NE(OpTable::instance().find(name), nullptr) << name;
  }
  EXPECT_TRUE(kiln::get_op("cat").variadic);
  EXPECT_EQ(kiln::get_op("add").input_names, (std::vector<std::string>{"self", "other"}));
}

TEST(OpTable, UnknownOpIsAnError) {
  EXPECT_EQ(OpTable::instance().find("no_such_op"), nullptr);
  EXPECT_TRUE(throws_error_containing([] { kiln::get_op("no_such_op"); }, {"no_such_op"}));
}

TEST(OpTable, AttributesPrintCompareAndHashTheirFields) {
  const OpDef& sum = kiln::get_op("sum");
  EXPECT_EQ(sum.attrs_type, "ReduceAttrs");
  kiln::ReduceAttrs a{{0, -1}, true}, b{{0, -1}, true}, c{{0}, true};
  EXPECT_EQ(sum.attrs_str(&a), "dims=[0, -1], keepdim=true");
  EXPECT_TRUE(sum.attrs->equal(&a, &b));
  EXPECT_FALSE(sum.attrs->equal(&a, &c));
  EXPECT_EQ(sum.attrs->hash(&a), sum.attrs->hash(&b));
  void* copy = sum.attrs->clone(&a);
  EXPECT_TRUE(sum.attrs->equal(copy, &a));
  sum.attrs->destroy(copy);
}

// ---- Meta tensors ----

TEST(Meta, FactoriesMakeShapedTensorsWithoutData) {
  Tensor m = kiln::zeros({2, 3}, kiln::kMeta);
  EXPECT_TRUE(m.device().is_meta());
  EXPECT_EQ(m.sizes(), (Shape{2, 3}));
  EXPECT_EQ(m.strides(), (Shape{3, 1}));
  EXPECT_EQ(m.dtype(), kiln::kFloat32);
  EXPECT_EQ(m.impl()->data(), nullptr);
  EXPECT_TRUE(throws_error_containing([&] { m.raw_data(); }, {"meta"}));
  EXPECT_TRUE(throws_error_containing([&] { m.to_vector<float>(); }, {"meta"}));
  Tensor r = kiln::rand({4}, kiln::TensorOptions().device(kiln::kMeta).dtype(kiln::kFloat64));
  EXPECT_EQ(r.dtype(), kiln::kFloat64);
  EXPECT_TRUE(r.device().is_meta());
}

TEST(Meta, OpsComputeShapesAndDtypes) {
  Tensor a = kiln::zeros({3, 1}, kiln::kMeta), b = kiln::zeros({1, 4}, kiln::kMeta);
  Tensor c = a + b;
  EXPECT_TRUE(c.device().is_meta());
  EXPECT_EQ(c.sizes(), (Shape{3, 4}));
  Tensor i = kiln::zeros({2}, kiln::TensorOptions(kiln::kInt32).device(kiln::kMeta));
  Tensor d = kiln::full({}, 1.0, kiln::TensorOptions(kiln::kFloat64).device(kiln::kMeta));
  EXPECT_EQ((i + d).dtype(), kiln::kFloat64);
  EXPECT_EQ(kiln::exp(i).dtype(), kiln::kFloat32);
  Tensor x = kiln::zeros({2, 3, 4}, kiln::kMeta);
  EXPECT_EQ(x.sum({1}, true).sizes(), (Shape{2, 1, 4}));
  EXPECT_EQ(x.sum({0, 2}).sizes(), (Shape{3}));
  EXPECT_EQ(x.mean().sizes(), (Shape{}));
  EXPECT_EQ(kiln::mm(kiln::zeros({2, 3}, kiln::kMeta), kiln::zeros({3, 5}, kiln::kMeta)).sizes(),
            (Shape{2, 5}));
  EXPECT_EQ(
      kiln::matmul(kiln::zeros({2, 1, 3, 4}, kiln::kMeta), kiln::zeros({5, 4, 2}, kiln::kMeta))
          .sizes(),
      (Shape{2, 5, 3, 2}));
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.sizes(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_EQ(x.slice(2, 1, 4, 2).storage_offset(), 1);
  EXPECT_EQ(t.reshape({-1}).sizes(), (Shape{24}));
  EXPECT_EQ(kiln::cat({x, x}, -1).sizes(), (Shape{2, 3, 8}));
  EXPECT_EQ(x.to(kiln::kFloat16).dtype(), kiln::kFloat16);
}

TEST(Meta, CpuTensorConvertsToMetaKeepingGeometry) {
  Tensor c = kiln::arange(12).view({3, 4}).t();
  Tensor m = c.to(kiln::kMeta);
  EXPECT_TRUE(m.device().is_meta());
  EXPECT_EQ(m.sizes(), (Shape{4, 3}));
  EXPECT_EQ(m.strides(), (Shape{1, 4}));
  EXPECT_EQ(m.dtype(), kiln::kInt64);
}

// The same bad call fails with the same message on Meta and on the CPU.
TEST(Meta, ErrorsMatchTheCpuErrors) {
  auto message_on = [](kiln::Device dev, auto&& fn) {
    return kiln_test::error_message([&] { fn(dev); });
  };
  auto add_mismatch = [](kiln::Device dev) {
    kiln::add(kiln::zeros({2, 3}, dev), kiln::zeros({4}, dev));
  };
  auto mm_mismatch = [](kiln::Device dev) {
    kiln::mm(kiln::zeros({2, 3}, dev), kiln::zeros({4, 5}, dev));
  };
  auto bad_dim = [](kiln::Device dev) { kiln::sum(kiln::zeros({2, 3}, dev), {5}); };
  auto bad_view = [](kiln::Device dev) { kiln::zeros({2, 3}, dev).t().view({6}); };
  auto bool_neg = [](kiln::Device dev) {
    kiln::neg(kiln::zeros({2}, kiln::TensorOptions(kiln::kBool).device(dev)));
  };
  for (auto* fn : {+add_mismatch, +mm_mismatch, +bad_dim, +bad_view, +bool_neg}) {
    std::string cpu = message_on(kiln::kCPU, fn), meta = message_on(kiln::kMeta, fn);
    EXPECT_FALSE(cpu.empty());
    EXPECT_EQ(cpu, meta);
  }
}

TEST(Meta, MixingDevicesThrowsNamingBoth) {
  Tensor c = kiln::zeros({2}), m = kiln::zeros({2}, kiln::kMeta);
  EXPECT_TRUE(throws_error_containing([&] { kiln::add(c, m); }, {"add", "cpu", "meta"}));
  EXPECT_TRUE(throws_error_containing([&] { kiln::mul(m, c); }, {"mul", "meta", "cpu"}));
  EXPECT_TRUE(throws_error_containing(
      [&] {
        kiln::mm(c.view({1, 2}), m.view({2, 1}));
      },
      {"mm", "cpu", "meta"}));
}

// ---- dispatch keys ----

TEST(DispatchKeys, NamesAndSets) {
  EXPECT_EQ(kiln::dispatch_key_name(DispatchKey::CPU), "CPU");
  EXPECT_EQ(kiln::dispatch_key_name(DispatchKey::Meta), "Meta");
  EXPECT_EQ(kiln::dispatch_key_name(DispatchKey::Autograd), "Autograd");
  EXPECT_EQ(kiln::dispatch_key_name(DispatchKey::Tracer), "Tracer");
  EXPECT_EQ(kiln::dispatch_key_name(DispatchKey::CUDA), "CUDA");
  DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Tracer);
  EXPECT_TRUE(s.has(DispatchKey::CPU));
  EXPECT_TRUE(s.has(DispatchKey::Tracer));
  EXPECT_FALSE(s.has(DispatchKey::Autograd));
  EXPECT_FALSE(s.remove(DispatchKeySet(DispatchKey::Tracer)).has(DispatchKey::Tracer));
  EXPECT_TRUE(DispatchKeySet().empty());
  EXPECT_EQ((DispatchKeySet(DispatchKey::Meta) | DispatchKeySet(DispatchKey::CPU)).bits(), 0b101);
}

TEST(DispatchKeys, CallKeySetFollowsDeviceAndRequiresGrad) {
  const OpDef& relu = kiln::get_op("relu");
  Tensor c = kiln::zeros({2});
  std::vector<Tensor> in{c};
  DispatchKeySet keys = kiln::call_key_set(relu, in, nullptr);
  EXPECT_TRUE(keys.has(DispatchKey::CPU));
  EXPECT_FALSE(keys.has(DispatchKey::Autograd));
  Tensor g = kiln::zeros({2}, kiln::requires_grad());
  std::vector<Tensor> in2{c, g};
  keys = kiln::call_key_set(kiln::get_op("add"), in2, nullptr);
  EXPECT_TRUE(keys.has(DispatchKey::Autograd));  // any input that requires grad
  std::vector<Tensor> meta{kiln::zeros({2}, kiln::kMeta)};
  keys = kiln::call_key_set(relu, meta, nullptr);
  EXPECT_TRUE(keys.has(DispatchKey::Meta));
  EXPECT_FALSE(keys.has(DispatchKey::CPU));
}

TEST(DispatchKeys, GuardsNestAndRestore) {
  ASSERT_TRUE(kiln::local_dispatch_keys().included.empty());
  ASSERT_TRUE(kiln::local_dispatch_keys().excluded.empty());
  {
    kiln::IncludeDispatchKeysGuard inc(DispatchKeySet(DispatchKey::Tracer));
    {
      kiln::ExcludeDispatchKeysGuard exc(DispatchKey::Autograd);
      kiln::IncludeDispatchKeysGuard inc2(DispatchKeySet(DispatchKey::Autograd));
      EXPECT_TRUE(kiln::local_dispatch_keys().included.has(DispatchKey::Tracer));
      EXPECT_TRUE(kiln::local_dispatch_keys().included.has(DispatchKey::Autograd));
      EXPECT_TRUE(kiln::local_dispatch_keys().excluded.has(DispatchKey::Autograd));
    }
    EXPECT_FALSE(kiln::local_dispatch_keys().included.has(DispatchKey::Autograd));
    EXPECT_TRUE(kiln::local_dispatch_keys().excluded.empty());
  }
  EXPECT_TRUE(kiln::local_dispatch_keys().included.empty());
}

TEST(DispatchKeys, ExcludingTheBackendLeavesNoKernel) {
  Tensor x = kiln::zeros({2});
  kiln::ExcludeDispatchKeysGuard exc(DispatchKey::CPU);
  EXPECT_TRUE(throws_error_containing([&] { kiln::relu(x); }, {"relu", "no kernel"}));
}

// ---- wrapper kernels: order and redispatch ----

std::vector<std::string>& call_log() {
  static std::vector<std::string> log;
  return log;
}

template <DispatchKey K>
std::vector<Tensor> logging_wrapper(const OpDef& op, std::span<const Tensor> inputs,
                                    const void* attrs) {
  call_log().push_back(std::string(kiln::dispatch_key_name(K)) + ":" + op.name);
  kiln::ExcludeDispatchKeysGuard skip_self(K);
  return kiln::call_op(op, inputs, attrs);
}

std::vector<Tensor> logging_cpu(const OpDef& op, std::span<const Tensor> inputs,
                                const void* attrs) {
  call_log().push_back("CPU:" + op.name);
  return kiln::run_backend(op, DispatchKey::CPU, inputs, attrs);
}

class WrapperKeys : public ::testing::Test {
 protected:
  void SetUp() override { call_log().clear(); }
  void TearDown() override {
    call_log().clear();
    EXPECT_TRUE(kiln::local_dispatch_keys().included.empty());
    EXPECT_TRUE(kiln::local_dispatch_keys().excluded.empty());
  }
  std::vector<float> input_ = {-2.0f, -0.5f, 0.0f, 1.5f, 3.0f};
  std::vector<float> expected_ = {0.0f, 0.0f, 0.0f, 1.5f, 3.0f};
  BoxedKernelSlot tracer_{"relu", DispatchKey::Tracer, logging_wrapper<DispatchKey::Tracer>};
  BoxedKernelSlot autograd_{"relu", DispatchKey::Autograd, logging_wrapper<DispatchKey::Autograd>};
  BoxedKernelSlot cpu_{"relu", DispatchKey::CPU, logging_cpu};
};

TEST_F(WrapperKeys, PlainCallGoesStraightToTheBackend) {
  Tensor y = kiln::relu(kiln::from_vector(input_));
  EXPECT_EQ(call_log(), (std::vector<std::string>{"CPU:relu"}));
  EXPECT_EQ(y.to_vector<float>(), expected_);
}

TEST_F(WrapperKeys, RequiresGradAddsAutograd) {
  Tensor x = kiln::from_vector(input_, {}, kiln::requires_grad());
  ASSERT_TRUE(x.requires_grad());
  Tensor y = kiln::relu(x);
  EXPECT_EQ(call_log(), (std::vector<std::string>{"Autograd:relu", "CPU:relu"}));
  EXPECT_EQ(y.to_vector<float>(), expected_);
}

TEST_F(WrapperKeys, TracerThenAutogradThenBackend) {
  Tensor x = kiln::from_vector(input_, {}, kiln::requires_grad());
  Tensor y;
  {
    kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
    y = kiln::relu(x);
  }
  EXPECT_EQ(call_log(), (std::vector<std::string>{"Tracer:relu", "Autograd:relu", "CPU:relu"}));
  EXPECT_EQ(y.to_vector<float>(), expected_);
}

TEST_F(WrapperKeys, TracerWithoutGrad) {
  kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
  Tensor y = kiln::relu(kiln::from_vector(input_));
  EXPECT_EQ(call_log(), (std::vector<std::string>{"Tracer:relu", "CPU:relu"}));
  EXPECT_EQ(y.to_vector<float>(), expected_);
}

TEST_F(WrapperKeys, ExcludedKeysAreSkipped) {
  Tensor x = kiln::from_vector(input_, {}, kiln::requires_grad());
  kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
  {
    kiln::ExcludeDispatchKeysGuard no_grad(DispatchKey::Autograd);
    (void)kiln::relu(x);
  }
  EXPECT_EQ(call_log(), (std::vector<std::string>{"Tracer:relu", "CPU:relu"}));
}

TEST_F(WrapperKeys, OtherOpsAreUnaffected) {
  kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
  Tensor y = kiln::neg(kiln::from_vector(input_));
  EXPECT_TRUE(call_log().empty());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.0f, 0.5f, -0.0f, -1.5f, -3.0f}));
}

std::vector<Tensor> throwing_wrapper(const OpDef& op, std::span<const Tensor>, const void*) {
  kiln::ExcludeDispatchKeysGuard skip_self(DispatchKey::Tracer);
  throw kiln::Error(op.name + ": refused by the test wrapper");
}

TEST(WrapperErrors, ExceptionInAWrapperRestoresThreadLocalKeys) {
  BoxedKernelSlot slot("exp", DispatchKey::Tracer, throwing_wrapper);
  {
    kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
    EXPECT_TRUE(throws_error_containing([] { kiln::exp(kiln::zeros({2})); }, {"exp", "refused"}));
    EXPECT_TRUE(kiln::local_dispatch_keys().excluded.empty());
  }
  EXPECT_TRUE(kiln::local_dispatch_keys().included.empty());
  EXPECT_EQ(kiln::exp(kiln::zeros({2})).to_vector<float>(), (std::vector<float>{1.0f, 1.0f}));
}

// ---- calls made by a backend kernel are not re-dispatched through wrappers ----

int& tracer_calls(const std::string& name) {
  static std::map<std::string, int> calls;
  return calls[name];
}

std::vector<Tensor> counting_tracer(const OpDef& op, std::span<const Tensor> inputs,
                                    const void* attrs) {
  ++tracer_calls(op.name);
  kiln::ExcludeDispatchKeysGuard skip_self(DispatchKey::Tracer);
  return kiln::call_op(op, inputs, attrs);
}

std::vector<Tensor> counting_autograd(const OpDef& op, std::span<const Tensor> inputs,
                                      const void* attrs) {
  ++tracer_calls("autograd:" + op.name);
  kiln::ExcludeDispatchKeysGuard skip_self(DispatchKey::Autograd);
  return kiln::call_op(op, inputs, attrs);
}

TEST(WrapperNesting, CastInsideAddIsInvisibleToTracerAndAutograd) {
  BoxedKernelSlot add_t("add", DispatchKey::Tracer, counting_tracer);
  BoxedKernelSlot convert_t("convert", DispatchKey::Tracer, counting_tracer);
  BoxedKernelSlot add_a("add", DispatchKey::Autograd, counting_autograd);
  BoxedKernelSlot convert_a("convert", DispatchKey::Autograd, counting_autograd);
  tracer_calls("add") = tracer_calls("convert") = 0;
  tracer_calls("autograd:add") = tracer_calls("autograd:convert") = 0;
  Tensor i = kiln::from_vector<int32_t>({1, 2, 3});
  Tensor f = kiln::from_vector<float>({0.5f, 0.25f, -1.0f}, {}, kiln::requires_grad());
  Tensor r;
  {
    kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
    r = kiln::add(i, f);
  }
  EXPECT_EQ(tracer_calls("add"), 1);
  EXPECT_EQ(tracer_calls("convert"), 0);
  EXPECT_EQ(tracer_calls("autograd:add"), 1);
  EXPECT_EQ(tracer_calls("autograd:convert"), 0);
  EXPECT_EQ(r.dtype(), kiln::kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.5f, 2.25f, 2.0f}));
  // An explicit conversion by the user is visible.
  {
    kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
    (void)i.to(kiln::kFloat64);
  }
  EXPECT_EQ(tracer_calls("convert"), 1);
}

TEST(WrapperNesting, KernelsInsideMatmulAndMeanAreInvisible) {
  BoxedKernelSlot slots[] = {
      {"unsqueeze", DispatchKey::Tracer, counting_tracer},
      {"convert", DispatchKey::Tracer, counting_tracer},
      {"copy_", DispatchKey::Tracer, counting_tracer},
      {"permute", DispatchKey::Tracer, counting_tracer},
      {"clone", DispatchKey::Tracer, counting_tracer},
  };
  (void)slots;
  for (const char* n : {"unsqueeze", "convert", "copy_", "permute", "clone"})
    tracer_calls(n) = 0;
  kiln::IncludeDispatchKeysGuard tracing(DispatchKeySet(DispatchKey::Tracer));
  // mm's kernel unsqueezes its operands; mean of float16 converts and copies; sum over a
  // non-leading dim permutes and clones.
  (void)kiln::mm(kiln::ones({2, 3}, kiln::kFloat16), kiln::ones({3, 2}, kiln::kFloat16));
  (void)kiln::mean(kiln::ones({4, 5}, kiln::kFloat16), {1});
  (void)kiln::sum(kiln::ones({4, 5, 6}).transpose(0, 2), {1});
  for (const char* n : {"unsqueeze", "convert", "copy_", "permute", "clone"}) {
    EXPECT_EQ(tracer_calls(n), 0) << n;
  }
}

}  // namespace
