// convolution and convolution_backward on CUDA devices: cuDNN's legacy (v7) convolution API,
// one call per product of Note [Convolution image and columns]: gather is
// cudnnConvolutionForward, scatter cudnnConvolutionBackwardData and the weight gradient
// cudnnConvolutionBackwardFilter, with cuDNN's "x" the image and "y" the columns grid, so a
// transposed convolution runs the same calls with the roles of its tensors swapped.
#include "kiln/runtime/cuda/cudnn_conv.h"

#include <fmt/format.h>

#include "kiln/config.h"
#include "kiln/runtime/cuda/cuda_kernels.h"

#if KILN_WITH_CUDA
#include <cudnn.h>
#include <dlfcn.h>

#include <atomic>
#include <climits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "kiln/base/cuda/cuda_stream.h"
#include "kiln/base/cuda/driver.h"
#include "kiln/base/options.h"
#include "kiln/runtime/cuda/cublas_matmul.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#endif

namespace kiln {

#if KILN_WITH_CUDA
namespace cuda {
namespace {

// Note [cuDNN loaded on first use]
// cuDNN is loaded with dlopen by the first call that needs it, as cuBLAS (Note [cuBLAS loaded on
// first use]): linking it would make every binary need it (and load its 500 MB of engines) to
// start. A process without it runs everything else; a convolution on a CUDA tensor then throws
// "cuDNN not found". The library stays open for the process.
struct CudnnApi {
  CudnnLibrary lib;
  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnCreateTensorDescriptor) create_tensor = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor = nullptr;
  decltype(&cudnnSetTensorNdDescriptor) set_tensor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) create_filter = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) set_filter = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) create_conv = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_conv = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) set_conv = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) set_groups = nullptr;
  decltype(&cudnnSetConvolutionMathType) set_math = nullptr;
  decltype(&cudnnGetConvolutionNdForwardOutputDim) output_dim = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) forward_algo = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forward_workspace = nullptr;
  decltype(&cudnnConvolutionForward) forward = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) data_algo = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) data_workspace = nullptr;
  decltype(&cudnnConvolutionBackwardData) backward_data = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) filter_algo = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) filter_workspace = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) backward_filter = nullptr;
  decltype(&cudnnConvolutionBackwardBias) backward_bias = nullptr;
  decltype(&cudnnFindConvolutionForwardAlgorithm) find_forward = nullptr;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithm) find_data = nullptr;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithm) find_filter = nullptr;

  explicit CudnnApi(const std::vector<std::string>& paths) {
    void* handle = nullptr;
    std::string tried;
    for (const std::string& p : paths) {
      handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        lib.path = p;
        break;
      }
      const char* e = dlerror();
      tried += fmt::format(" {} ({})", p, e != nullptr ? e : "not found");
    }
    if (handle == nullptr) {
      lib.error = fmt::format("cuDNN not found; tried:{}", tried);
      return;
    }
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (fn == nullptr && lib.error.empty())
        lib.error = fmt::format("cuDNN not found: {} has no {}", lib.path, name);
    };
    resolve(get_version, "cudnnGetVersion");
    resolve(error_string, "cudnnGetErrorString");
    resolve(create, "cudnnCreate");
    resolve(set_stream, "cudnnSetStream");
    resolve(create_tensor, "cudnnCreateTensorDescriptor");
    resolve(destroy_tensor, "cudnnDestroyTensorDescriptor");
    resolve(set_tensor, "cudnnSetTensorNdDescriptor");
    resolve(create_filter, "cudnnCreateFilterDescriptor");
    resolve(destroy_filter, "cudnnDestroyFilterDescriptor");
    resolve(set_filter, "cudnnSetFilterNdDescriptor");
    resolve(create_conv, "cudnnCreateConvolutionDescriptor");
    resolve(destroy_conv, "cudnnDestroyConvolutionDescriptor");
    resolve(set_conv, "cudnnSetConvolutionNdDescriptor");
    resolve(set_groups, "cudnnSetConvolutionGroupCount");
    resolve(set_math, "cudnnSetConvolutionMathType");
    resolve(output_dim, "cudnnGetConvolutionNdForwardOutputDim");
    resolve(forward_algo, "cudnnGetConvolutionForwardAlgorithm_v7");
    resolve(forward_workspace, "cudnnGetConvolutionForwardWorkspaceSize");
    resolve(forward, "cudnnConvolutionForward");
    resolve(data_algo, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    resolve(data_workspace, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    resolve(backward_data, "cudnnConvolutionBackwardData");
    resolve(filter_algo, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    resolve(filter_workspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    resolve(backward_filter, "cudnnConvolutionBackwardFilter");
    resolve(backward_bias, "cudnnConvolutionBackwardBias");
    resolve(find_forward, "cudnnFindConvolutionForwardAlgorithm");
    resolve(find_data, "cudnnFindConvolutionBackwardDataAlgorithm");
    resolve(find_filter, "cudnnFindConvolutionBackwardFilterAlgorithm");
    if (lib.error.empty()) lib.version = get_version();
  }
};

std::vector<std::string> default_paths() {
  std::vector<std::string> paths{fmt::format("libcudnn.so.{}", CUDNN_MAJOR)};
#ifdef KILN_CUDNN_LIBRARY
  paths.emplace_back(KILN_CUDNN_LIBRARY);
#endif
  return paths;
}

const CudnnApi& api() {
  static const CudnnApi a(default_paths());
  return a;
}

const CudnnApi& checked_api(std::string_view what) {
  const CudnnApi& a = api();
  KILN_CHECK(a.lib.error.empty(), "{}: {}", what, a.lib.error);
  return a;
}

void check(cudnnStatus_t status, std::string_view what) {
  KILN_CHECK(status == CUDNN_STATUS_SUCCESS, "{}: {} ({})", what, api().error_string(status),
             static_cast<int>(status));
}

int to_int(int64_t v, std::string_view what) {
  KILN_CHECK(v <= INT_MAX, "{}: size {} is past cuDNN's 32-bit limit", what, v);
  return static_cast<int>(v);
}

cudnnDataType_t data_type(DType t, std::string_view what) {
  switch (t) {
    case kFloat32:
      return CUDNN_DATA_FLOAT;
    case kFloat64:
      return CUDNN_DATA_DOUBLE;
    case kFloat16:
      return CUDNN_DATA_HALF;
    case kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      KILN_ERROR("{}: dtype {} is not supported (expected floating point)", what, t);
  }
}

// The descriptors of one call (always 2-d: a 1-d convolution has a height of 1), destroyed with
// it. x is the image, y the columns grid, w the weight as cuDNN's filter [column channels,
// image channels / groups, kH, kW].
struct Descriptors {
  const CudnnApi& a;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const CudnnApi& api_, const ConvGeometry& g, DType dtype, std::string_view what)
      : a(api_) {
    cudnnDataType_t t = data_type(dtype, what);
    auto tensor = [&](cudnnTensorDescriptor_t& d, int64_t c, int64_t h, int64_t w_) {
      check(a.create_tensor(&d), what);
      int dims[4] = {to_int(g.n, what), to_int(c, what), to_int(h, what), to_int(w_, what)};
      int strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
      check(a.set_tensor(d, t, 4, dims, strides), what);
    };
    tensor(x, g.image_channels(), g.image(0), g.image(1));
    tensor(y, g.column_channels(), g.columns(0), g.columns(1));
    check(a.create_filter(&w), what);
    int filter[4] = {to_int(g.column_channels(), what), to_int(g.image_channels() / g.groups, what),
                     to_int(g.kernel[0], what), to_int(g.kernel[1], what)};
    check(a.set_filter(w, t, CUDNN_TENSOR_NCHW, 4, filter), what);
    check(a.create_conv(&conv), what);
    int pad[2] = {to_int(g.padding[0], what), to_int(g.padding[1], what)};
    int stride[2] = {to_int(g.stride[0], what), to_int(g.stride[1], what)};
    int dil[2] = {to_int(g.dilation[0], what), to_int(g.dilation[1], what)};
    // Half and bfloat16 accumulate in float, as the CPU kernel.
    cudnnDataType_t compute = dtype == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    check(a.set_conv(conv, 2, pad, stride, dil, CUDNN_CROSS_CORRELATION, compute), what);
    check(a.set_groups(conv, to_int(g.groups, what)), what);
    // float32 keeps full precision unless TF32 is allowed (cuda::set_allow_tf32, as matmul).
    cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
    if (dtype == kFloat32 && !allow_tf32()) math = CUDNN_FMA_MATH;
    if (dtype == kFloat64) math = CUDNN_DEFAULT_MATH;
    check(a.set_math(conv, math), what);
  }
  ~Descriptors() {
    if (conv != nullptr) a.destroy_conv(conv);
    if (w != nullptr) a.destroy_filter(w);
    if (y != nullptr) a.destroy_tensor(y);
    if (x != nullptr) a.destroy_tensor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// One handle per thread and device, as cuBLAS's (never destroyed: the driver may be gone at exit).
cudnnHandle_t handle_for(const CudnnApi& a, int device, std::string_view what) {
  thread_local std::unordered_map<int, cudnnHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cudnnHandle_t h = nullptr;
  check(a.create(&h), what);
  return handles.emplace(device, h).first->second;
}

// Scales for cuDNN: double for double tensors, float otherwise.
struct Scales {
  float f[2] = {1, 0};
  double d[2] = {1, 0};
  bool dbl;
  explicit Scales(DType t) : dbl(t == kFloat64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d[1]) : &f[1]; }
};

// Note [cuDNN algorithm choice]
// Asking cuDNN's heuristics for an algorithm costs more host time than a product of a typical
// layer's size takes on the device, and a training step asks three times per layer. So each
// product's choice is kept per device and geometry (sizes, stride, padding, dilation, groups,
// dtype, math mode), as torch keeps its own. With set_cudnn_benchmark(true) a geometry's first
// call times every algorithm instead (cudnnFind*, which allocates its own scratch memory) and
// keeps the fastest. KILN_LOGS=kernels prints each choice.
struct AlgoChoice {
  int algo = 0;
  size_t bytes = 0;  // the workspace it needs
};
struct AlgoCache {
  std::mutex mu;
  std::map<std::pair<int, std::string>, AlgoChoice> choices;
};
AlgoCache& algo_cache() {
  static auto* c = new AlgoCache();  // never destroyed: convolutions may run during exit
  return *c;
}
std::atomic<bool>& benchmark_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

// Runs the three products of one call on the device's current stream.
class CudnnCall {
 public:
  CudnnCall(const OpDef& op, const ConvGeometry& g, const Tensor& any)
      : a_(checked_api(op.name)),
        g_(g),
        what_(op.name),
        device_(any.device()),
        guard_(any.device().index),
        d_(a_, g, any.dtype(), what_),
        scales_(any.dtype()),
        dtype_(any.dtype()) {
    h_ = handle_for(a_, device_.index, what_);
    auto stream = static_cast<cudaStream_t>(current_stream(device_.index).handle());
    check(a_.set_stream(h_, stream), what_);
  }

  // columns = conv(image)
  void gather(const Tensor& image, const Tensor& weight, const Tensor& columns) {
    AlgoChoice c = choose<cudnnConvolutionFwdAlgoPerf_t>(
        "forward", CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        [&](int n, int* found, cudnnConvolutionFwdAlgoPerf_t* perf, bool find) {
          return find ? a_.find_forward(h_, d_.x, d_.w, d_.conv, d_.y, n, found, perf)
                      : a_.forward_algo(h_, d_.x, d_.w, d_.conv, d_.y, n, found, perf);
        },
        [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
          return a_.forward_workspace(h_, d_.x, d_.w, d_.conv, d_.y, algo, bytes);
        });
    Tensor ws = workspace(c.bytes);
    check(a_.forward(h_, scales_.one(), d_.x, data(image), d_.w, data(weight), d_.conv,
                     static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), data(ws), c.bytes,
                     scales_.zero(), d_.y, data(columns)),
          what_);
  }

  // image = the adjoint of gather applied to columns
  void scatter(const Tensor& columns, const Tensor& weight, const Tensor& image) {
    AlgoChoice c = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
        "backward data", CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        [&](int n, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf, bool find) {
          return find ? a_.find_data(h_, d_.w, d_.y, d_.conv, d_.x, n, found, perf)
                      : a_.data_algo(h_, d_.w, d_.y, d_.conv, d_.x, n, found, perf);
        },
        [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
          return a_.data_workspace(h_, d_.w, d_.y, d_.conv, d_.x, algo, bytes);
        });
    Tensor ws = workspace(c.bytes);
    check(a_.backward_data(h_, scales_.one(), d_.w, data(weight), d_.y, data(columns), d_.conv,
                           static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), data(ws), c.bytes,
                           scales_.zero(), d_.x, data(image)),
          what_);
  }

  // grad_weight = the weight gradient of gather at image against columns
  void weight(const Tensor& image, const Tensor& columns, const Tensor& grad_weight) {
    AlgoChoice c = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
        "backward filter", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        [&](int n, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf, bool find) {
          return find ? a_.find_filter(h_, d_.x, d_.y, d_.conv, d_.w, n, found, perf)
                      : a_.filter_algo(h_, d_.x, d_.y, d_.conv, d_.w, n, found, perf);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
          return a_.filter_workspace(h_, d_.x, d_.y, d_.conv, d_.w, algo, bytes);
        });
    Tensor ws = workspace(c.bytes);
    check(a_.backward_filter(h_, scales_.one(), d_.x, data(image), d_.y, data(columns), d_.conv,
                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), data(ws),
                             c.bytes, scales_.zero(), d_.w, data(grad_weight)),
          what_);
  }

 private:
  static void* data(const Tensor& t) { return t.defined() ? t.impl()->data() : nullptr; }

  // The algorithm of one product (Note [cuDNN algorithm choice]): `query` fills cuDNN's
  // ranking (the heuristics', or with `find` the timed one), `workspace_of` sizes a choice.
  template <class Perf, class Query, class WorkspaceOf>
  AlgoChoice choose(const char* product, int count, Query&& query, WorkspaceOf&& workspace_of) {
    bool find = cudnn_benchmark();
    std::string key = fmt::format(
        "{}{} n{} c{}/{} g{} in{}x{} k{}x{} s{}x{} p{}x{} d{}x{} {}{}{}", product,
        g_.transposed ? " (transposed)" : "", g_.n, g_.image_channels(), g_.column_channels(),
        g_.groups, g_.image(0), g_.image(1), g_.kernel[0], g_.kernel[1], g_.stride[0], g_.stride[1],
        g_.padding[0], g_.padding[1], g_.dilation[0], g_.dilation[1], dtype_,
        allow_tf32() ? " tf32" : "", find ? " timed" : "");
    AlgoCache& cache = algo_cache();
    std::lock_guard lock(cache.mu);  // held through a Find, so each geometry is timed once
    auto it = cache.choices.find({device_.index, key});
    if (it != cache.choices.end()) return it->second;
    std::vector<Perf> perf(static_cast<size_t>(count));
    int found = 0;
    check(query(count, &found, perf.data(), find), what_);
    // Both rankings put the best first; take the first cuDNN can run on this call.
    for (int i = 0; i < found; ++i) {
      const Perf& p = perf[static_cast<size_t>(i)];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      AlgoChoice c{static_cast<int>(p.algo), 0};
      if (workspace_of(p.algo, &c.bytes) != CUDNN_STATUS_SUCCESS) continue;
      log_line("kernels",
               fmt::format("cudnn: {}: algorithm {}{}, {} bytes of workspace", key, c.algo,
                           find ? fmt::format(" ({:.3f} ms)", p.time) : "", c.bytes));
      cache.choices.emplace(std::pair{device_.index, std::move(key)}, c);
      return c;
    }
    KILN_ERROR("{}: cuDNN has no {} algorithm for this convolution ({})", what_, product, key);
  }
  Tensor workspace(size_t bytes) const {
    if (bytes == 0) return {};
    return empty_tensor({static_cast<int64_t>((bytes + 7) / 8)}, kInt64, device_);
  }

  const CudnnApi& a_;
  const ConvGeometry& g_;
  std::string_view what_;
  Device device_;
  DeviceGuard guard_;
  Descriptors d_;
  Scales scales_;
  DType dtype_;
  cudnnHandle_t h_ = nullptr;
};

