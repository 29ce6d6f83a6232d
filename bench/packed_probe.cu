// A packed (total, D) batch alone through parascan::linear_recurrence (fp32): by default the bench's skewed
// batch (4 sequences of 2^18 rows among 4000 of 1..64, D = 64), or the one PROBE_LENGTHS names. Prints a
// call timed as the bench does (a 256 MiB memset before each; % of a 2 GiB copy timed the same way), a
// call alone (median of 21, an event recorded before it), calls back to back, the copy floor of its bytes
// (a device-to-device copy of the same bytes read and written), and results against a double-precision
// loop. PARASCAN_SINGLE_PASS=0 in the environment runs reduce-then-scan instead of the skewed batch's single
// pass (channel_block_lookback.cuh), for an A/B in separate processes.
//
// Usage: parascan_packed_probe [SHORT LONG LONG_ROWS [--check | --host]]: SHORT sequences of 1..64 rows
// with LONG of LONG_ROWS rows among them; --check: one call and every channel checked, no timing (small
// enough for compute-sanitizer); --host: the host's time for a call and for its pieces (checks, tile
// tables, copies, allocations, a launch), the device idle before each. Exit status 1 where a result is off.
// Environment: PROBE_D (channels, 64), PROBE_LENGTHS=realistic (the bench's other packed batch: lengths
// 1..8192, 2^26 / D rows) or uniform:COUNT:ROWS (the arguments' batch is then not used), PROBE_STRIDE
// (elements from a row to the next, D by default: the same bytes moved from rows spread wider).
#include <parascan/cuda.cuh>
#include <parascan/ops/linear_recurrence.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "event_timer.cuh"
#include "packed_batches.hpp"

using index_t = parascan::index_t;

__global__ void bench_empty() {}

/// The host's time for f() with the device idle before it, until f returns: the median of `runs`, in us.
template <class F>
double median_host_us(F&& f, int runs) {
  std::vector<double> us;
  for (int rep = 0; rep < runs; ++rep) {
    cudaDeviceSynchronize();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + runs / 2, us.end());
  return us[std::size_t(runs / 2)];
}

