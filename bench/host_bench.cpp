// parascan_bench_host: the host backend on a batched fp32 linear recurrence x[t] = a[t] x[t-1] + b[t].
//
//   (B, D, T) = (8, 64, 16384) contiguous in time   threads over sequences
//   one sequence of 2^26 steps                       the three-phase split across threads
//
// For each shape, in the same run: parascan on every hardware thread and on one thread, a naive
// sequential loop (one thread), and a memcpy spread over the same threads (the bandwidth ceiling).
// Times are medians of several repeats after one warm-up. Effective GB/s counts the bytes a scan must
// move: a and b read, x written (12 bytes per step in fp32); the copy's GB/s counts its bytes read +
// written. "of copy" is parascan's GB/s over the copy's.
//
// Usage: parascan_bench_host [threads] [repeats]   (threads 0 = one per hardware thread)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

namespace {

using parascan::index_t;

// Median wall time of `repeats` runs of f, in seconds, after one untimed warm-up run (page faults,
// caches, thread start-up paths).
double median_seconds(int repeats, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// memcpy split across `threads` threads, as the scan's threads would share memory bandwidth.
void parallel_copy(float* dst, const float* src, std::size_t n, unsigned threads) {
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (unsigned k = 1; k < threads; ++k)
    pool.emplace_back([=] {
      const std::size_t lo = std::min(n, k * chunk), hi = std::min(n, lo + chunk);
      std::memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
    });
  std::memcpy(dst, src, std::min(n, chunk) * sizeof(float));
  for (auto& t : pool) t.join();
}

// The baseline: the recurrence as anyone would first write it, one sequence after the other.
void naive_loop(const parascan::sequences<const float>& a, const parascan::sequences<const float>& b,
                const parascan::sequences<float>& x) {
  for (index_t s = 0; s < x.count(); ++s) {
    const float* pa = a.begin_of(s);
    const float* pb = b.begin_of(s);
    float* px = x.begin_of(s);
    float carry = 0.0f;
    for (index_t t = 0; t < x.length_of(s); ++t) px[t] = carry = pa[t] * carry + pb[t];
  }
}

void print_row(const char* what, double seconds, double bytes, double copy_gbs) {
  const double gbs = bytes / seconds / 1e9;
  std::printf("  %-26s %10.3f ms %9.2f GB/s", what, seconds * 1e3, gbs);
  if (copy_gbs > 0) std::printf(" %7.1f%% of copy", 100.0 * gbs / copy_gbs);
  std::printf("\n");
}

// Benchmarks one shape: `make_view` turns a base pointer into the shape's view.
template <class MakeView>
void bench_shape(const char* name, std::size_t n, MakeView make_view, unsigned threads, int repeats) {
  std::vector<float> a(n), b(n), x(n), x_ref(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> gate(0.9f, 1.0f), token(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) a[i] = gate(rng), b[i] = token(rng);

  const auto va = make_view(a.data()), vb = make_view(b.data());
  const auto vx = make_view(x.data()), vref = make_view(x_ref.data());
  const double bytes = 3.0 * sizeof(float) * double(n);  // a, b read; x written

  std::printf("%s: %zu steps, %.1f MB moved per scan, %u threads\n", name, n, bytes / 1e6, threads);
  const double copy_s = median_seconds(repeats, [&] { parallel_copy(x.data(), a.data(), n, threads); });
  const double copy_gbs = 2.0 * sizeof(float) * double(n) / copy_s / 1e9;  // read + written
  const double lib_s = median_seconds(repeats, [&] { parascan::linear_recurrence(parascan::host{threads}, va, vb, vx); });
  const double lib1_s = median_seconds(repeats, [&] { parascan::linear_recurrence(parascan::host{1}, va, vb, vref); });
  const double naive_s = median_seconds(repeats, [&] { naive_loop(va, vb, vref); });

  // The split path combines in another order: agreement to fp32 rounding, not bit for bit.
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, double(std::abs(x[i] - x_ref[i])) / (1.0 + std::abs(double(x_ref[i]))));

  std::printf("  %-26s %10.3f ms %9.2f GB/s\n", "memcpy (same threads)", copy_s * 1e3, copy_gbs);
  print_row(("parascan host{" + std::to_string(threads) + "}").c_str(), lib_s, bytes, copy_gbs);
  print_row("parascan host{1}", lib1_s, bytes, copy_gbs);
  print_row("naive loop, 1 thread", naive_s, bytes, copy_gbs);
  std::printf("  speed-up over the naive loop: %.2fx; max relative difference to it: %.1e\n\n", naive_s / lib_s, worst);
}

// Per-call cost of small scans (streaming: many calls of a few steps): a (4, 64) cumsum, host{1} and
// host{threads}, averaged over many calls; the threads come from the persistent pool.
void bench_small_calls(unsigned threads) {
  std::vector<float> x(4 * 64, 1.0f), y(x.size());
  const auto in = parascan::bdt(x.data(), 1, 4, 64), out = parascan::bdt(y.data(), 1, 4, 64);
  struct sum {
    using value_type = float;
    float identity() const { return 0.0f; }
    float operator()(float p, float q) const { return p + q; }
  };
  std::printf("small calls: (4, 64) cumsum, microseconds a call (mean of 20000 after 1000)\n");
  for (unsigned t : {1u, threads}) {
    const parascan::host exec{t};
    for (int i = 0; i < 1000; ++i) parascan::prefix_scan(exec, sum{}, in, out);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20000; ++i) parascan::prefix_scan(exec, sum{}, in, out);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20000;
    std::printf("  host{%u}: %.2f us\n", t, us);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  unsigned threads = argc > 1 ? unsigned(std::atoi(argv[1])) : 0;
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::printf("parascan_bench_host: fp32 linear recurrence, median of %d after warm-up\n\n", repeats);
  bench_small_calls(threads);

  const index_t B = 8, D = 64, T = 16384;
  bench_shape("(B, D, T) = (8, 64, 16384)", std::size_t(B * D * T),
              [&](auto* p) { return parascan::bdt(p, B, D, T); }, threads, repeats);

  const index_t n = index_t(1) << 26;
  bench_shape("single sequence, T = 2^26", std::size_t(n), [&](auto* p) { return parascan::single(p, n); }, threads,
              repeats);
  return 0;
}