bool empty_call(const ConvGeometry& g) {
  return g.n == 0 || g.in_channels == 0 || g.out_channels == 0 || g.kernel_size() == 0;
}

void convolution_cuda(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const Tensor> inputs, const void* attrs) {
  check_same_device(op, inputs, outputs[0]);
  ConvGeometry g = conv_geometry_of(op, inputs, attrs_as<ConvAttrs>(attrs));
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  if (empty_call(g)) {
    fill_into(out, 0);
  } else {
    Tensor x = inputs[0].contiguous(), w = inputs[1].contiguous();
    CudnnCall call(op, g, out);
    if (g.transposed) {
      call.scatter(x, w, out);
    } else {
      call.gather(x, w, out);
    }
  }
  if (inputs.size() == 3) {
    Shape b(static_cast<size_t>(out.dim()), 1);
    b[1] = g.out_channels;
    copy_into(out, out + inputs[2].reshape(b));
  }
}

void convolution_backward_cuda(const OpDef& op, std::span<const Tensor> outputs,
                               std::span<const Tensor> inputs, const void* attrs) {
  check_same_device(op, inputs, outputs[0]);
  const auto& a = attrs_as<ConvBackwardAttrs>(attrs);
  ConvGeometry g = conv_geometry_of(op, inputs.subspan(1), a.conv);
  ConvBackwardOutputs o = conv_backward_outputs(a, outputs);
  Tensor go = inputs[0].contiguous(), x = inputs[1].contiguous(), w = inputs[2].contiguous();
  bool empty = empty_call(g) || go.numel() == 0;
  if ((o.grad_input.defined() || o.grad_weight.defined()) && !empty) {
    CudnnCall call(op, g, go);
    const Tensor& image = g.transposed ? go : x;
    const Tensor& columns = g.transposed ? x : go;
    if (o.grad_input.defined()) {
      if (g.transposed) {
        call.gather(go, w, o.grad_input);
      } else {
        call.scatter(go, w, o.grad_input);
      }
    }
    if (o.grad_weight.defined()) call.weight(image, columns, o.grad_weight);
  } else {
    if (o.grad_input.defined()) fill_into(o.grad_input, 0);
    if (o.grad_weight.defined()) fill_into(o.grad_weight, 0);
  }
  if (o.grad_bias.defined()) {
    Shape dims{0};
    for (int64_t d = 2; d < go.dim(); ++d)
      dims.push_back(d);
    copy_into(o.grad_bias, go.sum(dims));
  }
}

}  // namespace

