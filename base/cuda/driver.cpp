#include "kiln/base/cuda/driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "kiln/base/device.h"
#include "kiln/base/error.h"
#include "kiln/config.h"

#if KILN_WITH_CUDA
#include "kiln/base/cuda/driver_api.h"
#endif

namespace kiln::cuda {
namespace {

#if KILN_WITH_CUDA
struct Driver {
  DriverApi api;
  std::string error;
  int count = 0;

  Driver() {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      error = e != nullptr ? e : "libcuda.so.1 not found";
      return;
    }
#define KILN_CUDA_DRIVER_RESOLVE(name)                                            \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));          \
  if (api.name == nullptr && error.empty()) {                                     \
    error = fmt::format("libcuda.so.1 has no {} (the driver is too old)", #name); \
  }
    KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DRIVER_RESOLVE)
#undef KILN_CUDA_DRIVER_RESOLVE
    if (!error.empty()) return;
    if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
      error = fmt::format("cuInit failed with CUresult {}", static_cast<int>(r));
      return;
    }
    if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
      error = fmt::format("cuDeviceGetCount failed with CUresult {}", static_cast<int>(r));
      count = 0;
    }
  }
};
#else
struct Driver {
  std::string error = "this build has no CUDA backend (KILN_WITH_CUDA=OFF)";
  int count = 0;
};
#endif

Driver& driver() {
  static Driver d;
  return d;
}

}  // namespace

bool driver_loaded() {
  return driver().error.empty();
}
const std::string& driver_error() {
  return driver().error;
}
int device_count() {
  return driver_loaded() ? driver().count : 0;
}

void require_device(int index, std::string_view what) {
  KILN_CHECK(driver_loaded(), "{}: no CUDA driver ({})", what, driver_error());
  KILN_CHECK(index >= 0 && index < device_count(),
             "{}: there is no CUDA device {} (the machine has {} CUDA device(s))", what, index,
             device_count());
}

#if KILN_WITH_CUDA
const DriverApi& api(std::string_view what) {
  KILN_CHECK(driver_loaded(), "{}: no CUDA driver ({})", what, driver_error());
  return driver().api;
}

void check(CUresult r, std::string_view what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  const DriverApi& d = driver().api;
  if (d.cuGetErrorName != nullptr) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString != nullptr) d.cuGetErrorString(r, &text);
  KILN_ERROR("{}: {} ({})", what,
             name != nullptr ? name : fmt::format("CUresult {}", static_cast<int>(r)),
             text != nullptr ? text : "no description");
}
#endif

}  // namespace kiln::cuda

namespace kiln {
bool cuda_is_available() {
  return cuda::device_count() > 0;
}
int cuda_device_count() {
  return cuda::device_count();
}
}  // namespace kiln
