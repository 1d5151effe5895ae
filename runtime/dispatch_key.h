// Dispatch keys in priority order, key sets, and the thread-local state that shapes dispatch.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln {

// Note [Dispatch key order]
// A call goes to the highest-priority key in its key set that has a kernel: Tracer, then
// Autograd, then exactly one backend. A kernel on a wrapper key does its work, then excludes
// its own key with ExcludeDispatchKeysGuard and calls the op again, which reaches the next key.
enum class DispatchKey : uint8_t { Meta = 0, CUDA = 1, CPU = 2, Autograd = 3, Tracer = 4 };
inline constexpr int kNumDispatchKeys = 5;

std::string_view dispatch_key_name(DispatchKey k);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(bit(k)) {}
  constexpr DispatchKeySet add(DispatchKey k) const { return from_bits(bits_ | bit(k)); }
  constexpr DispatchKeySet remove(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr bool has(DispatchKey k) const { return (bits_ & bit(k)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint8_t bits() const { return bits_; }

 private:
  static constexpr uint8_t bit(DispatchKey k) {
    return static_cast<uint8_t>(1u << static_cast<int>(k));
  }
  static constexpr DispatchKeySet from_bits(uint8_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }
  uint8_t bits_ = 0;
};

// Thread-local key sets: `included` keys are added to every call (the tracer adds Tracer while
// it records), `excluded` keys are removed (wrapper kernels exclude themselves to redispatch).
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalDispatchKeySet& local_dispatch_keys();

class ExcludeDispatchKeysGuard {
 public:
  explicit ExcludeDispatchKeysGuard(DispatchKeySet keys);
  explicit ExcludeDispatchKeysGuard(DispatchKey key)
      : ExcludeDispatchKeysGuard(DispatchKeySet(key)) {}
  ~ExcludeDispatchKeysGuard();
  ExcludeDispatchKeysGuard(const ExcludeDispatchKeysGuard&) = delete;
  ExcludeDispatchKeysGuard& operator=(const ExcludeDispatchKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

class IncludeDispatchKeysGuard {
 public:
  explicit IncludeDispatchKeysGuard(DispatchKeySet keys);
  ~IncludeDispatchKeysGuard();
  IncludeDispatchKeysGuard(const IncludeDispatchKeysGuard&) = delete;
  IncludeDispatchKeysGuard& operator=(const IncludeDispatchKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

}  // namespace kiln
