// The host backend's persistent worker pool (include/parascan/host_pool.hpp): every worker of every call
// runs exactly once, also when several user threads call at once and when a worker itself calls (nested
// calls run inline), and scans from several threads at once give the right results.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

using parascan::index_t;

TEST_CASE("pool: each worker runs once, from many callers at once, and nested") {
  auto& pool = parascan::detail::worker_pool::instance();
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        const unsigned workers = unsigned(1 + (c + round) % 5);
        std::vector<int> ran(workers, 0);
        auto body = [&](unsigned w) {
          ++ran[w];
          auto inner = [&](unsigned) { total.fetch_add(1); };  // a call from inside a worker
          pool.run(3, inner);
        };
        pool.run(workers, body);
        for (unsigned w = 0; w < workers; ++w) CHECK(ran[w] == 1);
      }
    });
  for (auto& t : callers) t.join();
  long expected = 0;
  for (int c = 0; c < 6; ++c)
    for (int round = 0; round < 50; ++round) expected += 3 * (1 + (c + round) % 5);
  CHECK(total.load() == expected);
}

TEST_CASE("pool: scans from several user threads at once") {
  const index_t B = 4, D = 8, T = 3000, n = B * D * T;
  std::vector<float> a(n), b(n), ref(n);
  for (index_t i = 0; i < n; ++i) a[i] = 0.9f + 0.05f * float(i % 3), b[i] = float(i % 7) - 3.0f;
  parascan::linear_recurrence(parascan::host{1}, parascan::bdt(a.data(), B, D, T), parascan::bdt(b.data(), B, D, T),
                              parascan::bdt(ref.data(), B, D, T));
  std::vector<std::thread> callers;
  std::atomic<int> mismatches{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      std::vector<float> x(n);
      for (int round = 0; round < 10; ++round) {
        parascan::linear_recurrence(parascan::host{unsigned(2 + c)}, parascan::bdt(a.data(), B, D, T),
                                    parascan::bdt(b.data(), B, D, T), parascan::bdt(x.data(), B, D, T));
        for (index_t i = 0; i < n; ++i) mismatches += std::abs(x[i] - ref[i]) > 1e-4f * (1 + std::abs(ref[i]));
      }
    });
  for (auto& t : callers) t.join();
  CHECK(mismatches.load() == 0);
}
