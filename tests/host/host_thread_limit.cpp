// A host call whose worker threads the system will not start throws parascan::error naming
// host.threads, before anything is written (issue: "thread-creation failures become parascan::error").
// The process limits its own address space so that no thread stack (8 MB by default) can be mapped: its
// own executable, so the limit touches no other test; it is lifted again before the checks. Before the fix the call ran the refused workers'
// shares on the calling thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

using parascan::index_t;

TEST_CASE("host: refused worker threads are a parascan::error, with nothing written") {
#if !defined(__linux__)
  MESSAGE("skipped: needs Linux's RLIMIT_AS");
#else
  const index_t B = 8, T = 1 << 14;
  std::vector<float> a(std::size_t(B * T), 0.5f), b(std::size_t(B * T), 1.0f), x(std::size_t(B * T), NAN);
  const auto ga = parascan::bdt<const float>(a.data(), 1, B, T), gb = parascan::bdt<const float>(b.data(), 1, B, T);
  const auto gx = parascan::bdt(x.data(), 1, B, T);
  // host{1} needs no thread: it runs before and after the limit alike.
  parascan::linear_recurrence(parascan::host{1}, ga, gb, gx);
  CHECK(x[1] == doctest::Approx(1.5));
  std::fill(x.begin(), x.end(), NAN);

  // The address space in use now (/proc/self/statm's first field, in pages) plus 1 MB: small
  // allocations still succeed, a thread stack (glibc's default: 8 MB or RLIMIT_STACK) does not.
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  REQUIRE(pages > 0);
  rlimit limit{};
  REQUIRE(getrlimit(RLIMIT_AS, &limit) == 0);
  const rlim_t tight = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(1) << 20);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < tight) {
    MESSAGE("skipped: the address-space limit is already below what this test sets");
    return;
  }
  const rlimit previous = limit;
  limit.rlim_cur = tight;
  REQUIRE(setrlimit(RLIMIT_AS, &limit) == 0);

  std::string message;
  try {
    parascan::linear_recurrence(parascan::host{4}, ga, gb, gx);
  } catch (const parascan::error& e) {
    message = e.what();
  }
  REQUIRE(setrlimit(RLIMIT_AS, &previous) == 0);
  INFO("message: " << message);
  CHECK(message.find("host.threads") != std::string::npos);
  CHECK(message.find("ask for fewer") != std::string::npos);
  index_t written = 0;
  for (float v : x) written += !std::isnan(v);
  CHECK(written == 0);

  // With the limit lifted the same call starts its threads and computes.
  parascan::linear_recurrence(parascan::host{4}, ga, gb, gx);
  CHECK(x[std::size_t(T - 1)] == doctest::Approx(2.0));
  CHECK(x[std::size_t(2 * T + 2)] == doctest::Approx(1.75));
#endif
}
