#include "kiln/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kiln/base/error.h"
#include "kiln/base/options.h"

namespace kiln {
namespace {

thread_local bool t_in_parallel = false;

// Note [Spin before sleeping]
// Eager ops arrive one after another a few microseconds apart, and each parallel op hands
// chunks to the workers. Waking a worker blocked on a condition variable costs a futex call
// and a trip through the scheduler: measured on the 2-core development VM at 40-50 us per op,
// which made Adam's 850 ops on 2^16 floats 7x slower on 2 threads than on 1. So a worker
// that finishes a chunk spins on the job generation for a short while before it sleeps, and
// the caller spins on the pending count before it waits; the notify (a syscall) is only made
// when the other side is actually asleep. OpenMP runtimes do the same (GOMP_SPINCOUNT). The
// spin is bounded in time, and park_workers() ends it at once: OpenBLAS runs its own threads,
// and a Kiln worker spinning beside them on a 2-core machine made the LSTM step twice as slow.
constexpr auto kSpinFor = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpinFor has passed; returns done()'s last value.
template <typename Pred>
bool spin_until(const Pred& done) {
  auto start = std::chrono::steady_clock::now();
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() - start > kSpinFor) return done();
  }
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return num_threads_; }

  void park() { park_epoch_.fetch_add(1, std::memory_order_release); }

  void resize(int threads) {
    std::lock_guard<std::mutex> one_job(job_mutex_);
    stop_workers();
    num_threads_ = std::max(1, threads);
    stopping_ = false;
    // A worker that starts late must still see the first job posted after this point.
    uint64_t start = generation_.load(std::memory_order_relaxed);
    int wanted = num_threads_;
    for (int i = 1; i < wanted; ++i) {
      try {
        if (i == 1) workers_.reserve(static_cast<size_t>(wanted - 1));
        workers_.emplace_back([this, i, start] { worker_loop(i, start); });
      } catch (const std::exception& e) {
        // Keep the workers that did start, so the pool stays usable at the size it reached:
        // num_threads_ must never count a worker that is not there, or run() waits for it.
        num_threads_ = i;
        KILN_ERROR("set_num_threads: could not start thread {} of {} ({}); running on {}", i + 1,
                   wanted, e.what(), num_threads_);
      }
    }
  }

  // Runs fn(chunk) for chunk in [0, chunks): chunk 0 on the caller, the rest on workers.
  void run(int chunks, const std::function<void(int)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // one parallel region at a time
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      job_chunks_ = chunks;
      pending_.store(chunks - 1, std::memory_order_relaxed);
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;
    }
    if (wake) wake_.notify_all();
    run_chunk(fn, 0);
    auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_waiting_ = true;
      done_.wait(lock, finished);
      caller_waiting_ = false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_chunk(const std::function<void(int)>& fn, int chunk) {
    bool saved = t_in_parallel;
    t_in_parallel = true;
    try {
      fn(chunk);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_parallel = saved;
  }

  void worker_loop(int index, uint64_t seen) {
    while (true) {
      auto posted = [&] {
        return stopping_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
      };
      const uint64_t parked = park_epoch_.load(std::memory_order_acquire);
      spin_until([&] { return posted() || park_epoch_.load(std::memory_order_acquire) != parked; });
      const std::function<void(int)>* job;
      {
        // The job is read under the mutex so that generation, job and chunk count are one
        // consistent snapshot even when the caller has already posted a newer job.
        std::unique_lock<std::mutex> lock(mutex_);
        if (!posted()) {
          ++sleepers_;
          wake_.wait(lock, posted);
          --sleepers_;
        }
        if (stopping_) return;
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
        if (job == nullptr || index >= job_chunks_) continue;
      }
      run_chunk(*job, index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (caller_waiting_) done_.notify_one();
      }
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_)
      w.join();
    workers_.clear();
  }

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // Written under mutex_; generation_, pending_ and stopping_ are also read while spinning.
  const std::function<void(int)>* job_ = nullptr;
  int job_chunks_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> park_epoch_{0};  // bumped to end every worker's spin early
  int sleepers_ = 0;
  bool caller_waiting_ = false;
  std::exception_ptr error_;
};

std::string g_sizing_failure;              // written once, inside the call_once below
std::atomic<bool> g_sizing_failed{false};  // set with it; cleared when reported or resized

// The pool, sized to KILN_NUM_THREADS on first use. Leaked: worker threads must not be joined
// during static destruction, while other static destructors may still run kernels. Made with
// one thread (no worker, so the constructor cannot fail halfway with workers waiting on members
// it would destroy), then sized.
ThreadPool& sized_pool() {
  static auto* p = new ThreadPool(1);
  static std::once_flag sized;
  std::call_once(sized, [] {
    try {
      p->resize(options().num_threads);
    } catch (const Error& e) {
      g_sizing_failure = e.what();
      g_sizing_failed.store(true, std::memory_order_release);
    }
  });
  return *p;
}

// The pool for running work: a failure to start KILN_NUM_THREADS threads is said once, to the
// first caller, and the pool then runs on the threads that did start.
ThreadPool& pool() {
  ThreadPool& p = sized_pool();
  if (g_sizing_failed.load(std::memory_order_acquire) &&
      g_sizing_failed.exchange(false, std::memory_order_acq_rel))
    KILN_ERROR("KILN_NUM_THREADS={}: {}", options().num_threads, g_sizing_failure);
  return p;
}

}  // namespace

int get_num_threads() {
  return pool().size();
}
void set_num_threads(int n) {
  KILN_CHECK(n >= 1 && n <= kMaxThreads, "set_num_threads: expected 1 to {} threads, got {}",
             kMaxThreads, n);
  // An explicit size replaces KILN_NUM_THREADS's, whose failure need not be said any more.
  ThreadPool& p = sized_pool();
  g_sizing_failed.store(false, std::memory_order_release);
  p.resize(n);
}
void park_workers() {
  pool().park();
}
bool in_parallel_region() {
  return t_in_parallel;
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  int64_t range = end - begin;
  if (range <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (range + grain - 1) / grain;
  int threads = t_in_parallel ? 1 : get_num_threads();
  int chunks = static_cast<int>(std::min<int64_t>(threads, max_chunks));
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  int64_t step = (range + chunks - 1) / chunks;
  pool().run(chunks, [&](int c) {
    int64_t b = begin + c * step;
    int64_t e = std::min(end, b + step);
    if (b < e) fn(b, e);
  });
}

}  // namespace kiln
