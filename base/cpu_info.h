// What the host CPU is, for the headers of benchmarks and demos (figures name their machine).
#pragma once

#include <string>

namespace kiln {

// "Intel(R) Xeon(R) Processor (family 6, model 207)" from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model();

}  // namespace kiln
