// A host call whose worker threads the system will not start throws parascan::error naming
// host.threads, before anything is written (issue: "thread-creation failures become parascan::error"),
// also where short sequences come before the first long one that needs the threads. The process limits
// its own address space so that no thread stack can be mapped (its own executable, so the limit touches
// no other test; lifted again before the checks). Before the fix the call ran the refused workers'
// shares on the calling thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define PARASCAN_TEST_RLIMIT 1
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

using parascan::index_t;

namespace {

#if defined(PARASCAN_TEST_RLIMIT)
constexpr std::size_t headroom = std::size_t(1) << 20;  // small allocations still succeed

/// Whether a new thread's stack (glibc's default for this process) is larger than the headroom.
bool stacks_exceed_headroom() {
#if defined(__GLIBC__)
  pthread_attr_t attr;
  std::size_t stack = 0;
  if (pthread_getattr_default_np(&attr) != 0) return false;
  pthread_attr_getstacksize(&attr, &stack);
  pthread_attr_destroy(&attr);
  return stack > 2 * headroom;
#else
  return false;
#endif
}

/// Runs `call` with the address space capped at what is in use plus `headroom`, and returns the message
/// of the parascan::error it threw ("" for none, "other: ..." for another exception). The limit is
/// lifted again whatever happens.
std::string message_under_limit(const std::function<void()>& call) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  REQUIRE(pages > 0);
  rlimit previous{};
  REQUIRE(getrlimit(RLIMIT_AS, &previous) == 0);
  rlimit tight = previous;
  tight.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + rlim_t(headroom);
  REQUIRE((previous.rlim_max == RLIM_INFINITY || previous.rlim_max >= tight.rlim_cur));
  REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
  struct restore {
    const rlimit& to;
    ~restore() { setrlimit(RLIMIT_AS, &to); }
  } lift{previous};
  try {
    call();
  } catch (const parascan::error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
  return "";
}

index_t count_written(const std::vector<float>& x) {
  return index_t(std::count_if(x.begin(), x.end(), [](float v) { return !std::isnan(v); }));
}
#endif

}  // namespace

TEST_CASE("host: refused worker threads are a parascan::error, with nothing written") {
#if !defined(PARASCAN_TEST_RLIMIT)
  MESSAGE("skipped: needs Linux's RLIMIT_AS, without a sanitizer");
#else
  if (!stacks_exceed_headroom()) {
    MESSAGE("skipped: thread stacks here are small enough to fit the test's headroom");
    return;
  }
  const index_t B = 8, T = 1 << 14;
  std::vector<float> a(std::size_t(B * T), 0.5f), b(std::size_t(B * T), 1.0f), x(std::size_t(B * T), NAN);
  const auto ga = parascan::bdt<const float>(a.data(), 1, B, T), gb = parascan::bdt<const float>(b.data(), 1, B, T);
  const auto gx = parascan::bdt(x.data(), 1, B, T);
  // host{1} needs no thread: it runs before and after the limit alike.
  parascan::linear_recurrence(parascan::host{1}, ga, gb, gx);
  CHECK(x[1] == doctest::Approx(1.5));
  std::fill(x.begin(), x.end(), NAN);

  SUBCASE("a batch of as many sequences as threads") {
    const std::string message = message_under_limit([&] { parascan::linear_recurrence(parascan::host{4}, ga, gb, gx); });
    INFO("message: " << message);
    CHECK(message.find("parascan: host.threads") == 0);
    CHECK(message.find("ask for fewer") != std::string::npos);
    CHECK(count_written(x) == 0);
    // With the limit lifted the same call starts its threads and computes.
    parascan::linear_recurrence(parascan::host{4}, ga, gb, gx);
    CHECK(x[std::size_t(T - 1)] == doctest::Approx(2.0));
    CHECK(x[std::size_t(2 * T + 2)] == doctest::Approx(1.75));
  }
  SUBCASE("a short sequence before a long one (the long one alone needs the threads)") {
    // Packed: 10 steps, then the rest; fewer sequences than threads, so the long one is split in time.
    const index_t offsets[3] = {0, 10, B * T};
    std::vector<float> fin(2, NAN);
    parascan::options<float> opts;
    opts.final = fin.data();
    const auto pa = parascan::packed_td<const float>(a.data(), offsets, 2);
    const auto pb = parascan::packed_td<const float>(b.data(), offsets, 2);
    const auto px = parascan::packed_td(x.data(), offsets, 2);
    std::string message = message_under_limit([&] { parascan::linear_recurrence(parascan::host{8}, pa, pb, px, opts); });
    INFO("message: " << message);
    CHECK(message.find("parascan: host.threads") == 0);
    CHECK(count_written(x) == 0);
    CHECK(count_written(fin) == 0);
    // reduce_scan writes each sequence's total as it goes: the same holds.
    message = message_under_limit(
        [&] { parascan::reduce_scan(parascan::host{8}, parascan::ops::sum<float>{}, parascan::inputs(pb), fin.data()); });
    CHECK(message.find("parascan: host.threads") == 0);
    CHECK(count_written(fin) == 0);
  }
#endif
}
