#include "kiln/base/warning.h"

#include <atomic>
#include <iostream>

namespace kiln {
namespace {

WarningHandler& default_handler() {
  static WarningHandler handler;
  return handler;
}

std::atomic<WarningHandler*> g_process_handler{nullptr};
thread_local WarningHandler* t_thread_handler = nullptr;

}  // namespace

void WarningHandler::process(const std::string& message) {
  std::cerr << "kiln: warning: " << message << "\n";
}

WarningHandler* warning_handler() {
  if (t_thread_handler != nullptr) return t_thread_handler;
  WarningHandler* process = g_process_handler.load(std::memory_order_acquire);
  return process != nullptr ? process : &default_handler();
}

void set_warning_handler(WarningHandler* handler) {
  g_process_handler.store(handler, std::memory_order_release);
}

WarningHandlerGuard::WarningHandlerGuard(WarningHandler* handler) : previous_(t_thread_handler) {
  t_thread_handler = handler;
}

WarningHandlerGuard::~WarningHandlerGuard() {
  t_thread_handler = previous_;
}

void warn(const std::string& message) {
  warning_handler()->process(message);
}

}  // namespace kiln
