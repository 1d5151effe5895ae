// The CUDA C emitter and NVRTC, without a GPU: every kernel the fusion pipeline makes from the
// fusion test corpus (tests/passes), from graphs of each pointwise and reduction op and from the
// demo models' training steps is written as CUDA C and compiled to PTX for sm_80 and sm_90. The
// PTX must hold every entry point the emitter announced. Running the kernels needs a device
// (issue 9's GPU tests); the emitted text is pinned by the golden tests tests/passes/cuda_*.ir.
#include <gtest/gtest.h>

#include "codegen/lowering_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/cuda/driver.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#include "kiln/frontend/compile/plan.h"
#include "kiln/frontend/models.h"
#include "kiln/ir/graph.h"
#include "kiln/ir/parser.h"
#include "kiln/kernel_ir/kernel_ir.h"
#include "kiln/kiln.h"
#include "kiln/passes/pass_manager.h"

namespace kiln_test {
namespace {

namespace fs = std::filesystem;
namespace cuda = kiln::codegen::cuda;
using kiln::kir::Kernel;

using kiln_test::fuse_and_lower;
using kiln_test::kernels_of;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Emits and compiles one kernel for both architectures; returns its entry count.
size_t compile_for_both(const Kernel& k) {
  cuda::CudaSource src = cuda::emit_cuda(k);
  EXPECT_FALSE(src.entries.empty()) << k.name;
  for (int arch : {80, 90}) {
    cuda::NvrtcResult r;
    try {
      r = cuda::nvrtc_compile(src.translation_unit(), k.name, arch, cuda::NvrtcOutput::Ptx);
    } catch (const kiln::Error& e) {
      ADD_FAILURE() << "kernel " << k.name << " for sm_" << arch << ": " << e.what() << "\n"
                    << src.str() << "\nkernel IR:\n"
                    << k.str();
      continue;
    }
    EXPECT_NE(r.binary.find(".target sm_" + std::to_string(arch)), std::string::npos) << k.name;
    for (const cuda::CudaEntry& e : src.entries)
      EXPECT_NE(r.binary.find(".entry " + e.symbol), std::string::npos)
          << k.name << ": no entry " << e.symbol << " in the PTX";
  }
  return src.entries.size();
}

// Softmax over rows of 1000, as the composite the fuser groups (tests/passes/lower_softmax.ir).
std::string softmax_graph(const std::string& dt) {
  return fmt::format(
      "graph(%x : {0}[64, 1000]):\n"
      "  %0 : {0}[64, 1] = amax(%x) {{dims=[-1], keepdim=true}}\n"
      "  %1 : {0}[64, 1000] = sub(%x, %0) {{alpha=1}}\n"
      "  %2 : {0}[64, 1000] = exp(%1)\n"
      "  %3 : {0}[64, 1] = sum(%2) {{dims=[-1], keepdim=true}}\n"
      "  %4 : {0}[64, 1000] = div(%2, %3) {{alpha=1}}\n"
      "  return (%4)\n",
      dt);
}

class CudaCodegen : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  }
};

TEST_F(CudaCodegen, EveryKernelOfTheFusionCorpusCompilesToPtx) {
  size_t kernels = 0, files = 0;
  for (const auto& entry : fs::directory_iterator(KILN_PASSES_DIR)) {
    const fs::path& p = entry.path();
    std::string name = p.filename().string();
    if (p.extension() != ".ir" || name.find(".expected.") != std::string::npos) continue;
    // A golden test that expects kiln opt to fail (NAME.error) has no kernels to compile.
    if (fs::exists(fs::path(p).replace_extension(".error"))) continue;
    std::string text = read_file(p);
    if (text.rfind("# passes:", 0) != 0 ||
        text.substr(0, text.find('\n')).find("fuse") == std::string::npos)
      continue;
    ++files;
    for (const Kernel& k : fuse_and_lower(text)) {
      SCOPED_TRACE(name);
      compile_for_both(k);
      ++kernels;
    }
  }
  EXPECT_GE(files, 3u);
  EXPECT_GE(kernels, files);
  std::cout << kernels << " kernels from " << files
            << " corpus files compiled for sm_80 and sm_90\n";
}

