#include "kiln/base/cuda/cuda_stream.h"

#include <array>
#include <deque>
#include <memory>
#include <mutex>

#include "kiln/base/cuda/driver.h"
#include "kiln/base/error.h"
#include "kiln/config.h"

#if KILN_WITH_CUDA
#include "kiln/base/cuda/driver_api.h"
#endif

namespace kiln::cuda {

#if KILN_WITH_CUDA
namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::once_flag once;
  CUcontext context = nullptr;
  DeviceProperties props;
};

std::array<DeviceState, kMaxDevices>& devices() {
  static auto* d = new std::array<DeviceState, kMaxDevices>();  // leaked: contexts outlive statics
  return *d;
}

DeviceState& state(int device) {
  require_device(device, "cuda");
  KILN_CHECK(device < kMaxDevices, "cuda: device index {} is above Kiln's limit of {}", device,
             kMaxDevices);
  DeviceState& s = devices()[static_cast<size_t>(device)];
  std::call_once(s.once, [&] {
    const DriverApi& d = api("cuda");
    CUdevice dev = 0;
    check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&s.context, dev), "cuDevicePrimaryCtxRetain");
    char name[256] = {};
    check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
    s.props.name = name;
    check(d.cuDeviceGetAttribute(&s.props.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "cuDeviceGetAttribute");
    check(d.cuDeviceGetAttribute(&s.props.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "cuDeviceGetAttribute");
    check(d.cuDeviceGetAttribute(&s.props.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 dev),
          "cuDeviceGetAttribute");
    size_t total = 0;
    check(d.cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem");
    s.props.total_memory = static_cast<int64_t>(total);
  });
  return s;
}

// The current stream per device, per thread; nullptr is the default stream.
thread_local std::array<CUstream, kMaxDevices> t_current{};

}  // namespace

const DeviceProperties& device_properties(int device) {
  return state(device).props;
}

DeviceGuard::DeviceGuard(int device) {
  CUcontext ctx = state(device).context;
  const DriverApi& d = api("cuda");
  CUcontext previous = nullptr;
  check(d.cuCtxGetCurrent(&previous), "cuCtxGetCurrent");
  previous_ = previous;
  if (previous != ctx) check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

DeviceGuard::~DeviceGuard() {
  const DriverApi& d = api("cuda");
  CUcontext now = nullptr;
  // A destructor must not throw: a failure to restore leaves this device's context current.
  if (d.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != previous_ && previous_ != nullptr) {
    d.cuCtxSetCurrent(static_cast<CUcontext>(previous_));
  }
}

void Stream::synchronize() const {
  DeviceGuard g(device_);
  check(api("cuda").cuStreamSynchronize(static_cast<CUstream>(handle_)), "cuStreamSynchronize");
}

bool Stream::query() const {
  DeviceGuard g(device_);
  CUresult r = api("cuda").cuStreamQuery(static_cast<CUstream>(handle_));
  if (r == CUDA_ERROR_NOT_READY) return false;
  check(r, "cuStreamQuery");
  return true;
}

Stream default_stream(int device) {
  state(device);
  return Stream(device, nullptr);
}

Stream current_stream(int device) {
  state(device);
  return Stream(device, t_current[static_cast<size_t>(device)]);
}

void set_current_stream(const Stream& stream) {
  state(stream.device());
  t_current[static_cast<size_t>(stream.device())] = static_cast<CUstream>(stream.handle());
}

Stream new_stream(int device) {
  DeviceGuard g(device);
  CUstream s = nullptr;
  check(api("cuda").cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return Stream(device, s);
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  set_current_stream(stream);
}

StreamGuard::~StreamGuard() {
  set_current_stream(previous_);
}

void synchronize(int device) {
  DeviceGuard g(device);
  check(api("cuda").cuCtxSynchronize(), "cuCtxSynchronize");
}

Event::Event(int device, bool timing) : device_(device) {
  DeviceGuard g(device);
  CUevent e = nullptr;
  check(api("cuda").cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
        "cuEventCreate");
  handle_ = e;
}

Event::~Event() {
  if (handle_ != nullptr) api("cuda").cuEventDestroy_v2(static_cast<CUevent>(handle_));
}

void Event::record(const Stream& stream) {
  KILN_CHECK(stream.device() == device_,
             "Event::record: the event is on cuda:{}, the stream on cuda:{}", device_,
             stream.device());
  DeviceGuard g(device_);
  check(api("cuda").cuEventRecord(static_cast<CUevent>(handle_),
                                  static_cast<CUstream>(stream.handle())),
        "cuEventRecord");
}

void Event::synchronize() const {
  check(api("cuda").cuEventSynchronize(static_cast<CUevent>(handle_)), "cuEventSynchronize");
}

bool Event::query() const {
  CUresult r = api("cuda").cuEventQuery(static_cast<CUevent>(handle_));
  if (r == CUDA_ERROR_NOT_READY) return false;
  check(r, "cuEventQuery");
  return true;
}

void Event::block(const Stream& stream) const {
  DeviceGuard g(stream.device());
  check(api("cuda").cuStreamWaitEvent(static_cast<CUstream>(stream.handle()),
                                      static_cast<CUevent>(handle_), 0),
        "cuStreamWaitEvent");
}

float Event::elapsed_ms(const Event& end) const {
  float ms = 0;
  check(api("cuda").cuEventElapsedTime(&ms, static_cast<CUevent>(handle_),
                                       static_cast<CUevent>(end.handle_)),
        "cuEventElapsedTime");
  return ms;
}

#else  // no CUDA in this build: every entry point explains why

namespace {
[[noreturn]] void no_cuda(int device) {
  require_device(device, "cuda");
  KILN_ERROR("cuda: this build has no CUDA backend (KILN_WITH_CUDA=OFF)");
}
}  // namespace

const DeviceProperties& device_properties(int device) {
  no_cuda(device);
}
DeviceGuard::DeviceGuard(int device) {
  no_cuda(device);
}
DeviceGuard::~DeviceGuard() = default;
void Stream::synchronize() const {
  no_cuda(device_);
}
bool Stream::query() const {
  no_cuda(device_);
}
Stream default_stream(int device) {
  no_cuda(device);
}
Stream current_stream(int device) {
  no_cuda(device);
}
void set_current_stream(const Stream& stream) {
  no_cuda(stream.device());
}
Stream new_stream(int device) {
  no_cuda(device);
}
StreamGuard::StreamGuard(const Stream& stream) : previous_(stream) {
  no_cuda(stream.device());
}
StreamGuard::~StreamGuard() = default;
void synchronize(int device) {
  no_cuda(device);
}
Event::Event(int device, bool) : device_(device) {
  no_cuda(device);
}
Event::~Event() = default;
void Event::record(const Stream& stream) {
  no_cuda(stream.device());
}
void Event::synchronize() const {
  no_cuda(device_);
}
bool Event::query() const {
  no_cuda(device_);
}
void Event::block(const Stream& stream) const {
  no_cuda(stream.device());
}
float Event::elapsed_ms(const Event&) const {
  no_cuda(device_);
}

#endif

}  // namespace kiln::cuda