const CudnnLibrary& cudnn_library() {
  return api().lib;
}

void set_cudnn_benchmark(bool benchmark) {
  benchmark_flag() = benchmark;
}
bool cudnn_benchmark() {
  return benchmark_flag();
}

CudnnLibrary load_cudnn_from(const std::string& path) {
  return CudnnApi({path}).lib;
}

Shape cudnn_columns_sizes(const ConvGeometry& g, DType dtype) {
  const char* what = "cudnn_columns_sizes";
  const CudnnApi& a = checked_api(what);
  Descriptors d(a, g, dtype, what);
  int dims[4] = {};
  check(a.output_dim(d.conv, d.x, d.w, 4, dims), what);
  return {dims[0], dims[1], dims[2], dims[3]};
}

}  // namespace cuda

void register_cuda_conv_kernels(OpTable& table) {
  constexpr int kCuda = static_cast<int>(DispatchKey::CUDA);
  table.mutable_op("convolution").compute[kCuda] = cuda::convolution_cuda;
  table.mutable_op("convolution_backward").compute[kCuda] = cuda::convolution_backward_cuda;
}
#else
namespace cuda {

const CudnnLibrary& cudnn_library() {
  static const CudnnLibrary lib{"", 0, "cuDNN not found: this build has no CUDA backend"};
  return lib;
}

CudnnLibrary load_cudnn_from(const std::string&) {
  return cudnn_library();
}

Shape cudnn_columns_sizes(const ConvGeometry&, DType) {
  KILN_ERROR("cudnn_columns_sizes: {}", cudnn_library().error);
}

// Without CUDA there is no convolution on a device to choose for; the flag is kept as torch's.
namespace {
bool benchmark_without_cuda = false;
}
void set_cudnn_benchmark(bool benchmark) {
  benchmark_without_cuda = benchmark;
}
bool cudnn_benchmark() {
  return benchmark_without_cuda;
}

}  // namespace cuda

// Without the CUDA backend no tensor lives on a CUDA device, so there is nothing to register.
void register_cuda_conv_kernels(OpTable&) {}
#endif

}  // namespace kiln
