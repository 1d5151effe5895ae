// Where a tensor's memory lives. Meta tensors have shapes and dtypes but no data; they run
// only the ops' shape rules (used by tracing and by the IR verifier).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <string>

namespace kiln {

enum class DeviceType : int8_t { CPU, CUDA, Meta };

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = 0) : type(t), index(i) {}  // NOLINT: implicit
  static constexpr Device cpu() { return Device(DeviceType::CPU); }
  static constexpr Device meta() { return Device(DeviceType::Meta); }
  static constexpr Device cuda(int index = 0) {
    return Device(DeviceType::CUDA, static_cast<int16_t>(index));
  }

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  constexpr bool is_meta() const { return type == DeviceType::Meta; }
  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }
  std::string str() const;  // "cpu", "cuda:0", "meta"
};

inline constexpr Device kCPU = Device::cpu();
inline constexpr Device kMeta = Device::meta();
inline constexpr Device kCUDA = Device::cuda(0);

std::ostream& operator<<(std::ostream& os, Device d);

// CUDA driver probing (the driver is loaded with dlopen, so these work without a GPU).
bool cuda_is_available();
int cuda_device_count();

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Device> : fmt::formatter<std::string_view> {
  auto format(kiln::Device d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.str(), ctx);
  }
};
