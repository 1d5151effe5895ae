// Thread-local autograd modes: grad mode (NoGradGuard / EnableGradGuard) and anomaly mode.
#pragma once

namespace kiln {

// Whether ops record autograd history on this thread. Off inside NoGradGuard and while the
// engine runs a backward pass without create_graph.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// RAII: sets grad mode for a scope and restores the previous value.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

// Anomaly mode: each Node records the forward op and call site that created it, and the engine
// checks every gradient a Node returns for NaN (runtime/autograd/anomaly_mode.h).
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class AnomalyModeGuard {
 public:
  explicit AnomalyModeGuard(bool enabled = true) : prev_(AnomalyMode::is_enabled()) {
    AnomalyMode::set_enabled(enabled);
  }
  ~AnomalyModeGuard() { AnomalyMode::set_enabled(prev_); }
  AnomalyModeGuard(const AnomalyModeGuard&) = delete;
  AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace kiln