// One graph per op: each unary pointwise op, binary and comparison ops with broadcasting, the
// reductions over the last dim (block-per-row) and the first (thread-per-row) and over all
// elements, and conversions between every dtype the kernels store.
TEST_F(CudaCodegen, KernelsOfEachPointwiseAndReductionOpCompileToPtx) {
  std::vector<std::string> graphs;
  for (std::string dt : {"f32", "f64"}) {
    for (std::string op : {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sign", "tanh",
                           "sigmoid", "relu", "silu", "sin", "cos", "erf", "neg"}) {
      graphs.push_back(
          fmt::format("graph(%x : {0}[5, 33]):\n  %0 : {0}[5, 33] = {1}(%x)\n"
                      "  %1 : {0}[5, 33] = mul(%0, %x)\n  return (%1)\n",
                      dt, op));
    }
    for (std::string op : {"add", "sub", "mul", "div", "maximum", "minimum", "pow"}) {
      graphs.push_back(
          fmt::format("graph(%x : {0}[5, 33], %y : {0}[33]):\n  %0 : {0}[5, 33] = {1}(%x, %y)\n"
                      "  %1 : {0}[5, 33] = exp(%0)\n  return (%1)\n",
                      dt, op));
    }
    for (std::string op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      graphs.push_back(
          fmt::format("graph(%x : {0}[5, 33], %y : {0}[5, 33]):\n  %0 : b8[5, 33] = {1}(%x, %y)\n"
                      "  %1 : {0}[5, 33] = where(%0, %x, %y)\n  return (%1)\n",
                      dt, op));
    }
    for (std::string op : {"sum", "mean", "amax", "amin", "logsumexp"}) {
      for (int dim : {0, 1})
        graphs.push_back(
            fmt::format("graph(%x : {0}[64, 300]):\n  %0 : {0}[64, 300] = exp(%x)\n"
                        "  %1 : {0}[{2}] = {1}(%0) {{dims=[{3}], keepdim=false}}\n  return (%1)\n",
                        dt, op, dim == 0 ? 300 : 64, dim));
    }
    graphs.push_back(
        fmt::format("graph(%x : {0}[64, 300]):\n  %0 : {0}[64, 300] = tanh(%x)\n"
                    "  %1 : {0}[] = sum(%0) {{dims=[], keepdim=false}}\n  return (%1)\n",
                    dt));
    graphs.push_back(softmax_graph(dt));
  }
  for (std::string from : {"f32", "f64", "f16", "bf16", "i32", "i64", "b8"}) {
    for (std::string to : {"f32", "f64", "f16", "bf16", "i32", "i64", "b8"}) {
      if (from == to) continue;
      graphs.push_back(
          fmt::format("graph(%x : {0}[7, 9]):\n  %0 : {1}[7, 9] = convert(%x) {{dtype={1}}}\n"
                      "  %1 : {1}[7, 9] = convert(%0) {{dtype={1}}}\n  return (%0)\n",
                      from, to));
    }
  }
  size_t kernels = 0;
  for (const std::string& text : graphs) {
    SCOPED_TRACE(text);
    std::vector<Kernel> ks;
    try {
      ks = fuse_and_lower(text);
    } catch (const kiln::Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    for (const Kernel& k : ks) {
      compile_for_both(k);
      ++kernels;
    }
  }
  EXPECT_GE(kernels, graphs.size());
  std::cout << kernels << " kernels from " << graphs.size() << " op graphs compiled\n";
}

TEST_F(CudaCodegen, DemoModelsTrainingStepKernelsCompileToPtx) {
  size_t kernels = 0;
  for (const std::string& name : kiln::models::model_names()) {
    kiln::models::Model m = kiln::models::make_model(name, 3);
    std::vector<kiln::Tensor> inputs = m.batch(0);
    auto plan = kiln::compile_detail::capture_plan(m.loss, inputs,
                                                   kiln::compile_detail::Signature::of(inputs));
    for (const auto& g : {plan->forward, plan->backward}) {
      ASSERT_TRUE(g);
      for (const Kernel& k : kernels_of(*g)) {
        SCOPED_TRACE(name + ": " + k.name);
        compile_for_both(k);
        ++kernels;
      }
    }
  }
  EXPECT_GE(kernels, 10u);
  std::cout << kernels << " kernels of the demo models compiled\n";
}

TEST(CudaEmitter, MappingFollowsTheLoopNest) {
  // Pointwise: flattened, grid-stride.
  std::vector<Kernel> pw = fuse_and_lower(
      "graph(%x : f32[64, 256], %b : f32[256]):\n  %0 : f32[64, 256] = add(%x, %b) {alpha=1}\n"
      "  %1 : f32[64, 256] = tanh(%0)\n  return (%1)\n");
  ASSERT_EQ(pw.size(), 1u);
  cuda::CudaSource s = cuda::emit_cuda(pw[0]);
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].mapping, cuda::Mapping::Elementwise);
  EXPECT_EQ(s.entries[0].work, 64 * 256);
  EXPECT_EQ(s.entries[0].grid * s.entries[0].block, 64 * 256);

  // A row softmax: one block per row, reductions over the block.
  std::vector<Kernel> sm = fuse_and_lower(softmax_graph("f32"));
  ASSERT_EQ(sm.size(), 1u);
  s = cuda::emit_cuda(sm[0]);
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].mapping, cuda::Mapping::BlockPerRow);
  EXPECT_EQ(s.entries[0].work, 64);
  EXPECT_EQ(s.entries[0].block % 32, 0);
  EXPECT_NE(s.code.find("kiln_block_reduce"), std::string::npos);

  // A column sum (the fuser leaves these to eager kernels, so the kernel is built by hand):
  // one thread per column, each summing its column serially.
  Kernel k;
  k.name = "column_sum";
  kiln::kir::Builder b(k);
  using kiln::kir::Stmt;
  using kiln::kir::StmtKind;
  kiln::kir::BufferId in = b.buffer("in0", kiln::kFloat32, false, 64 * 300);
  kiln::kir::BufferId out = b.buffer("out0", kiln::kFloat32, true, 300);
  kiln::kir::VarId c = b.var("c", kiln::kInt64), r = b.var("r", kiln::kInt64);
  kiln::kir::VarId acc = b.var("acc", kiln::kFloat32);
  Stmt cols{
      .kind = StmtKind::Loop, .var = c, .extent = 300, .loop_kind = kiln::kir::LoopKind::Parallel};
  cols.body.push_back(Stmt{.kind = StmtKind::Accumulator, .var = acc});
  Stmt rows{.kind = StmtKind::Loop, .var = r, .extent = 64};
  kiln::kir::ExprId idx =
      b.binary(kiln::kir::BinaryOp::Add,
               b.binary(kiln::kir::BinaryOp::Mul, b.var_ref(r), b.iconstant(300)), b.var_ref(c));
  rows.body.push_back(Stmt{.kind = StmtKind::Accumulate, .var = acc, .value = b.load(in, idx)});
  cols.body.push_back(rows);
  cols.body.push_back(
      Stmt{.kind = StmtKind::Store, .buffer = out, .index = b.var_ref(c), .value = b.var_ref(acc)});
  k.body.push_back(cols);
  s = cuda::emit_cuda(k);
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].mapping, cuda::Mapping::ThreadPerRow);
  EXPECT_EQ(s.entries[0].work, 300);
  EXPECT_EQ(s.code.find("kiln_block_reduce"), std::string::npos);
  if (cuda::nvrtc_available()) compile_for_both(k);
}

