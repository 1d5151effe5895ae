// Eager CUDA reduction and normalization kernels (Note [Reduction programs], Note [Row
// programs], Note [Eager CUDA normalization kernels]): without a GPU, the kernel of every
// reduction with a CUDA kernel, for every input dtype its rules accept, and of softmax,
// log_softmax and layer_norm for every floating dtype, and of the random ops and arange (Note
// [Random streams]), compiles with NVRTC to PTX for sm_80 and sm_90. (On a GPU,
// cuda_eager_opinfo_test.cpp runs them against the CPU kernels on every OpInfo sample; the host
// test eager_indexer_host_test.cpp checks the reductions' geometry.)
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/eager_normalization.h"
#include "kiln/codegen/cuda/eager_random.h"
#include "kiln/codegen/cuda/nvrtc_compile.h"
#include "kiln/runtime/cuda/cuda_reduction_ops.h"
#include "kiln/runtime/kernels/loss_programs.h"
#include "kiln/runtime/kernels/nn_attrs.h"
#include "kiln/runtime/kernels/reduction_attrs.h"
#include "kiln/runtime/kernels/reduction_programs.h"
#include "kiln/runtime/kernels/row_programs.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/cuda_ptx_util.h"

namespace {

namespace cg = kiln::codegen::cuda;
using kiln::DType;

using kiln_test::count;
using kiln_test::ptx_for_sm80_and_sm90;

// The dtypes each reduction accumulates in (reduction_spec, Note [Reduction programs]): float
// sums, means and products in double (the CPU merges blocks and multiplies in double), amax of
// a float16 in float32, integer sums in int64 (the output's dtype), bool amax through int64 as
// the CPU's reduction_compute_dtype; mean divides by the count in double, a sum does not.
TEST(CudaEagerReduction, AccumulatesAsTheCpuKernels) {
  const kiln::OpDef& sum = kiln::get_op("sum");
  const kiln::OpDef& mean = kiln::get_op("mean");
  const kiln::OpDef& prod = kiln::get_op("prod");
  const kiln::OpDef& amax = kiln::get_op("amax");
  EXPECT_EQ(kiln::reduction_spec(sum, kiln::kFloat16, kiln::kFloat16).accumulate, kiln::kFloat64);
  EXPECT_EQ(kiln::reduction_spec(prod, kiln::kFloat32, kiln::kFloat32).accumulate, kiln::kFloat64);
  EXPECT_EQ(kiln::reduction_spec(amax, kiln::kFloat16, kiln::kFloat16).accumulate, kiln::kFloat32);
  EXPECT_EQ(kiln::reduction_spec(sum, kiln::kInt32, kiln::kInt64).accumulate, kiln::kInt64);
  EXPECT_EQ(kiln::reduction_spec(amax, kiln::kBool, kiln::kBool).accumulate, kiln::kInt64);
  kiln::ReductionProgramSpec m = kiln::reduction_spec(mean, kiln::kFloat32, kiln::kFloat32);
  m.kept_dims = m.reduced_dims = 1;
  std::string text = kiln::reduction_program(m).str();
  EXPECT_NE(text.find("1.0 / f64(%count)"), std::string::npos) << text;
  kiln::ReductionProgramSpec s = kiln::reduction_spec(sum, kiln::kFloat32, kiln::kFloat32);
  s.kept_dims = s.reduced_dims = 1;
  text = kiln::reduction_program(s).str();
  EXPECT_EQ(text.find("%count)"), std::string::npos) << "a sum is not divided\n" << text;
}

TEST(CudaEagerNormalization, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::string tu;
  size_t kernels = 0;
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    for (const cg::CudaSource& src :
         {cg::eager_softmax_source(t, false), cg::eager_softmax_source(t, true),
          cg::eager_layer_norm_source(t)}) {
      // The row-cached entries (Note [Row-cached normalization entries]).
      ASSERT_EQ(src.entries.size(), 2u);
      for (const cg::CudaEntry& e : src.entries)
        EXPECT_EQ(e.mapping, cg::Mapping::BlockPerRow);
      EXPECT_TRUE(src.entries[0].symbol.ends_with("_cached"));
      EXPECT_EQ(src.entries[1].symbol,
                src.entries[0].symbol.substr(0, src.entries[0].symbol.size() - 7) + "_warp_cached");
      if (tu.empty())
        tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
      tu += src.code;
      kernels += 2;
    }
  }
  for (const char* name : {"softmax", "log_softmax", "layer_norm"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : ptx_for_sm80_and_sm90(tu, "eager_normalization_corpus")) {
    EXPECT_EQ(count(ptx, ".entry"), kernels);
    // Two block reductions a row (max and sum; mean and squared deviations).
    EXPECT_GE(count(ptx, "shfl.sync.bfly"), 2 * kernels);
    // The cached entries read and write rows in 16-byte accesses.
    EXPECT_GE(count(ptx, "ld.global.v4.u32") + count(ptx, "ld.global.nc.v4.u32"), kernels);
    EXPECT_GE(count(ptx, "st.global.v4.u32"), kernels);
  }
}

TEST(CudaEagerRandom, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  kiln_test::PtxCorpus corpus;
  auto add = [&](const cg::CudaSource& src) { corpus.add(src); };
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    for (cg::EagerRandom kind :
         {cg::EagerRandom::Uniform, cg::EagerRandom::Normal, cg::EagerRandom::Dropout})
      add(cg::eager_random_source(kind, t));
  }
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16, kiln::kInt64,
                  kiln::kInt32, kiln::kUInt8, kiln::kInt8, kiln::kInt16})
    add(cg::eager_arange_source(t));
  // The kernels compile the CPU's Philox functions, not a copy of them.
  EXPECT_NE(corpus.tu.find("kiln_philox_block(unsigned long long key"), std::string::npos);
  for (const char* name : {"rand", "randn", "dropout", "arange"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : ptx_for_sm80_and_sm90(corpus.tu, "eager_random_corpus"))
    EXPECT_EQ(count(ptx, ".entry"), corpus.kernels);
}

