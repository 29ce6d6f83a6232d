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

struct option_set {
  bool reverse, exclusive, initial;
};
constexpr option_set every_option[] = {
    {false, false, false}, {true, false, false}, {false, true, true}, {true, true, true}};
constexpr option_set both_directions[] = {{false, false, false}, {true, false, false}};

/// Scans and reduces with `op` on 1 thread and on 2..8, under each option set, and compares every output,
/// final state and total with one thread's: `count` sequences of n / count steps laid out one after
/// another, `inputs_of(view)` the inputs (view(p): the (1, count, T) view of a buffer). Returns a
/// description of the first mismatch, or "".
template <class Op, class InputsOf, std::size_t Sets>
std::string compare_thread_counts(const Op& op, InputsOf&& inputs_of, std::size_t n, index_t count,
                                  double tolerance, const option_set (&sets)[Sets]) {
  using Y = parascan::output_t<Op>;
  const index_t T_len = index_t(n) / count;
  const auto view = [&](auto* p) { return parascan::bdt(p, 1, count, T_len); };
  const auto in = inputs_of(view);
  std::vector<Y> initial(static_cast<std::size_t>(count));
  for (auto& v : initial) v = Y(float(uniform(-1.0, 1.0)));
  for (const auto& o : sets) {
    std::vector<Y> y1(n), fin1(static_cast<std::size_t>(count)), red1(static_cast<std::size_t>(count));
    parascan::options<Y> opts;
    opts.reverse = o.reverse;
    opts.exclusive = o.exclusive;
    opts.initial = o.initial ? initial.data() : nullptr;
    opts.final = fin1.data();
    parascan::prefix_scan<split_early>(parascan::host{1}, op, in, view(y1.data()), opts);
    parascan::options<Y> ropts;
    ropts.reverse = o.reverse;
    ropts.initial = opts.initial;
    parascan::reduce_scan<split_early>(parascan::host{1}, op, in, red1.data(), ropts);
    for (unsigned threads = 2; threads <= 8; ++threads) {
      std::vector<Y> y(n), fin(static_cast<std::size_t>(count)), red(static_cast<std::size_t>(count));
      opts.final = fin.data();
      parascan::prefix_scan<split_early>(parascan::host{threads}, op, in, view(y.data()), opts);
      parascan::reduce_scan<split_early>(parascan::host{threads}, op, in, red.data(), ropts);
      const std::string where = std::to_string(threads) + " threads" + (o.reverse ? ", reverse" : "") +
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

/// The linear recurrence over gates `a` and tokens `b`, every option set, within rounding of T steps.
template <class T>
std::string compare_thread_counts(const std::vector<T>& a, const std::vector<T>& b, index_t count) {
  const double tolerance = 64 * double(std::numeric_limits<decltype(std::abs(T()))>::epsilon()) *
                           std::sqrt(double(index_t(a.size()) / count));
  return compare_thread_counts(
      parascan::ops::linear_recurrence<T>{},
      [&](const auto& view) { return parascan::inputs(view(a.data()), view(b.data())); }, a.size(), count,
      tolerance, every_option);
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
  const auto of = [](const std::vector<float>& v) { return [&v](const auto& view) { return view(v.data()); }; };
  CHECK(compare_thread_counts(parascan::ops::sum<float>{}, of(x), x.size(), 1, 1e-3, both_directions) == "");
  CHECK(compare_thread_counts(parascan::ops::product<float>{}, of(p), p.size(), 1, 1e-3, both_directions) == "");
}
