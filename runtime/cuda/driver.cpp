#include "kiln/runtime/cuda/driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "kiln/runtime/device.h"

namespace kiln::cuda {
namespace {

using CUresult = int;
using cuInit_t = CUresult (*)(unsigned int);
using cuDeviceGetCount_t = CUresult (*)(int*);

struct Driver {
  void* handle = nullptr;
  cuDeviceGetCount_t device_get_count = nullptr;
  std::string error;
  int count = 0;

  Driver() {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      error = e != nullptr ? e : "libcuda.so.1 not found";
      return;
    }
    auto init = reinterpret_cast<cuInit_t>(dlsym(handle, "cuInit"));
    device_get_count = reinterpret_cast<cuDeviceGetCount_t>(dlsym(handle, "cuDeviceGetCount"));
    if (init == nullptr || device_get_count == nullptr) {
      error = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
      return;
    }
    if (CUresult r = init(0); r != 0) {
      error = fmt::format("cuInit failed with CUresult {}", r);
      return;
    }
    if (CUresult r = device_get_count(&count); r != 0) {
      error = fmt::format("cuDeviceGetCount failed with CUresult {}", r);
      count = 0;
    }
  }
};

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

}  // namespace kiln::cuda

namespace kiln {
bool cuda_is_available() {
  return cuda::device_count() > 0;
}
int cuda_device_count() {
  return cuda::device_count();
}
}  // namespace kiln
