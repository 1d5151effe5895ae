// mm and bmm on CUDA devices: one cublasGemmStridedBatchedEx per call, on the device's current
// stream. Row-major C = A B is column-major C^T = B^T A^T, so the operands are passed swapped;
// an operand whose last two dims are transposed-contiguous is passed with CUBLAS_OP_T instead of
// being copied, as the CPU kernel does for OpenBLAS (linalg_ops.cpp).
#include "kiln/runtime/cuda/cublas_matmul.h"

#include <atomic>

#include "kiln/config.h"
#include "kiln/runtime/cuda/cuda_kernels.h"

#if KILN_WITH_CUDA
#include <cublas_v2.h>
#include <fmt/format.h>

#include <dlfcn.h>

#include <climits>
#include <string>
#include <unordered_map>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/base/error.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#endif

namespace kiln::cuda {
namespace {
std::atomic<bool> g_allow_tf32{false};
}  // namespace

void set_allow_tf32(bool allow) {
  g_allow_tf32.store(allow);
}
bool allow_tf32() {
  return g_allow_tf32.load();
}

}  // namespace kiln::cuda

namespace kiln {

#if KILN_WITH_CUDA
namespace {

// Note [cuBLAS loaded on first use]
// cuBLAS is loaded with dlopen by the first CUDA product, not linked: linking it costs every
// process that starts ~0.1 s and ~200 MB (libcublas pulls in the 500 MB libcublasLt), which
// every CPU-only program and every test process paid. The handle stays open for the process.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  // Spelled out: the header overloads this name for C++.
  using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int, const void*,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, void*, cudaDataType, int, long long,
                                                  int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string error;  // why it could not be loaded; empty when it was

  Cublas() {
    // The soname of the toolkit Kiln was built with, then the library CMake found.
    std::string soname = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) handle = dlopen(KILN_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      error = fmt::format("cannot load cuBLAS ({} or {}): {}", soname, KILN_CUBLAS_LIBRARY,
                          e != nullptr ? e : "not found");
      return;
    }
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (fn == nullptr && error.empty()) error = fmt::format("{} has no {}", soname, name);
    };
    resolve(create, "cublasCreate_v2");
    resolve(set_stream, "cublasSetStream_v2");
    resolve(set_math_mode, "cublasSetMathMode");
    resolve(gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
    resolve(status_string, "cublasGetStatusString");
  }
};

const Cublas& cublas(std::string_view what) {
  static const Cublas api;
  KILN_CHECK(api.error.empty(), "{}: {}", what, api.error);
  return api;
}

void check_cublas(cublasStatus_t status, std::string_view what) {
  KILN_CHECK(status == CUBLAS_STATUS_SUCCESS, "{}: {} ({})", what,
             cublas(what).status_string(status), static_cast<int>(status));
}

