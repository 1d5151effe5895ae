// Size parameters in the kernel IR (Note [Size parameters] in kernel_ir/kernel_ir.h): the text
// form, the verifier's structural and launch checks, specialize_sizes, the interpreter and the
// LLVM backend running one kernel at several sizes, and the CUDA emitter taking the sizes as
// kernel arguments. The kernels are the row programs of softmax, log_softmax and
// layer_norm (runtime/kernels/row_programs.cpp), checked against straightforward loops.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/config.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kernel_ir/kernel_parser.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_verifier.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"
#include "test_util.h"
#if KILN_WITH_LLVM
#include "codegen/kir_test_util.h"
#include "kiln/codegen/llvm/llvm_backend.h"
#endif

namespace {

namespace kir = kiln::kir;
using kiln::Tensor;

kir::Kernel softmax_program(kiln::DType t = kiln::kFloat32) {
  kiln::SoftmaxAttrs a{-1};
  return kiln::row_program(kiln::get_op("softmax"), t, &a);
}

// softmax over rows of `n` by a plain loop in double.
std::vector<double> softmax_reference(const std::vector<float>& x, int64_t n) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r * n < x.size(); ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j)
      m = std::max(m, static_cast<double>(x[r * n + j]));
    for (int64_t j = 0; j < n; ++j)
      s += std::exp(x[r * n + j] - m);
    for (int64_t j = 0; j < n; ++j)
      out[r * n + j] = std::exp(x[r * n + j] - m) / s;
  }
  return out;
}

TEST(KernelSizes, TheTextNamesTheSizesAndRoundTrips) {
  kir::Kernel k = softmax_program();
  std::string text = k.str();
  EXPECT_NE(text.find("%out: f32[?] out, %x: f32[?], %outer: size, %n: size, %inner: size"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vector for %j in 0..%n {"), std::string::npos) << text;
  std::vector<kir::Kernel> parsed = kir::parse_kernels(text);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].str(), text);
  EXPECT_EQ(parsed[0].sizes().size(), 3u);
  EXPECT_NO_THROW(kir::verify(parsed[0]));
}

TEST(KernelSizes, OneProgramRunsAtEverySizeInTheInterpreter) {
  kir::Kernel k = softmax_program();
  for (int64_t rows : {1, 3}) {
    for (int64_t n : {1, 7, 100}) {
      Tensor x = kiln::randn({rows, n});
      Tensor out = kiln::empty({rows, n});
      std::vector<Tensor> args{out, x};
      std::vector<int64_t> sizes{rows, n, 1};
      kir::run_kernel(k, args, sizes);
      std::vector<double> want = softmax_reference(x.to_vector<float>(), n);
      std::vector<float> got = out.to_vector<float>();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-6) << rows << "x" << n << " element " << i;
    }
  }
}

TEST(KernelSizes, SpecializingFixesEveryExtentAndDropsEmptyLoops) {
  kir::Kernel k = softmax_program();
  std::vector<int64_t> sizes{2, 5, 1}, extents{10, 10};
  kir::Kernel s = kir::specialize_sizes(k, sizes, extents);
  EXPECT_TRUE(s.sizes().empty());
  std::string text = s.str();
  EXPECT_EQ(text.find("size"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for %o in 0..2 {"), std::string::npos) << text;
  EXPECT_NE(text.find("vector for %j in 0..5 {"), std::string::npos) << text;
  EXPECT_NE(text.find("%x: f32[10]"), std::string::npos) << text;
  EXPECT_NO_THROW(kir::verify(s));  // static: every index is bounded now

  std::vector<int64_t> none{0, 5, 1}, empty{0, 0};
  kir::Kernel zero = kir::specialize_sizes(k, none, empty);
  EXPECT_TRUE(zero.body.empty()) << zero.str();

  std::vector<int64_t> two{2, 5};
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kir::specialize_sizes(k, two, extents); },
                                                 {"2 sizes given for 3 size parameters"}));
  std::vector<int64_t> negative{2, -1, 1};
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [&] { kir::specialize_sizes(k, negative, extents); }, {"size %n is -1"}));
}

TEST(KernelSizes, TheLaunchChecksEveryIndexAgainstTheTensors) {
  kir::Kernel k = softmax_program();
  Tensor x = kiln::randn({2, 4}), out = kiln::empty({2, 4});
  std::vector<Tensor> args{out, x};
  std::vector<int64_t> too_long{2, 5, 1};
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { kir::run_kernel(k, args, too_long); },
                                                 {"outside the buffer's extent 8"}));
}

