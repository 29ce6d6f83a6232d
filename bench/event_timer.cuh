// Timing shared by the CUDA benches: CUDA events around one call, the median of `runs` timed calls after
// `warmup` untimed ones, with before(i) enqueued ahead of timed call i and not timed (an L2 flush).
// Errors go to `check(status, what)`: the bench's own handler (throw and go on, or exit).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

/// An error handler for standalone benches: print and exit.
inline void check_or_exit(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// Two events, destroyed however the timing ends (a handler may throw).
struct event_pair {
  cudaEvent_t start{}, stop{};
  ~event_pair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

/// Reads every 16 bytes of [p, p + 16 * n4): an L2 flush that leaves clean lines, where a memset's leave
/// dirty ones for the timed call to write back. `sink` lies outside that range; it is never written (the
/// test keeps the loads). A template: several benches include this header.
template <class T = float4>
__global__ void read_all_kernel(const T* __restrict__ p, std::size_t n4, float* sink) {
  float acc = 0;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < n4; k += std::size_t(gridDim.x) * blockDim.x)
    acc += p[k].x + p[k].w;
  if (acc == 12345.f) *sink = acc;
}

/// The read flush of a buffer of `bytes` (a multiple of 16) whose last 16 bytes serve as the sink.
inline void read_flush(void* buffer, std::size_t bytes, int blocks) {
  read_all_kernel<<<blocks, 256>>>(static_cast<const float4*>(buffer), bytes / 16 - 1,
                                   reinterpret_cast<float*>(static_cast<char*>(buffer) + bytes - 16));
}

template <class F, class Before, class Check>
double median_event_ms(F&& f, int runs, int warmup, Before&& before, Check&& check) {
  event_pair e;
  cudaEvent_t &start = e.start, &stop = e.stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (int i = 0; i < warmup; ++i) f();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    before(i);
    check(cudaEventRecord(start), "event");
    f();
    check(cudaEventRecord(stop), "event");
    check(cudaEventSynchronize(stop), "timed run");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "event time");
    ms.push_back(t);
  }
  check(cudaGetLastError(), "timed runs");
  std::sort(ms.begin(), ms.end());
  const std::size_t h = ms.size() / 2;
  return ms.size() % 2 ? ms[h] : 0.5 * (ms[h - 1] + ms[h]);
}

}  // namespace bench