// One handle per thread and device: a cuBLAS handle must not be used by two threads at once.
// Handles are not destroyed at thread exit, since the driver may already be gone by then.
cublasHandle_t handle_for(int device) {
  thread_local std::unordered_map<int, cublasHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasHandle_t h = nullptr;
  std::string what = fmt::format("cublasCreate on cuda:{}", device);
  check_cublas(cublas(what).create(&h), what);
  // float16/bfloat16 products reduce in float32 throughout, as the CPU kernel's (cuBLAS may
  // otherwise reduce split-K partial sums in the output's precision).
  check_cublas(cublas("cublasSetMathMode")
                   .set_math_mode(h, static_cast<cublasMath_t>(
                                         CUBLAS_DEFAULT_MATH |
                                         CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
               fmt::format("cublasSetMathMode on cuda:{}", device));
  return handles.emplace(device, h).first->second;
}

// An operand's last two dims as cuBLAS takes them: `op` and the leading dimension, or a
// contiguous copy when neither layout fits.
struct GemmOperand {
  Tensor t;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
};

// Row-major [rows, cols] matrices of `t` (dims 1 and 2), as the column-major transposed operand
// cuBLAS reads in place: row-contiguous is CUBLAS_OP_N, column-contiguous CUBLAS_OP_T.
GemmOperand gemm_operand(const Tensor& t) {
  int64_t rows = t.size(1), cols = t.size(2), rs = t.stride(1), cs = t.stride(2);
  if (cs == 1 && rs >= std::max<int64_t>(1, cols)) return {t, CUBLAS_OP_N, rs};
  if (rs == 1 && cs >= std::max<int64_t>(1, rows)) return {t, CUBLAS_OP_T, cs};
  Tensor c = t.contiguous();
  return {c, CUBLAS_OP_N, std::max<int64_t>(1, cols)};
}

cudaDataType cuda_data_type(const OpDef& op, DType t) {
  switch (t) {
    case kFloat32:
      return CUDA_R_32F;
    case kFloat64:
      return CUDA_R_64F;
    case kFloat16:
      return CUDA_R_16F;
    case kBFloat16:
      return CUDA_R_16BF;
    default:
      KILN_ERROR("{}: dtype {} is not supported on CUDA (expected floating point)", op.name, t);
  }
}

void check_int(const OpDef& op, int64_t v, std::string_view what) {
  KILN_CHECK(v <= INT_MAX, "{}: {} {} is past cuBLAS's 32-bit limit", op.name, what, v);
}

// out[b] = a[b] @ w[b] for a [B, m, k], w [B, k, n], out contiguous [B, m, n], all on one device.
void batched_gemm(const OpDef& op, const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  KILN_CHECK(a_in.device() == out.device() && b_in.device() == out.device(),
             "{}: expected all tensors on one device, got {}, {} and output {}", op.name,
             a_in.device(), b_in.device(), out.device());
  int64_t batch = a_in.size(0), m = a_in.size(1), k = a_in.size(2), n = b_in.size(2);
  if (batch == 0 || m == 0 || n == 0) return;
  int device = out.device().index;
  if (k == 0) {  // an empty sum: zeros, written by fill_'s CUDA kernel (no version bump)
    fill_into(out, 0);
    return;
  }
  check_int(op, batch, "batch");
  check_int(op, m, "rows");
  check_int(op, n, "columns");
  check_int(op, k, "inner size");
  GemmOperand pa = gemm_operand(a_in), pb = gemm_operand(b_in);
  check_int(op, pa.ld, "leading dimension");
  check_int(op, pb.ld, "leading dimension");
  DType t = out.dtype();
  cudaDataType dt = cuda_data_type(op, t);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (t == kFloat64) {
    compute = CUBLAS_COMPUTE_64F;
  } else if (t == kFloat32 && cuda::allow_tf32()) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  float alpha_f = 1, beta_f = 0;
  double alpha_d = 1, beta_d = 0;
  const void* alpha = t == kFloat64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = t == kFloat64 ? static_cast<const void*>(&beta_d) : &beta_f;

  cuda::DeviceGuard guard(device);
  cublasHandle_t h = handle_for(device);
  auto stream = static_cast<cudaStream_t>(cuda::current_stream(device).handle());
  const Cublas& api = cublas(op.name);
  check_cublas(api.set_stream(h, stream), fmt::format("{}: cublasSetStream", op.name));
  // Column-major: C^T [n, m] = B^T [n, k] A^T [k, m]; the row-major operands are those
  // transposes already, so B goes first.
  check_cublas(
      api.gemm_strided_batched_ex(
          h, pb.op, pa.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha,
          pb.t.impl()->data(), dt, static_cast<int>(pb.ld), pb.t.stride(0), pa.t.impl()->data(), dt,
          static_cast<int>(pa.ld), pa.t.stride(0), beta, out.impl()->data(), dt,
          static_cast<int>(n), m * n, static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
      fmt::format("{}: cublasGemmStridedBatchedEx of {} [{}, {}] x [{}, {}] ({})", op.name, batch,
                  m, k, k, n, t));
}

void mm_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void*) {
  batched_gemm(op, inputs[0].unsqueeze(0), inputs[1].unsqueeze(0), outputs[0].unsqueeze(0));
}

void bmm_cuda_kernel(const OpDef& op, std::span<const Tensor> outputs,
                     std::span<const Tensor> inputs, const void*) {
  batched_gemm(op, inputs[0], inputs[1], outputs[0]);
}

}  // namespace

void register_cuda_linalg_kernels(OpTable& table) {
  table.mutable_op("mm").compute[static_cast<int>(DispatchKey::CUDA)] = mm_cuda_kernel;
  table.mutable_op("bmm").compute[static_cast<int>(DispatchKey::CUDA)] = bmm_cuda_kernel;
}
#else
// Without the CUDA backend no tensor lives on a CUDA device, so there is nothing to register.
void register_cuda_linalg_kernels(OpTable&) {}
#endif

}  // namespace kiln

namespace kiln::cuda {

std::string cublas_load_error() {
#if KILN_WITH_CUDA
  try {
    cublas("cuBLAS");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
#else
  return "this build has no CUDA backend (KILN_WITH_CUDA=OFF)";
#endif
}

}  // namespace kiln::cuda
