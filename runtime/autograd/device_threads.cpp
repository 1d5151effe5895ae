#include "kiln/runtime/autograd/device_threads.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "kiln/base/error.h"

namespace kiln::autograd {

// Note [Device threads]
// As in PyTorch, backward work on a CUDA device runs on a thread of that device's own, not on the
// thread that called backward(): kernels of one device are queued from one thread, whatever
// thread the user's training loop runs on, and that thread's current stream per node is the
// node's forward stream (engine.cpp, Note [Backward streams]). Kiln's engine hands a graph task
// to the worker of its roots' device whole, and the caller waits for it; nodes of other devices
// in the same graph (a .to() between devices) run there too, in the same order. The caller's
// thread-local state travels with the task (engine.cpp). The workers live as long as the
// process and sleep when idle.
namespace {

constexpr int kMaxDevices = 64;
thread_local bool t_device_thread = false;

class Worker {
 public:
  Worker() : thread_([this] { loop(); }) { thread_.detach(); }
  void run(const std::function<void()>& work) {
    std::packaged_task<void()> task(work);
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
      queued_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_one();
    // A backward mostly queues kernels, so it is often done within tens of microseconds: both
    // sides poll briefly before sleeping, which saves the two thread wake-ups (each about as
    // long) that a condition variable costs.
    spin_until([&] { return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready; });
    done.get();  // rethrows what `work` threw
  }

 private:
  template <class Pred>
  static void spin_until(Pred ready) {
    auto until = std::chrono::steady_clock::now() + kSpin;
    while (!ready() && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
  }

  void loop() {
    t_device_thread = true;
    for (;;) {
      spin_until([this] { return queued_.load(std::memory_order_acquire) > 0; });
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      task();
    }
  }

  static constexpr std::chrono::microseconds kSpin{200};
  std::atomic<int> queued_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  std::thread thread_;
};

Worker& worker(int device) {
  KILN_CHECK(device >= 0 && device < kMaxDevices,
             "autograd: CUDA device index {} is outside Kiln's range [0, {})", device, kMaxDevices);
  // Leaked with their threads: a worker may be asleep in its loop when the process exits.
  static std::mutex mu;
  static auto* workers = new std::array<Worker*, kMaxDevices>{};
  std::lock_guard<std::mutex> lock(mu);
  Worker*& w = (*workers)[static_cast<size_t>(device)];
  if (w == nullptr) w = new Worker();
  return *w;
}

}  // namespace

void run_on_device_thread(int device, const std::function<void()>& work) {
  if (t_device_thread) {
    work();
    return;
  }
  worker(device).run(work);
}

bool on_device_thread() {
  return t_device_thread;
}

}  // namespace kiln::autograd