// The eager CUDA kernels generated from the row programs (Note [Row programs]): every op (the
// fused backwards too), dtype and affine form is a block-per-row entry that takes its sizes at
// launch, with a block reduction or more a row, and compiles for sm_80 and sm_90.
TEST(CudaEagerNormalization, EveryRowProgramCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::string tu;
  size_t kernels = 0;
  auto add = [&](const kiln::kir::Kernel& k) {
    cg::CudaSource src = cg::emit_cuda(k);
    ASSERT_EQ(src.entries.size(), 1u) << src.str();
    EXPECT_EQ(src.entries[0].mapping, cg::Mapping::BlockPerRow) << src.str();
    EXPECT_EQ(src.entries[0].work, 0) << "the rows are a launch argument\n" << src.str();
    if (tu.empty())
      tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
    tu += src.code;
    ++kernels;
  };
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
    kiln::SoftmaxAttrs s{-1};
    add(kiln::row_program(kiln::get_op("softmax"), t, &s));
    add(kiln::row_program(kiln::get_op("log_softmax"), t, &s));
    for (bool w : {false, true}) {
      for (bool b : {false, true}) {
        kiln::LayerNormAttrs a{{8}, 1e-5, w, b};
        add(kiln::row_program(kiln::get_op("layer_norm"), t, &a));
      }
    }
    // The fused backwards (Note [Fused normalization backward]).
    add(kiln::row_program(kiln::get_op("softmax_backward"), t, &s));
    add(kiln::row_program(kiln::get_op("log_softmax_backward"), t, &s));
    for (bool w : {false, true}) {
      kiln::LayerNormAttrs a{{8}, 1e-5, w, false};
      add(kiln::row_program(kiln::get_op("layer_norm_backward"), t, &a));
    }
  }
  for (const char* name : {"softmax_backward", "log_softmax_backward", "layer_norm_backward"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : ptx_for_sm80_and_sm90(tu, "row_program_corpus")) {
    EXPECT_EQ(count(ptx, ".entry"), kernels);
    // At least one block reduction a row (softmax_backward's one sum).
    EXPECT_GE(count(ptx, "shfl.sync.bfly"), kernels);
  }
}

