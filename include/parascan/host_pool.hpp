// The host backend's worker threads: one process-wide pool, created on first use, grown on demand and
// reused by every call (creating threads on every call cost ~50 us, which a stream of small scans pays
// each time). A call queues its workers as tasks, runs worker 0 itself and, while it waits, runs queued
// tasks too (its own or other callers'), so calls from several user threads at once never wait on each
// other. A call made from inside a pool thread (an operator that scans) runs its workers inline: no
// oversubscription, no deadlock. A call whose threads the system will not start (resource limits) throws
// parascan::error before any worker runs, so nothing is written; the threads already started stay.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "error.hpp"

namespace parascan::detail {

class worker_pool {
 public:
  static worker_pool& instance() {
    static worker_pool pool;
    return pool;
  }

  /// Runs body(w) for every w in [0, workers) and returns when all have returned.
  template <class Body>
  void run(unsigned workers, Body& body) {
    if (workers <= 1 || inside_pool()) {
      for (unsigned w = 0; w < workers; ++w) body(w);
      return;
    }
    grow(workers - 1);
    unsigned left = workers - 1;  // guarded by mutex_
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (unsigned w = 1; w < workers; ++w)
        tasks_.push_back([this, &body, &left, w] {
          body(w);
          {
            std::lock_guard<std::mutex> done(mutex_);
            --left;
          }
          // Whoever ran it (a pool thread or another caller helping), the caller may be asleep on done_.
          // (`left` may be gone once the lock is released: only the pool is touched from here.)
          done_.notify_all();
        });
    }
    work_.notify_all();
    std::exception_ptr thrown;  // the queued tasks refer to this frame: wait for them before rethrowing
    try {
      body(0u);
    } catch (...) {
      thrown = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    while (left != 0) {
      if (tasks_.empty()) {  // every task notifies done_ when it is done
        done_.wait(lock, [&] { return left == 0 || !tasks_.empty(); });
        continue;
      }
      std::function<void()> task = std::move(tasks_.front());  // help rather than wait
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
    if (thrown) std::rethrow_exception(thrown);
  }

  /// Starts the threads a later run(workers, ...) takes, or throws parascan::error (host.threads): a call
  /// whose first writes come before its first run() reserves its threads first, so that a refusal leaves
  /// nothing written.
  void reserve(unsigned workers) {
    if (workers > 1 && !inside_pool()) grow(workers - 1);
  }

  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  worker_pool() = default;

  static bool& pool_thread_flag() {
    thread_local bool flag = false;
    return flag;
  }
  static bool inside_pool() { return pool_thread_flag(); }

  /// At least `count` threads; parascan::error where the system refuses one.
  void grow(unsigned count) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto refused = [&](const char* why) {
      fail("host.threads", std::to_string(count + 1) + " worker threads (the caller and " + std::to_string(count) +
                               " pool threads), but the system would start only " + std::to_string(threads_.size()) +
                               " pool threads (" + why + "); ask for fewer");
    };
    try {
      threads_.reserve(count);  // emplace_back below then never reallocates
    } catch (const std::bad_alloc&) {
      refused("out of memory");
    }
    while (threads_.size() < count) {
      try {
        threads_.emplace_back([this] { serve(); });
      } catch (const std::system_error& e) {
        refused(e.what());
      }
    }
  }

  void serve() {
    pool_thread_flag() = true;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace parascan::detail
