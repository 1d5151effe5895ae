#include "kiln/base/device.h"

namespace kiln {

std::string Device::str() const {
  switch (type) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::Meta:
      return "meta";
    case DeviceType::CUDA:
      return "cuda:" + std::to_string(index);
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, Device d) {
  return os << d.str();
}

}  // namespace kiln