// The eager CUDA reductions generated from the reduction programs (Note [Reduction programs]):
// every op and dtype in both forms, over layouts of 0 to 3 kept and 1 to 3 reduced dims on the
// common dtypes, compiles for sm_80 and sm_90; the vector form reduces across the block.
TEST(CudaEagerReduction, EveryReductionProgramCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::string tu;
  size_t kernels = 0, block_forms = 0;
  std::set<std::string> ops;
  const DType kDTypes[] = {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16,
                           kiln::kInt64,   kiln::kInt32,   kiln::kBool,    kiln::kUInt8,
                           kiln::kInt8,    kiln::kInt16};
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (!kiln::has_cuda_reduction_kernel(*op)) continue;
    kiln::ReduceAttrs attrs;
    for (DType t : kDTypes) {
      kiln::Shape sizes{3};
      kiln::MetaRef in{sizes, {}, 0, t, kiln::kCPU};
      DType out;
      try {
        out = op->dtype(*op, std::span(&in, 1), &attrs, 0);
      } catch (const kiln::Error&) {
        continue;  // the op rejects this dtype (mean of an integer)
      }
      ops.insert(op->name);
      // Every rank on the common dtypes, one kept and one reduced dim on the others.
      bool common = t == kiln::kFloat32 || t == kiln::kFloat16 || t == kiln::kInt64;
      for (int kept = common ? 0 : 1; kept <= (common ? 3 : 1); ++kept) {
        for (int reduced = 1; reduced <= (common ? 3 : 1); ++reduced) {
          for (bool serial : {false, true}) {
            kiln::ReductionProgramSpec spec = kiln::reduction_spec(*op, t, out);
            spec.kept_dims = kept;
            spec.reduced_dims = reduced;
            spec.serial = serial;
            cg::CudaSource src = cg::emit_cuda(kiln::reduction_program(spec));
            ASSERT_EQ(src.entries.size(), 1u) << src.str();
            if (!serial) {
              EXPECT_EQ(src.entries[0].mapping, cg::Mapping::BlockPerRow) << src.str();
              ++block_forms;
            }
            if (tu.empty())
              tu =
                  src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
            tu += src.code;
            ++kernels;
          }
        }
      }
    }
  }
  for (const char* name : {"sum", "mean", "prod", "amax", "amin"})
    EXPECT_TRUE(ops.count(name)) << name << " has no CUDA reduction kernel";
  for (const std::string& ptx : ptx_for_sm80_and_sm90(tu, "reduction_program_corpus")) {
    EXPECT_EQ(count(ptx, ".entry"), kernels);
    EXPECT_GE(count(ptx, "shfl.sync.bfly"), block_forms);
  }
  std::printf(
      "[cuda eager] %zu reduction kernels of %zu ops, compiled to PTX for sm_80 and sm_90\n",
      kernels, ops.size());
}

// The nll_loss program (Note [The nll_loss program]) compiles for sm_80 and sm_90 in every
// reduction and floating dtype: one block-per-row entry over the targets, the kernel the eager
// CUDA op runs.
TEST(CudaEagerReduction, TheNllLossProgramCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  std::string tu;
  size_t kernels = 0;
  for (const char* reduction : {"none", "sum", "mean"}) {
    for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16}) {
      kiln::NllLossAttrs a{reduction, -100};
      cg::CudaSource src = cg::emit_cuda(kiln::nll_loss_program(a, t, t));
      EXPECT_NE(kiln::get_op("nll_loss").compute[static_cast<int>(kiln::DispatchKey::CUDA)],
                nullptr);
      ASSERT_EQ(src.entries.size(), 1u) << src.str();
      EXPECT_EQ(src.entries[0].mapping, cg::Mapping::BlockPerRow) << src.str();
      if (tu.empty())
        tu = src.translation_unit().substr(0, src.translation_unit().size() - src.code.size());
      tu += src.code;
      ++kernels;
    }
  }
  for (const std::string& ptx : ptx_for_sm80_and_sm90(tu, "nll_loss_program_corpus")) {
    EXPECT_EQ(count(ptx, ".entry"), kernels);
    EXPECT_GE(count(ptx, "shfl.sync.bfly"), 2 * kernels);  // at least the bad count and target
  }
}

}  // namespace