TEST(KernelSizes, TheVerifierKeepsSizesOutOfStatements) {
  auto fails = [](const std::string& text, const std::string& message) {
    std::vector<kir::Kernel> ks = kir::parse_kernels(text);
    ASSERT_EQ(ks.size(), 1u);
    EXPECT_TRUE(kiln_test::throws_error_containing([&] { kir::verify(ks[0]); }, {message}));
  };
  // A size defined again by a statement (built: the parser refuses the name twice).
  {
    kir::Kernel k;
    k.name = "k";
    kir::Builder b(k);
    b.buffer("out", kiln::kFloat32, true, kir::kRuntimeExtent);
    kir::VarId n = b.size("n");
    k.body.push_back(kir::stmt::loop(
        n, 4, {kir::stmt::store(0, b.var_ref(n), b.constant(1.0, kiln::kFloat32))}));
    EXPECT_TRUE(kiln_test::throws_error_containing([&] { kir::verify(k); },
                                                   {"%n is defined twice", "size parameters"}));
    // Fixing the sizes would hide it: the launch verifies the kernel as written first.
    Tensor out = kiln::empty({8});
    std::vector<Tensor> args{out};
    std::vector<int64_t> sizes{2};
    EXPECT_TRUE(kiln_test::throws_error_containing([&] { kir::run_kernel(k, args, sizes); },
                                                   {"%n is defined twice"}));
  }
  // A static buffer indexed by a runtime loop cannot be bounded.
  fails(
      "kernel k(%out: f32[4] out, %n: size) {\n"
      "  for %i in 0..%n {\n"
      "    store %out[%i] = 1.0\n"
      "  }\n"
      "}\n",
      "cannot be bounded");
  // A runtime extent without sizes.
  fails(
      "kernel k(%out: f32[?] out) {\n"
      "  for %i in 0..4 {\n"
      "    store %out[%i] = 1.0\n"
      "  }\n"
      "}\n",
      "runtime extent in a kernel without size parameters");
  // A loop that runs to a variable that is not a size.
  fails(
      "kernel k(%out: f32[?] out, %n: size) {\n"
      "  for %i in 0..4 {\n"
      "    for %j in 0..%i {\n"
      "      store %out[%j] = 1.0\n"
      "    }\n"
      "  }\n"
      "}\n",
      "runs to %i, which is not a size parameter");
}

TEST(KernelSizes, TheCudaEmitterTakesTheSizesAsArguments) {
  kir::Kernel k = softmax_program();
  kiln::codegen::cuda::CudaSource src = kiln::codegen::cuda::emit_cuda(k);
  ASSERT_EQ(src.entries.size(), 1u);
  EXPECT_EQ(src.entries[0].mapping, kiln::codegen::cuda::Mapping::BlockPerRow);
  EXPECT_EQ(src.entries[0].work, 0) << "the launcher computes the rows";
  EXPECT_NE(src.code.find("const long long v_n"), std::string::npos) << src.code;
  EXPECT_NE(src.code.find("< v_n;"), std::string::npos) << src.code;
  EXPECT_NE(src.code.find("kiln_block_reduce"), std::string::npos) << src.code;
}

#if KILN_WITH_LLVM
// One compiled kernel runs at every size, and its launch checks the sizes against the tensors.
TEST(KernelSizes, OneLlvmKernelRunsAtEverySize) {
  namespace cg = kiln::codegen;
  kir::Kernel k = softmax_program();
  auto compiled = cg::llvm_compile(k, {});
  for (int64_t rows : {1, 3, 64}) {
    for (int64_t n : {1, 9, 1000}) {
      Tensor x = kiln::randn({rows, n}), out = kiln::empty({rows, n});
      std::vector<Tensor> args{out, x};
      std::vector<int64_t> sizes{rows, n, 1};
      auto bound = kir::bind_arguments(k, args, "test");
      cg::llvm_run(*compiled, k, bound, sizes);
      std::vector<double> want = softmax_reference(x.to_vector<float>(), n);
      std::vector<float> got = out.to_vector<float>();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-6) << rows << "x" << n << " element " << i;
    }
  }
  Tensor x = kiln::randn({2, 4}), out = kiln::empty({2, 4});
  std::vector<Tensor> args{out, x};
  auto bound = kir::bind_arguments(k, args, "test");
  std::vector<int64_t> too_long{2, 5, 1};
  EXPECT_TRUE(kiln_test::throws_error_containing(
      [&] { cg::llvm_run(*compiled, k, bound, too_long); }, {"outside the buffer's extent 8"}));
  std::vector<int64_t> two{2, 4};
  EXPECT_TRUE(kiln_test::throws_error_containing([&] { cg::llvm_run(*compiled, k, bound, two); },
                                                 {"2 sizes given for 3 size parameters"}));
}
#endif

}  // namespace
