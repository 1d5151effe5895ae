#include "kiln/runtime/autograd/grad_mode.h"

namespace kiln {
namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_anomaly_enabled = false;
}  // namespace

bool GradMode::is_enabled() {
  return t_grad_enabled;
}
void GradMode::set_enabled(bool enabled) {
  t_grad_enabled = enabled;
}
bool AnomalyMode::is_enabled() {
  return t_anomaly_enabled;
}
void AnomalyMode::set_enabled(bool enabled) {
  t_anomaly_enabled = enabled;
}

}  // namespace kiln
