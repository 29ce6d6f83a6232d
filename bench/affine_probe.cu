// The affine recurrence x[t] = W[t] x[t-1] + b[t] alone, as the bench's rows (x only, (16384 / N, 1024)
// sequences of N-vectors, column-major W, its entries uniform and scaled so that products stay bounded),
// for N = 4, 8 and 16: a call alone and calls back to back (medians of 21, event-timed), the copy floor of
// its bytes in the same process (a device-to-device copy reading and writing as many bytes), the host's
// time a call (enqueued, not waited for), and four sequences checked against fp64. For A/B runs of the
// walk's staging (cuda/affine.cuh) built against copies of the headers.
//
// Usage: parascan_affine_probe [B_TIMES_N [T]] (default 16384 1024); PROBE_PAD=p in the environment places
// the sequences T + p elements apart (the bench's are T apart); PROBE_FLUSH=memset flushes the L2 before
// each timed run of the copy and of a call alone as the bench does (a 256 MiB memset, whose dirty lines
// the timed run writes back), PROBE_FLUSH=read by reading 256 MiB (clean lines); unset, nothing.
#include <parascan/cuda.cuh>
#include <parascan/ops/affine_recurrence.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "event_timer.cuh"

using index_t = parascan::index_t;

/// What PROBE_FLUSH asks for before each timed run (see the usage above).
void flush_l2(int) {
  static const char* mode = std::getenv("PROBE_FLUSH");
  static void* buffer = nullptr;
  constexpr std::size_t bytes = std::size_t(256) << 20;
  if (mode == nullptr) return;
  if (buffer == nullptr) cudaMalloc(&buffer, bytes + 16);
  if (std::string(mode) == "memset")
    cudaMemsetAsync(buffer, 1, bytes);
  else
    bench::read_flush(buffer, bytes + 16, 1024);
}

template <int N>
bool probe(index_t BN, index_t T) {
  using M = Eigen::Matrix<float, N, N>;
  using V = Eigen::Matrix<float, N, 1>;
  const index_t B = BN / N;
  // PROBE_PAD: elements between one sequence's end and the next one's start (the batch stride T + pad).
  const index_t P = T + (std::getenv("PROBE_PAD") ? std::atoll(std::getenv("PROBE_PAD")) : 0);
  const std::size_t n = std::size_t(B * P);
  std::vector<M> hW(n);
  std::vector<V> hb(n), hx(n);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  // Scaled so that each product stays bounded: entries of 0.9 / sqrt(N) in magnitude on average.
  for (std::size_t k = 0; k < n; ++k) {
    for (int c = 0; c < N; ++c)
      for (int r = 0; r < N; ++r) hW[k](r, c) = u(g) * 0.9f * std::sqrt(3.0f) / float(N);
    for (int r = 0; r < N; ++r) hb[k](r) = u(g);
  }
  M* W;
  V *b, *x;
  cudaMalloc(&W, n * sizeof(M));
  cudaMalloc(&b, n * sizeof(V));
  cudaMalloc(&x, n * sizeof(V));
  cudaMemcpy(W, hW.data(), n * sizeof(M), cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb.data(), n * sizeof(V), cudaMemcpyHostToDevice);
  const auto call = [&] {
    parascan::affine_recurrence(parascan::cuda{}, parascan::strided<const M>(W, B, 1, P, 0, T, 1),
                                parascan::strided<const V>(b, B, 1, P, 0, T, 1),
                                parascan::strided(x, B, 1, P, 0, T, 1));
  };
  call();
  cudaDeviceSynchronize();
  cudaMemcpy(hx.data(), x, n * sizeof(V), cudaMemcpyDeviceToHost);
  double worst = 0;
  for (index_t s : {index_t(0), B / 3, B / 2 + 1, B - 1}) {
    Eigen::Matrix<double, N, 1> ref = Eigen::Matrix<double, N, 1>::Zero();
    for (index_t t = 0; t < T; ++t) {
      const std::size_t k = std::size_t(s * P + t);
      ref = hW[k].template cast<double>() * ref + hb[k].template cast<double>();
      const double e =
          (hx[k].template cast<double>() - ref).cwiseAbs().maxCoeff() / std::max(1.0, ref.cwiseAbs().maxCoeff());
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  }
  const bool ok = worst <= 1e-5 * std::sqrt(double(N));
  const std::size_t bytes = std::size_t(B * T) * (sizeof(M) + 2 * sizeof(V));  // W and b read, x written
  void *src, *dst;
  cudaMalloc(&src, bytes / 2);
  cudaMalloc(&dst, bytes / 2);
  cudaMemset(src, 0, bytes / 2);
  const auto median_ms = [](auto&& f) { return bench::median_event_ms(f, 21, 2, [](int) {}, bench::check_or_exit); };
  const auto flushed_ms = [](auto&& f) { return bench::median_event_ms(f, 21, 2, flush_l2, bench::check_or_exit); };
  const double copy = flushed_ms([&] { cudaMemcpyAsync(dst, src, bytes / 2, cudaMemcpyDeviceToDevice); });
  const double ms = flushed_ms(call);
  const double back_to_back = median_ms([&] {  // 20 calls between the events: the host's time hidden
    for (int rep = 0; rep < 20; ++rep) call();
  }) / 20;
  // The host's time a call: 100 calls enqueued (the device still busy with the first), the wall clock
  // between the first call's start and the last one's return, before any wait.
  cudaDeviceSynchronize();
  const auto host_start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 100; ++rep) call();
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start).count() / 100;
  cudaDeviceSynchronize();
  // The same walk without its outputs (reduce_scan: the final x of each sequence), against a copy of the
  // bytes it reads: whether writing x every step is what holds the scan.
  V* last;
  cudaMalloc(&last, std::size_t(B) * sizeof(V));
  const double reduce = median_ms([&] {
    parascan::reduce_scan(parascan::cuda{}, parascan::ops::affine_recurrence_for<const M>{},
                          parascan::inputs(parascan::strided<const M>(W, B, 1, P, 0, T, 1),
                                           parascan::strided<const V>(b, B, 1, P, 0, T, 1)),
                          last);
  });
  cudaFree(last);
  std::printf("N = %d, (%lld, %lld): a call alone %.4f ms, %.1f%% of copy (%.4f ms); back to back %.4f ms, %.1f%%; "
              "without x (reduce_scan) %.4f ms, %.1f%% of a copy of its reads; host %.2f us a call; worst relative error "
              "%.2e (%s), %s\n",
              N, (long long)B, (long long)T, ms, 100 * copy / ms, copy, back_to_back, 100 * copy / back_to_back, reduce,
              100 * copy * (sizeof(M) + sizeof(V)) / (sizeof(M) + 2 * sizeof(V)) / reduce, host_us, worst, ok ? "ok" : "FAILED",
              cudaGetErrorString(cudaGetLastError()));
  cudaFree(src);
  cudaFree(dst);
  cudaFree(W);
  cudaFree(b);
  cudaFree(x);
  return ok;
}

int main(int argc, char** argv) {
  const index_t BN = argc > 1 ? std::atoll(argv[1]) : 16384, T = argc > 2 ? std::atoll(argv[2]) : 1024;
  cudaMemPool_t pool;  // as the bench: the default pool keeps its memory between calls
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long keep = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  bool ok = probe<4>(BN, T);
  ok = probe<8>(BN, T) && ok;
  ok = probe<16>(BN, T) && ok;
  return ok ? 0 : 1;
}
