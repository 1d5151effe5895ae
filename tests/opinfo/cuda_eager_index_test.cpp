// Eager CUDA index kernels (Note [Eager CUDA index kernels]): without a GPU, every gather,
// scatter_add, index_put, nonzero and index reduction kernel the ops can ask for compiles with
// NVRTC to PTX for sm_80 and sm_90. With a GPU, a bad index raises the CPU kernel's kiln::Error
// instead of reading out of bounds, and the device stays usable. (cuda_eager_opinfo_test.cpp
// compares the kernels' results with the CPU's on every OpInfo sample.)
#include <gtest/gtest.h>

#include <string>

#include "kiln/base/cuda/driver.h"
#include "kiln/codegen/cuda/eager_indexing.h"
#include "kiln/kiln.h"
#include "kiln/runtime/op_table.h"
#include "opinfo/cuda_ptx_util.h"

namespace {

namespace cg = kiln::codegen::cuda;
using kiln::DType;
using kiln::Tensor;

TEST(CudaEagerIndex, EveryKernelCompilesToPtxForSm80AndSm90) {
  if (!cg::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC (KILN_WITH_CUDA=OFF)";
  kiln_test::PtxCorpus corpus;
  auto add = [&](const cg::CudaSource& src) { corpus.add(src); };
  for (size_t bytes : {1, 2, 4, 8})
    add(cg::eager_gather_source(bytes));
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16, kiln::kInt64,
                  kiln::kInt32, kiln::kUInt8, kiln::kInt8, kiln::kInt16}) {
    add(cg::eager_scatter_add_source(t));
    add(cg::eager_scatter_add_source(t, /*accumulate=*/false));  // index_put
  }
  add(cg::eager_scatter_add_source(kiln::kBool, false));
  add(cg::eager_nonzero_source());
  // The compute dtypes of reduction_compute_dtype.
  for (DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kInt64}) {
    add(cg::eager_index_reduce_source(t, true));
    add(cg::eager_index_reduce_source(t, false));
  }
  for (const char* name : {"embedding", "index_select", "gather", "scatter_add", "cat",
                           "slice_backward", "select_backward", "max", "min", "argmax", "argmin",
                           "nll_loss", "logsumexp", "var", "index", "index_put", "index_put_"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.compute[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  // Their output size is counted from the values: boxed kernels that allocate it.
  for (const char* name : {"nonzero", "masked_select"}) {
    const kiln::OpDef& op = kiln::get_op(name);
    EXPECT_NE(op.boxed[static_cast<int>(kiln::DispatchKey::CUDA)], nullptr) << name;
  }
  for (const std::string& ptx : kiln_test::ptx_for_sm80_and_sm90(corpus.tu, "eager_index_corpus"))
    EXPECT_EQ(kiln_test::count(ptx, ".entry"), corpus.kernels);
  std::printf("[cuda eager] %zu index kernels compiled to PTX for sm_80 and sm_90\n",
              corpus.kernels);
}

TEST(CudaEagerIndex, SixteenBitScatterAddRoundsAfterEachAdd) {
  // As the CPU's serial loop: the sum is formed in float and stored as the element type.
  std::string code = cg::eager_scatter_add_source(kiln::kFloat16).code;
  EXPECT_NE(code.find("kiln_f16_to_f32"), std::string::npos) << code;
  EXPECT_EQ(code.find("atomicAdd"), std::string::npos) << "no atomics: duplicates add in order";
}

// ---- on a device ----

class CudaIndexErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kiln::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
  const kiln::Device gpu = kiln::Device::cuda(0);
  Tensor on_gpu(const Tensor& t) const { return t.to(gpu); }
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(CudaIndexErrors, OutOfRangeIndicesRaiseTheCpusErrorAndTheDeviceStaysUsable) {
  Tensor x = on_gpu(kiln::randn({4, 3}));
  Tensor idx = on_gpu(kiln::from_vector<int64_t>({0, 7, 1}, {3}));
  std::string e = error_of([&] { (void)kiln::index_select(x, 0, idx); });
  EXPECT_NE(e.find("index_select: index 7 is out of range for dimension 0 with size 4"),
            std::string::npos)
      << e;
  e = error_of([&] { (void)kiln::embedding(x, on_gpu(kiln::from_vector<int64_t>({-1}, {1}))); });
  EXPECT_NE(e.find("embedding: index -1 is out of range"), std::string::npos) << e;
  Tensor gi = on_gpu(kiln::from_vector<int64_t>({0, 3, 0, 0}, {4, 1}));
  e = error_of([&] { (void)kiln::gather(x, 1, gi); });
  EXPECT_NE(e.find("gather: index 3 is out of range for dimension 1 with size 3"),
            std::string::npos)
      << e;
  e = error_of([&] { (void)kiln::scatter_add(x, 1, gi, on_gpu(kiln::ones({4, 1}))); });
  EXPECT_NE(e.find("scatter_add: index 3 is out of range"), std::string::npos) << e;
  Tensor logp = on_gpu(kiln::log_softmax(kiln::randn({2, 5}), 1));
  e = error_of([&] {
    (void)kiln::nll_loss(logp, on_gpu(kiln::from_vector<int64_t>({1, 5}, {2})));
  });
  EXPECT_NE(e.find("nll_loss: Target 5 is out of bounds (number of classes 5)"), std::string::npos)
      << e;
  e = error_of([&] { (void)kiln::index(x, {std::optional<Tensor>(idx)}); });
  EXPECT_NE(e.find("index: index 7 is out of bounds for dimension 0 with size 4"),
            std::string::npos)
      << e;
  // The errors left the device and its stream working: the next call gives the CPU's answer.
  Tensor ok = kiln::index_select(x, 0, on_gpu(kiln::from_vector<int64_t>({3, 0}, {2})));
  EXPECT_EQ(ok.to(kiln::kCPU).to_vector<float>(),
            kiln::index_select(x.to(kiln::kCPU), 0, kiln::from_vector<int64_t>({3, 0}, {2}))
                .to_vector<float>());
}

// A class index that ignore_index skips is not checked, as on the CPU.
TEST_F(CudaIndexErrors, IgnoredTargetsAreNotChecked) {
  Tensor logp = kiln::log_softmax(kiln::randn({3, 4}), 1);
  Tensor target = kiln::from_vector<int64_t>({2, -100, 0}, {3});
  Tensor want = kiln::nll_loss(logp, target);
  Tensor got = kiln::nll_loss(on_gpu(logp), on_gpu(target));
  EXPECT_EQ(got.to(kiln::kCPU).item<float>(), want.item<float>());
}

}  // namespace
