// CUDA devices, streams and events. Every device's primary context is retained on first use and
// made current on the calling thread by DeviceGuard; each thread has a current stream per device
// (the device's default, legacy NULL stream until set), which kernels, copies and the caching
// allocator use. Handles are kept as void* so that this header needs no cuda.h.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/base/device.h"

namespace kiln::cuda {

struct DeviceProperties {
  std::string name;
  int major = 0;  // compute capability
  int minor = 0;
  int multiprocessors = 0;
  int64_t total_memory = 0;
};
// Throws kiln::Error when the device does not exist or there is no driver.
const DeviceProperties& device_properties(int device);

// Makes `device`'s primary context current on this thread for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  void* previous_ = nullptr;
};

class Stream {
 public:
  Stream(int device, void* handle) : device_(device), handle_(handle) {}
  int device() const { return device_; }
  void* handle() const { return handle_; }
  // What the caching allocator keys blocks by.
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(handle_); }
  void synchronize() const;
  bool query() const;  // true when all work queued so far has finished
  friend bool operator==(const Stream& a, const Stream& b) {
    return a.device_ == b.device_ && a.handle_ == b.handle_;
  }

 private:
  int device_;
  void* handle_;
};

Stream default_stream(int device);
Stream current_stream(int device);
void set_current_stream(const Stream& stream);
// A new stream that does not synchronize with the default stream; it lives as long as the
// process (as PyTorch's pooled streams), so Stream values never dangle.
Stream new_stream(int device);

// Sets the current stream of its device for the guard's lifetime.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// Waits for all work on the device.
void synchronize(int device);

class Event {
 public:
  explicit Event(int device, bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& stream);
  void synchronize() const;
  bool query() const;
  // `stream` waits (on the device) until the work recorded before this event is done.
  void block(const Stream& stream) const;
  // Milliseconds between this event and a later one; both need timing = true.
  float elapsed_ms(const Event& end) const;

 private:
  int device_;
  void* handle_ = nullptr;
};

}  // namespace kiln::cuda