TEST(CudaEmitter, AKernelThatDoesNotVerifyIsAnErrorNamingIt) {
  Kernel k;
  k.name = "broken";
  kiln::kir::Builder b(k);
  kiln::kir::BufferId in = b.buffer("in0", kiln::kFloat32, false, 4);
  kiln::kir::Stmt store;
  store.kind = kiln::kir::StmtKind::Store;
  store.buffer = in;  // a store into an input buffer
  store.index = b.iconstant(0);
  store.value = b.constant(1.0, kiln::kFloat32);
  k.body.push_back(store);
  try {
    cuda::emit_cuda(k);
    FAIL() << "emit_cuda accepted a store into an input";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
  }
}

TEST(CudaNvrtc, ASyntaxErrorIsAnErrorWithTheCompilerLog) {
  if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  try {
    cuda::nvrtc_compile("extern \"C\" __global__ void f() { this is not C++; }", "bad_kernel", 90,
                        cuda::NvrtcOutput::Ptx);
    FAIL() << "NVRTC accepted invalid source";
  } catch (const kiln::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("bad_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("error"), std::string::npos) << what;
  }
}

// Note [CUDA vector accesses]: a contiguous pointwise kernel moves 16 bytes per access when its
// pointers are aligned; a broadcast operand stays a per-lane load, and a kernel whose innermost
// extent the width does not divide keeps only the scalar walk.
TEST(CudaEmitter, ContiguousAccessesBecome128BitLoadsAndStores) {
  if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::vector<Kernel> ks = fuse_and_lower(
      "graph(%x : f32[64, 256], %b : f32[64, 1]):\n"
      "  %0 : f32[64, 256] = mul(%x, %b)\n  %1 : f32[64, 256] = tanh(%0)\n  return (%1)\n");
  ASSERT_EQ(ks.size(), 1u);
  cuda::CudaSource s = cuda::emit_cuda(ks[0]);
  EXPECT_NE(s.code.find("reinterpret_cast<const uint4*>"), std::string::npos) << s.code;
  EXPECT_NE(s.code.find("& 15u"), std::string::npos) << "the alignment check\n" << s.code;
  std::string ptx =
      cuda::nvrtc_compile(s.translation_unit(), ks[0].name, 90, cuda::NvrtcOutput::Ptx).binary;
  EXPECT_NE(ptx.find("ld.global.nc.v4."), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("st.global.v4."), std::string::npos) << ptx;

  std::vector<Kernel> odd = fuse_and_lower(
      "graph(%x : f32[7, 3]):\n  %0 : f32[7, 3] = tanh(%x)\n  %1 : f32[7, 3] = neg(%0)\n"
      "  return (%1)\n");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(cuda::emit_cuda(odd[0]).code.find("uint4"), std::string::npos);
  // 16-bit elements: eight to a 16-byte access.
  std::vector<Kernel> half = fuse_and_lower(
      "graph(%x : f16[1024]):\n  %0 : f16[1024] = neg(%x)\n  %1 : f16[1024] = abs(%0)\n"
      "  return (%1)\n");
  ASSERT_EQ(half.size(), 1u);
  EXPECT_NE(cuda::emit_cuda(half[0]).code.find("unsigned short vec0[8]"), std::string::npos)
      << cuda::emit_cuda(half[0]).code;
}

TEST(CudaNvrtc, CubinForSm90) {
  if (!cuda::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::vector<Kernel> ks = fuse_and_lower(
      "graph(%x : f32[1024]):\n  %0 : f32[1024] = gelu(%x) {approximate=\"tanh\"}\n"
      "  return (%0)\n");
  ASSERT_EQ(ks.size(), 1u);
  cuda::CudaSource s = cuda::emit_cuda(ks[0]);
  cuda::NvrtcResult r =
      cuda::nvrtc_compile(s.translation_unit(), ks[0].name, 90, cuda::NvrtcOutput::Cubin);
  ASSERT_GE(r.binary.size(), 4u);
  EXPECT_EQ(r.binary.substr(0, 4), std::string("\x7f"
                                               "ELF"));  // a cubin is an ELF file
}

TEST(CudaDevice, ToCudaWithoutADeviceThrowsNamingTheReason) {
  if (kiln::cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    kiln::ones({3, 2}).to(kiln::Device::cuda(0));
    FAIL() << ".to(cuda) succeeded without a device";
  } catch (const kiln::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cuda:0"), std::string::npos) << what;
    EXPECT_NE(what.find("[3, 2]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kiln_test
