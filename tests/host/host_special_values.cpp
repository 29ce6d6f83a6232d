// Infinities and NaN on the host backend do not depend on its thread count. A long sequence split among
// threads combines chunk totals, whose partial gate products underflow to 0 or hold an inf that a
// sequential loop never forms: over 12,616 steps of gates in (0.5, 1) and one gate of inf, host{1} wrote
// inf and host{2} NaN (0 * inf in a chunk's total). Operators with a finite() hook (the linear and affine
// recurrences, sums, products) now walk a chunk step by step, as one thread does, where its carry, its
// total or their combination is not finite: every thread count must write the same non-finite value
// (inf of the same sign, or NaN) where host{1} writes one, and a value within rounding of it elsewhere;
// likewise the final states and reduce_scan's totals. The seed prints on failure (PARASCAN_TEST_SEED
// repeats it).
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>

#include "support/backend_host.hpp"
#include "support/harness.hpp"  // uniform(): the executable's generator, its seed printed on failure

using parascan::index_t;

namespace {

// A split from 1024 steps, so that a few thousand steps reach the three-phase scan on 2..8 threads.
using split_early = parascan::host_policy<1024>;
constexpr float inf = std::numeric_limits<float>::infinity();

using ptest::uniform;

/// got matches ref: both NaN, the same infinity, or finite and within `tolerance` (relative).
template <class T>
bool same_value(T got, T ref, double tolerance) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return got == ref;
  return std::abs(double(got) - double(ref)) <= tolerance * (1.0 + std::abs(double(ref)));
}
template <class T>
bool same_value(std::complex<T> got, std::complex<T> ref, double tolerance) {
  return same_value(got.real(), ref.real(), tolerance) && same_value(got.imag(), ref.imag(), tolerance);
}

/// Scans and reduces `a`, `b` (one sequence, or `count` sequences laid out one after another) with the
/// linear recurrence on 1 thread and on 2..8, forward and reverse, inclusive and exclusive, from the
/// identity and from initial states, and compares every output, final state and total with one thread's.
/// Returns a description of the first mismatch, or "".
template <class T>
std::string compare_thread_counts(const std::vector<T>& a, const std::vector<T>& b, index_t count) {
  const index_t T_len = index_t(a.size()) / count;
  const auto view = [&](auto* p) { return parascan::bdt(p, 1, count, T_len); };
  const double tolerance = 64 * double(std::numeric_limits<decltype(std::abs(T()))>::epsilon()) *
                           std::sqrt(double(T_len));
  std::vector<T> initial(static_cast<std::size_t>(count));
  for (auto& v : initial) v = T(float(uniform(-1.0, 1.0)));
  const struct {
    bool reverse, exclusive, initial;
  } option_sets[] = {{false, false, false}, {true, false, false}, {false, true, true}, {true, true, true}};
  for (const auto& o : option_sets) {
    const bool reverse = o.reverse;
    std::vector<T> y1(a.size()), fin1(static_cast<std::size_t>(count)), red1(static_cast<std::size_t>(count));
    parascan::options<T> opts;
    opts.reverse = reverse;
    opts.exclusive = o.exclusive;
    opts.initial = o.initial ? initial.data() : nullptr;
    opts.final = fin1.data();
    const parascan::ops::linear_recurrence<T> op;
    parascan::prefix_scan<split_early>(parascan::host{1}, op, parascan::inputs(view(a.data()), view(b.data())),
                                       view(y1.data()), opts);
    parascan::options<T> ropts;
    ropts.reverse = reverse;
    ropts.initial = opts.initial;
    parascan::reduce_scan<split_early>(parascan::host{1}, op, parascan::inputs(view(a.data()), view(b.data())),
                                       red1.data(), ropts);
    for (unsigned threads = 2; threads <= 8; ++threads) {
      std::vector<T> y(a.size()), fin(static_cast<std::size_t>(count)), red(static_cast<std::size_t>(count));
      opts.final = fin.data();
      parascan::prefix_scan<split_early>(parascan::host{threads}, op,
                                         parascan::inputs(view(a.data()), view(b.data())), view(y.data()), opts);
      parascan::reduce_scan<split_early>(parascan::host{threads}, op,
                                         parascan::inputs(view(a.data()), view(b.data())), red.data(), ropts);
      const std::string where = std::to_string(threads) + " threads" + (reverse ? ", reverse" : "") +
                                (o.exclusive ? ", exclusive" : "") + (o.initial ? ", initial states" : "");
      for (std::size_t t = 0; t < y.size(); ++t)
        if (!same_value(y[t], y1[t], tolerance)) return where + ": output " + std::to_string(t);
      for (std::size_t s = 0; s < fin.size(); ++s) {
        if (!same_value(fin[s], fin1[s], tolerance)) return where + ": final state " + std::to_string(s);
        if (!same_value(red[s], red1[s], tolerance)) return where + ": reduce_scan " + std::to_string(s);
      }
    }
  }
  return "";
}

}  // namespace

