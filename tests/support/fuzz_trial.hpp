// The random configuration of one fuzz trial (tests/host/host_fuzz.cpp, tests/cuda/test_fuzz.cu): a
// layout (padded and permuted strides, an offset base, gates broadcast with zero strides, packed batches
// of random lengths), its extents and a length from 0 to 2^17, mostly short; its options; and the check
// of its results against the fp64 reference of the affine recurrence. Include after the backend header
// and harness.hpp.
#pragma once

#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <parascan/layout.hpp>

#include "numeric.hpp"

namespace ptest {

struct trial {
  using index_t = parascan::index_t;

  fast_random g;
  int kind = 0;  // 0: time contiguous, 1: channels innermost, 2: packed_td, 3: packed_dt
  index_t n0 = 1, n1 = 1, T = 0, pad = 0, base = 0;
  bool broadcast_gates = false;
  std::vector<index_t> offsets;

  index_t pick(index_t lo, index_t hi) { return lo + index_t(g.uniform(0, double(hi - lo + 1))); }

  void draw() {
    kind = int(pick(0, 3));
    n0 = pick(1, 4), n1 = pick(1, 6), pad = pick(0, 2), base = pick(0, 3);
    const double r = g.uniform(0, 1);
    T = r < 0.7 ? pick(0, 40) : r < 0.95 ? pick(0, 5000) : pick(0, index_t(1) << 17);
    if (T > 5000) n0 = n1 = 1;
    broadcast_gates = kind < 2 && g.uniform(0, 1) < 0.2;
    offsets.assign(1, 0);
    if (kind >= 2)
      for (index_t i = 0; i < n0; ++i) offsets.push_back(offsets.back() + pick(0, T));
  }
  /// Options: exclusive (never for a reduction), reverse, an initial state, the final state.
  scan_flags draw_flags(bool reduce) {
    const bool exclusive = g.uniform(0, 1) < 0.5, reverse = g.uniform(0, 1) < 0.5;
    const bool with_initial = g.uniform(0, 1) < 0.5, with_final = g.uniform(0, 1) < 0.5;
    return {!reduce && exclusive, reverse, with_initial, with_final};
  }
  std::string describe() const {
    return "kind=" + std::to_string(kind) + " n0=" + std::to_string(n0) + " n1=" + std::to_string(n1) +
           " T=" + std::to_string(T) + " pad=" + std::to_string(pad) + " base=" + std::to_string(base) +
           (broadcast_gates ? " broadcast gates" : "");
  }
  /// Elements a buffer needs, and the view over it.
  std::size_t elements() const {
    const index_t total = kind >= 2 ? offsets.back() : T;
    if (kind == 0) return std::size_t(base + n0 * (n1 * (T + pad) + pad) + 1);
    if (kind == 1) return std::size_t(base + n0 * (T * (n1 + pad) + pad) + 1);
    return std::size_t(base + total * n1 + 1);
  }
  template <class V>
  parascan::sequences<V> view(V* p) const {
    const index_t total = offsets.back();
    switch (kind) {
      case 0: return parascan::strided(p + base, n0, n1, n1 * (T + pad) + pad, T + pad, T, 1);
      case 1: return parascan::strided(p + base, n0, n1, T * (n1 + pad) + pad, 1, T, n1 + pad);
      case 2: return parascan::packed_td(p + base, offsets.data(), n0, n1);
      default: return parascan::packed_dt(p + base, offsets.data(), n0, n1, total);
    }
  }
};


/// Runs body(t, i) on fresh trials t (drawn) until `seconds` have passed, at most 30000 of them; the
/// body returns false to stop (one failing trial is enough to report). Returns how many ran.
template <class Body>
int run_trials(int seconds, Body&& body) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int i = 0;
  while (i < 30000 && std::chrono::steady_clock::now() < deadline) {
    trial t;
    t.draw();
    if (!body(t, i++)) break;
  }
  return i;
}

/// A trial's results against the sequential fp64 reference of x[t] = a[t] x[t-1] + b[t] (host views
/// over host copies): the worst |got - ref| / (1 + |ref|) over the outputs (none for a reduction) and
/// the final states or totals, and how many elements of `x` outside the output view were written (x
/// held NaN before the run).
inline std::pair<double, std::size_t> affine_errors(const trial& t, const scan_flags& f, bool reduce,
                                                    const parascan::sequences<double>& av,
                                                    const parascan::sequences<double>& bv,
                                                    const parascan::sequences<double>& xv, const std::vector<double>& x,
                                                    const std::vector<double>& init, const std::vector<double>& fin) {
  double worst = 0;
  std::vector<char> covered(x.size(), 0);
  const auto distance = [](double got, double ref) {
    return std::isnan(got) ? INFINITY : std::abs(got - ref) / (1 + std::abs(ref));
  };
  for (parascan::index_t s = 0; s < t.n0 * t.n1; ++s) {
    const parascan::index_t n = bv.length_of(s);
    const double total = reference_scan(
        n, f.exclusive, f.reverse, f.with_initial ? init[std::size_t(s)] : 0.0,
        [&](double c, parascan::index_t step) { return av.at(s, step) * c + bv.at(s, step); },
        [&](parascan::index_t step, double c) {
          if (reduce) return;
          worst = std::max(worst, distance(xv.at(s, step), c));
          covered[std::size_t(&xv.at(s, step) - x.data())] = 1;
        });
    if (reduce || f.with_final) worst = std::max(worst, distance(fin[std::size_t(s)], total));
  }
  std::size_t stray = 0;
  for (std::size_t i = 0; i < x.size(); ++i) stray += !covered[i] && !std::isnan(x[i]);
  return {worst, stray};
}

}  // namespace ptest