int main(int argc, char** argv) {
  const index_t D = std::getenv("PROBE_D") ? std::atoll(std::getenv("PROBE_D")) : 64;  // PROBE_D: channels
  if (D < 1) {
    std::fprintf(stderr, "PROBE_D: at least 1 channel\n");
    return 2;
  }
  const index_t short_count = argc > 3 ? std::atoll(argv[1]) : 4000, long_count = argc > 3 ? std::atoll(argv[2]) : 4,
                long_rows = argc > 3 ? std::atoll(argv[3]) : index_t(1) << 18;
  const bool check_only = argc > 4 && std::strcmp(argv[4], "--check") == 0;
  // PROBE_LENGTHS: "realistic" (the bench's other packed batch: lengths 1..8192, 2^26 / D rows) or
  // "uniform:COUNT:ROWS" (COUNT sequences of ROWS rows); else the skewed batch of the arguments.
  const std::string lengths = std::getenv("PROBE_LENGTHS") ? std::getenv("PROBE_LENGTHS") : "";
  std::vector<index_t> off = {0};
  if (lengths == "realistic") {
    off = bench::realistic_offsets((index_t(1) << 26) / D);
  } else if (lengths.rfind("uniform:", 0) == 0) {
    long long count = 0, rows = 0;
    int used = 0;
    if (std::sscanf(lengths.c_str(), "uniform:%lld:%lld%n", &count, &rows, &used) != 2 ||
        used != int(lengths.size()) || count < 1 || rows < 1) {
      std::fprintf(stderr, "PROBE_LENGTHS=uniform:COUNT:ROWS needs COUNT and ROWS of at least 1, not %s\n",
                   lengths.c_str());
      return 2;
    }
    for (long long i = 0; i < count; ++i) off.push_back(off.back() + rows);
  } else if (!lengths.empty()) {
    std::fprintf(stderr, "PROBE_LENGTHS: realistic or uniform:COUNT:ROWS, not %s\n", lengths.c_str());
    return 2;
  } else {
    off = bench::skewed_offsets(short_count, long_count, long_rows);
  }
  const index_t N = index_t(off.size()) - 1, total = off.back(), n = total * D;
  std::vector<float> ha(n), hb(n), hx(n);
  std::mt19937 r(1);
  std::uniform_real_distribution<float> ua(0.9f, 1.0f), ub(-1, 1);
  for (index_t i = 0; i < n; ++i) ha[i] = ua(r), hb[i] = ub(r);
  float *a, *b, *x;
  // PROBE_STRIDE: elements from a row to the next (D by default): the same bytes moved, rows spread wider.
  const index_t stride = std::getenv("PROBE_STRIDE") ? std::atoll(std::getenv("PROBE_STRIDE")) : D;
  if (stride < D) {
    std::fprintf(stderr, "PROBE_STRIDE: at least D = %lld\n", (long long)D);
    return 2;
  }
  const std::size_t pitch = std::size_t(stride) * 4, row_bytes = std::size_t(D) * 4;
  cudaMalloc(&a, total * pitch);
  cudaMalloc(&b, total * pitch);
  cudaMalloc(&x, total * pitch);
  cudaMemcpy2D(a, pitch, ha.data(), row_bytes, row_bytes, total, cudaMemcpyHostToDevice);
  cudaMemcpy2D(b, pitch, hb.data(), row_bytes, row_bytes, total, cudaMemcpyHostToDevice);
  const auto view = [&](auto* data) { return parascan::packed(data, off.data(), N, D, 1, stride); };
  parascan::cuda exec{};
  // As the bench (and a framework's caching allocator): the default pool keeps its memory between calls.
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long keep = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  const auto call = [&] {
    parascan::linear_recurrence(exec, view(static_cast<const float*>(a)), view(static_cast<const float*>(b)),
                                view(x));
  };
  call();
  cudaDeviceSynchronize();
  cudaMemcpy2D(hx.data(), row_bytes, x, pitch, row_bytes, total, cudaMemcpyDeviceToHost);
  double worst = 0;  // every channel with --check, else one a sequence
  for (index_t q = 0; q < N; ++q)
    for (index_t c = check_only ? 0 : q % D; c < (check_only ? D : q % D + 1); ++c) {
      double s = 0;
      for (index_t t = off[q]; t < off[q + 1]; ++t) {
        s = ha[t * D + c] * s + hb[t * D + c];
        const double e = std::abs(hx[t * D + c] - s) / (1 + std::abs(s));
        worst = std::isnan(e) ? INFINITY : std::max(worst, e);
      }
    }
  index_t longest = 0;
  for (index_t q = 0; q < N; ++q) longest = std::max(longest, off[q + 1] - off[q]);
  const bool ok = worst <= 1e-6 * (8 + 2 * std::sqrt(double(longest)));
  std::printf("%lld sequences, %lld rows, D = %lld: worst relative error %.2e (%s), %s\n", (long long)N,
              (long long)total, (long long)D, worst, ok ? "ok" : "FAILED", cudaGetErrorString(cudaGetLastError()));
  if (check_only) return ok ? 0 : 1;
  if (argc > 4 && std::strcmp(argv[4], "--host") == 0) {  // the pieces of a call's host time, device idle
    const auto host_us = [](auto&& f) { return median_host_us(f, 41); };
    std::vector<unsigned char> table(170 << 10), small(32 << 10);
    void* dev = nullptr;
    cudaMalloc(&dev, 170 << 10);
    const auto a_view = view(static_cast<const float*>(a));
    const auto x_view = view(x);
    auto& alloc = parascan::detail::default_temp_allocator();
    const index_t groups = (N * D + 31) / 32;
    // As dispatch asks: the fp32 recurrence's block tiles (512 rows, blocks of 8 warps).
    const index_t tile_rows =
        parascan::engine::channel_block_layout<parascan::engine::channel_block_warps,
                                               parascan::engine::channel_block_stages,
                                               parascan::ops::linear_recurrence<float>,
                                               parascan::input_pack<float, float>>::tile_rows;
    const auto long_groups = [&](index_t threshold, auto&& visit) {
      parascan::groups_longer_than(x_view, 32, threshold, visit);
    };
    std::printf("host us, device idle: whole call %.1f; cudaPointerGetAttributes host / device pointer %.2f / %.2f; "
                "temp buffer (pool) %.2f; pageable copy 32 / 170 KiB %.1f / %.1f; staged offsets %.1f; argument "
                "checks %.1f; launch of an empty kernel %.1f; tile tables kept / fresh %.1f / %.1f\n",
                host_us(call), host_us([&] { parascan::detail::place_of(off.data()); }),
                host_us([&] { parascan::detail::place_of(a); }),
                host_us([&] { parascan::detail::temp_buffer t(alloc, nullptr, 170 << 10); }),
                host_us([&] { cudaMemcpyAsync(dev, small.data(), small.size(), cudaMemcpyHostToDevice); }),
                host_us([&] { cudaMemcpyAsync(dev, table.data(), table.size(), cudaMemcpyHostToDevice); }),
                host_us([&] {
                  parascan::detail::staged_offsets staged(alloc, nullptr);
                  staged.stage(a_view, "a");
                }),
                host_us([&] {
                  parascan::detail::check_scan_arguments(
                      parascan::inputs(a_view, a_view), parascan::as_outputs(x_view),
                      parascan::detail::span_of(static_cast<const float*>(nullptr), 0),
                      parascan::detail::span_of(static_cast<float*>(nullptr), 0), "options.final");
                }),
                host_us([&] { bench_empty<<<1, 32>>>(); }), host_us([&] {
                  static parascan::channel_block_tables kept;
                  static std::vector<unsigned char> bytes;
                  kept.build(groups, tile_rows, 8, long_groups);
                  kept.bytes_into(bytes);
                }),
                host_us([&] { (void)parascan::channel_block_tables::of(groups, tile_rows, 8, long_groups).bytes(); }));
    cudaFree(dev);
    return 0;
  }

  void *copy_src, *copy_dst;
  cudaMalloc(&copy_src, n * 6);
  cudaMalloc(&copy_dst, n * 6);
  cudaMemset(copy_src, 0, n * 6);
  const auto median_ms = [](auto&& f) {
    return bench::median_event_ms(f, 21, 0, [](int) {}, bench::check_or_exit);
  };
  const double copy = median_ms([&] { cudaMemcpyAsync(copy_dst, copy_src, n * 6, cudaMemcpyDeviceToDevice); });
  const double alone = median_ms(call);
  // As the bench: a 256 MiB memset before each timed call (dirty lines for the call to write back), and
  // the copy floor of 2 GiB copies under the same flush.
  void* flush = nullptr;
  const std::size_t flush_bytes = std::size_t(256) << 20, big = std::size_t(1) << 31;
  void *big_src = nullptr, *big_dst = nullptr;
  cudaMalloc(&flush, flush_bytes);
  cudaMalloc(&big_src, big);
  cudaMalloc(&big_dst, big);
  const auto flushed_ms = [&](auto&& f) {
    return bench::median_event_ms(f, 21, 2, [&](int i) { cudaMemsetAsync(flush, i & 0xff, flush_bytes); },
                                  bench::check_or_exit);
  };
  const double big_copy = flushed_ms([&] { cudaMemcpyAsync(big_dst, big_src, big, cudaMemcpyDeviceToDevice); });
  const double flushed = flushed_ms(call);
  const double rate = 2.0 * double(big) / big_copy / 1e6;  // GB/s, read + write
  std::printf("as the bench (256 MiB memset before each): 2 GiB copy %.1f GB/s; a call %.3f ms, %.1f%% of copy "
              "(%.0f MB moved)\n",
              rate, flushed, 100.0 * (double(n) * 12 / rate / 1e6) / flushed, double(n) * 12 / 1e6);
  cudaFree(flush);
  cudaFree(big_src);
  cudaFree(big_dst);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  // Back to back: the host's time a call (checks, tables, copies) against the device's.
  cudaDeviceSynchronize();
  const auto h0 = std::chrono::steady_clock::now();
  cudaEventRecord(e0);
  for (int rep = 0; rep < 20; ++rep) call();
  const auto h1 = std::chrono::steady_clock::now();
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float back_to_back;
  cudaEventElapsedTime(&back_to_back, e0, e1);
  back_to_back /= 20;
  const double host_idle_ms = median_host_us(call, 21) / 1000;
  std::printf("copy floor %.3f ms; a call alone %.3f ms (%.1f%% of copy); back to back %.3f ms a call (%.1f%%), "
              "the host %.3f ms a call to return (%.3f ms with the device idle); %s\n",
              copy, alone, 100.0 * copy / alone, back_to_back, 100.0 * copy / back_to_back,
              std::chrono::duration<double, std::milli>(h1 - h0).count() / 20, host_idle_ms,
              cudaGetErrorString(cudaGetLastError()));
  return ok ? 0 : 1;
}
