// The autograd engine's worker threads, one per CUDA device (Note [Device threads]).
#pragma once

#include <functional>

namespace kiln::autograd {

// Runs `work` on the worker thread of CUDA device `device` and returns when it has finished,
// rethrowing what it threw. Called on that worker itself (a backward inside a backward), it
// runs `work` in place.
void run_on_device_thread(int device, const std::function<void()>& work);

// Whether the calling thread is one of the device workers.
bool on_device_thread();

}  // namespace kiln::autograd
