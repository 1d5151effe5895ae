#include "kiln/runtime/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "kiln/runtime/options.h"

namespace kiln {
namespace {

thread_local bool t_in_parallel = false;

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return num_threads_; }

  void resize(int threads) {
    stop_workers();
    num_threads_ = std::max(1, threads);
    stopping_ = false;
    for (int i = 1; i < num_threads_; ++i)
      workers_.emplace_back([this, i] { worker_loop(i); });
  }

  // Runs fn(chunk) for chunk in [0, chunks): chunk 0 on the caller, the rest on workers.
  void run(int chunks, const std::function<void(int)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      job_chunks_ = chunks;
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    run_chunk(fn, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
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

  void worker_loop(int index) {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(int)>* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = job_;
        if (job == nullptr || index >= job_chunks_) continue;
      }
      run_chunk(*job, index);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
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
  const std::function<void(int)>* job_ = nullptr;
  int job_chunks_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

ThreadPool& pool() {
  // Leaked: worker threads must not be joined during static destruction, while other static
  // destructors may still run kernels.
  static auto* p = new ThreadPool(options().num_threads);
  return *p;
}

}  // namespace

int get_num_threads() {
  return pool().size();
}
void set_num_threads(int n) {
  pool().resize(n);
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
