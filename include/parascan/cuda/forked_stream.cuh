// A stream beside a call's own for small independent work (a prefix's first output copied, a scan's
// pointer arrays), which then runs on the multiprocessors a large kernel leaves idle rather than before or
// after it: forked from the call's stream by an event and joined back by another. The streams are pooled
// per device (device_pool.cuh).
#pragma once

#include <cuda_runtime.h>

#include "check.cuh"
#include "device_pool.cuh"

namespace parascan {
namespace detail {

inline device_pool<cudaStream_t>& side_streams() {
  static device_pool<cudaStream_t>* pool = new device_pool<cudaStream_t>;
  return *pool;
}

/// Work beside `main` from the fork on: what get() receives runs after what `main` had been given before
/// the fork and, once joined (join(), or the destructor), before what `main` is given after the join.
/// While `main` is being captured into a graph, get() is `main` itself (a pooled stream would join the
/// capture, which one of them may be in at a time).
class forked_stream {
 public:
  explicit forked_stream(cudaStream_t main) : main_(main), side_(main) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(main, &status) != cudaSuccess) {
      (void)cudaGetLastError();  // (the legacy stream while another captures: stay on `main`)
      return;
    }
    if (status != cudaStreamCaptureStatusNone) return;
    cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
    cuda_check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cuda_check(cudaEventRecord(fork_, main), "cudaEventRecord");
    side_ = side_streams().take(device_, [](int) {
      cudaStream_t s = nullptr;
      cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      return s;
    });
  }
  forked_stream(const forked_stream&) = delete;
  forked_stream& operator=(const forked_stream&) = delete;
  ~forked_stream() {
    try {
      join();
    } catch (...) {  // (a destructor must not throw; the error stays for the stream's next check)
    }
  }

  /// The side stream (its wait for the fork enqueued on first use, so that the caller may give `main`
  /// its next kernel first).
  cudaStream_t get() {
    if (fork_ != nullptr && !waiting_) {
      cuda_check(cudaStreamWaitEvent(side_, fork_, 0), "cudaStreamWaitEvent");
      waiting_ = true;
    }
    return side_;
  }
  /// `main` waits for the side's work; the side stream goes back to the pool.
  void join() {
    if (fork_ == nullptr) return;
    cudaEvent_t joined = nullptr;
    cudaError_t e = cudaSuccess;
    if (waiting_) {
      e = cudaEventCreateWithFlags(&joined, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventRecord(joined, side_);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(main_, joined, 0);
      if (joined != nullptr) (void)cudaEventDestroy(joined);  // (released once it has happened)
    }
    (void)cudaEventDestroy(fork_);
    fork_ = nullptr;
    side_streams().give(device_, side_);
    side_ = main_;
    cuda_check(e, "forked_stream join");
  }

 private:
  cudaStream_t main_, side_;
  int device_ = 0;
  cudaEvent_t fork_ = nullptr;
  bool waiting_ = false;
};

}  // namespace detail
}  // namespace parascan
