// The skewed packed batch of the bench (4 sequences of 2^18 rows among 4000 of 1..64, D = 64, fp32 linear
// recurrence) through parascan::linear_recurrence: a call alone (median of 21, an event recorded before
// it), calls back to back, the copy floor of its bytes, and one channel of every sequence against a
// double-precision loop. PARASCAN_SINGLE_PASS=0 in the environment runs reduce-then-scan instead of the
// single pass (channel_block_lookback.cuh), for an A/B in separate processes.
#include <parascan/cuda.cuh>
#include <parascan/ops/linear_recurrence.hpp>
#include <cstdio>
#include <random>
#include <vector>
#include <algorithm>
#include <chrono>
using index_t = parascan::index_t;
int main(int argc, char** argv) {
  const index_t D = 64;
  std::mt19937_64 g(12);
  std::uniform_int_distribution<index_t> len(1, 64);
  std::vector<index_t> off = {0};
  for (index_t i = 0; i < 4000; ++i) {
    if (i % 1000 == 500) off.push_back(off.back() + (1 << 18));
    off.push_back(off.back() + len(g));
  }
  const index_t N = index_t(off.size()) - 1, total = off.back(), n = total * D;
  std::vector<float> ha(n), hb(n), hx(n);
  std::mt19937 r(1);
  std::uniform_real_distribution<float> ua(0.9f, 1.0f), ub(-1, 1);
  for (index_t i = 0; i < n; ++i) ha[i] = ua(r), hb[i] = ub(r);
  float *a, *b, *x;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&x, n * 4);
  cudaMemcpy(a, ha.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), n * 4, cudaMemcpyHostToDevice);
  parascan::cuda exec{};
  // As the bench (and a framework's caching allocator): the default pool keeps its memory between calls.
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long keep = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  void *copy_src, *copy_dst;
  cudaMalloc(&copy_src, n * 6);
  cudaMalloc(&copy_dst, n * 6);
  cudaMemset(copy_src, 0, n * 6);
  auto call = [&] {
    parascan::linear_recurrence(exec, parascan::packed_td<const float>(a, off.data(), N, D),
                                parascan::packed_td<const float>(b, off.data(), N, D),
                                parascan::packed_td(x, off.data(), N, D));
  };
  call();
  cudaDeviceSynchronize();
  cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (index_t q = 0; q < N; q += 1) {
    const index_t c = q % D;
    double s = 0;
    for (index_t t = off[q]; t < off[q + 1]; ++t) {
      s = ha[t * D + c] * s + hb[t * D + c];
      worst = std::max(worst, std::abs(hx[t * D + c] - s) / (1 + std::abs(s)));
    }
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  const auto time = [&](auto&& f) {
    std::vector<float> t;
    for (int rep = 0; rep < 21; ++rep) {
      cudaEventRecord(e0);
      f();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  // The copy floor: a device-to-device copy moving the same bytes (n * 6 read, n * 6 written).
  const float copy = time([&] { cudaMemcpyAsync(copy_dst, copy_src, n * 6, cudaMemcpyDeviceToDevice); });
  const float best = time(call);
  {  // back to back: the host's time a call (checks, tables, copies) against the device's
    cudaDeviceSynchronize();
    const auto h0 = std::chrono::steady_clock::now();
    cudaEventRecord(e0);
    for (int rep = 0; rep < 20; ++rep) call();
    const auto h1 = std::chrono::steady_clock::now();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    const auto h2 = std::chrono::steady_clock::now();
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    std::printf("back to back: host %.3f ms a call to return, %.3f ms a call in all, events %.3f ms a call; ",
                std::chrono::duration<double, std::milli>(h1 - h0).count() / 20,
                std::chrono::duration<double, std::milli>(h2 - h0).count() / 20, ms / 20);
  }
  std::printf("copy floor %.3f ms; ", copy);
  std::printf("%.1f%% of copy; ", 100.0 * copy / best);
  const double bytes = double(n) * 12;
  std::printf("skewed packed: %lld rows, %.3f ms median of 21, %.0f GB/s, worst rel err %.2e, error %s\n",
              (long long)total, best, bytes / best / 1e6, worst, cudaGetErrorString(cudaGetLastError()));
}
