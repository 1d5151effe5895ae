// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that Kiln binaries run
// on machines without a GPU or driver. Only the entry points Kiln uses are resolved.
#pragma once

#include <string>
#include <string_view>

namespace kiln::cuda {

// True when libcuda.so.1 was found and cuInit succeeded.
bool driver_loaded();
// Why the driver is unavailable ("libcuda.so.1: cannot open shared object file", a cuInit
// error), or empty when it loaded.
const std::string& driver_error();
int device_count();
// Throws kiln::Error naming `what` and the reason (no driver, no such device) unless CUDA
// device `index` can be used.
void require_device(int index, std::string_view what);

}  // namespace kiln::cuda