TEST_CASE("linear recurrence: inf and NaN gates and tokens give one thread's result on 2..8 threads") {
  const index_t n = 12616;
  struct special {
    const char* what;
    bool gate;  // else the token
    float value;
  };
  const special cases[] = {{"a gate of inf", true, inf},     {"a gate of -inf", true, -inf},
                           {"a gate of NaN", true, NAN},     {"a token of inf", false, inf},
                           {"a token of -inf", false, -inf}, {"a token of NaN", false, NAN}};
  for (const auto& c : cases)
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
      for (auto& v : a) v = float(uniform(0.5, 1.0));  // products underflow to 0 within a chunk
      for (auto& v : b) v = float(uniform(-1.0, 1.0));
      const auto at = std::size_t(uniform(0.0, double(n)));
      (c.gate ? a : b)[at] = c.value;
      if (trial == 3) a[std::size_t(uniform(0.0, double(n)))] = 0;  // and a gate of 0 somewhere
      INFO(c.what << " at step " << at << ", trial " << trial);
      CHECK(compare_thread_counts(a, b, 1) == "");
    }
}

TEST_CASE("linear recurrence: infinities in fp64, complex64 and a batch of two long sequences") {
  {
    const index_t n = 9001;
    std::vector<double> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    for (auto& v : a) v = uniform(0.01, 0.2);  // underflows to 0 over a few hundred steps
    for (auto& v : b) v = uniform(-1.0, 1.0);
    a[std::size_t(n / 2)] = std::numeric_limits<double>::infinity();
    CHECK(compare_thread_counts(a, b, 1) == "");
  }
  {
    const index_t n = 7000;
    std::vector<std::complex<float>> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    for (auto& v : a) v = std::polar(float(uniform(0.5, 1.0)), float(uniform(-3.0, 3.0)));
    for (auto& v : b) v = {float(uniform(-1.0, 1.0)), float(uniform(-1.0, 1.0))};
    a[std::size_t(n / 3)] = {inf, 0.0f};
    CHECK(compare_thread_counts(a, b, 1) == "");
  }
  {
    const index_t n = 2 * 6000;  // two sequences: each one split from 3 threads on
    std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    for (auto& v : a) v = float(uniform(0.5, 1.0));
    for (auto& v : b) v = float(uniform(-1.0, 1.0));
    a[1000] = inf;
    b[6000 + 4000] = -inf;
    CHECK(compare_thread_counts(a, b, 2) == "");
  }
}

TEST_CASE("cumsum and cumprod that overflow give one thread's result on 2..8 threads") {
  const index_t n = 10000;
  // Sums: +3e38 steps overflow to inf early, -3e38 steps later; one thread stays at inf where chunk
  // totals of inf and -inf would meet as NaN. Products: three factors of 1e30 (inf), then factors in
  // (0.1, 0.5), whose chunk products underflow to 0 (NaN against inf), then factors in (1, 1.5).
  std::vector<float> x(static_cast<std::size_t>(n)), p(static_cast<std::size_t>(n));
  for (index_t t = 0; t < n; ++t) {
    x[std::size_t(t)] = t < n / 8 ? 3e38f : (t > n / 2 ? -3e38f : float(uniform(-1.0, 1.0)));
    p[std::size_t(t)] = t < 3 ? 1e30f : (t < n / 2 ? float(uniform(0.1, 0.5)) : float(uniform(1.0, 1.5)));
  }
  for (const bool reverse : {false, true}) {
    parascan::options<float> opts;
    opts.reverse = reverse;
    const auto view = [&](auto* q) { return parascan::single(q, n); };
    std::vector<float> sum1(static_cast<std::size_t>(n)), prod1(static_cast<std::size_t>(n));
    float total1 = 0, ptotal1 = 0;
    parascan::prefix_scan<split_early>(parascan::host{1}, parascan::ops::sum<float>{}, view(x.data()),
                                       view(sum1.data()), opts);
    parascan::prefix_scan<split_early>(parascan::host{1}, parascan::ops::product<float>{}, view(p.data()),
                                       view(prod1.data()), opts);
    parascan::reduce_scan<split_early>(parascan::host{1}, parascan::ops::sum<float>{}, view(x.data()), &total1,
                                       opts);
    parascan::reduce_scan<split_early>(parascan::host{1}, parascan::ops::product<float>{}, view(p.data()),
                                       &ptotal1, opts);
    for (unsigned threads = 2; threads <= 8; ++threads) {
      const std::string where = std::to_string(threads) + " threads" + (reverse ? ", reverse" : "");
      INFO(where);
      std::vector<float> sum(static_cast<std::size_t>(n)), prod(static_cast<std::size_t>(n));
      float total = 0, ptotal = 0;
      parascan::prefix_scan<split_early>(parascan::host{threads}, parascan::ops::sum<float>{}, view(x.data()),
                                         view(sum.data()), opts);
      parascan::prefix_scan<split_early>(parascan::host{threads}, parascan::ops::product<float>{},
                                         view(p.data()), view(prod.data()), opts);
      parascan::reduce_scan<split_early>(parascan::host{threads}, parascan::ops::sum<float>{}, view(x.data()),
                                         &total, opts);
      parascan::reduce_scan<split_early>(parascan::host{threads}, parascan::ops::product<float>{},
                                         view(p.data()), &ptotal, opts);
      index_t sum_bad = -1, prod_bad = -1;
      for (index_t t = 0; t < n && (sum_bad < 0 || prod_bad < 0); ++t) {
        if (sum_bad < 0 && !same_value(sum[std::size_t(t)], sum1[std::size_t(t)], 1e-3)) sum_bad = t;
        if (prod_bad < 0 && !same_value(prod[std::size_t(t)], prod1[std::size_t(t)], 1e-3)) prod_bad = t;
      }
      CHECK(sum_bad == -1);
      CHECK(prod_bad == -1);
      CHECK(same_value(total, total1, 1e-3));
      CHECK(same_value(ptotal, ptotal1, 1e-3));
    }
  }
}
