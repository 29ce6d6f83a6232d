// Fuzz test of the host backend: random layouts (padded and permuted strides, an offset base, gates
// broadcast with zero strides, packed batches of random lengths), lengths (0 .. 2^17, mostly short),
// options, thread counts and split lengths (the three-phase scan), prefix and reduce, on a
// non-commutative operator (affine maps in fp64) against a sequential fp64 reference. Every element of
// the output view must be written and nothing around it. Bounded in time; the run's seed is printed on
// failure and PARASCAN_TEST_SEED repeats it.
#include "support/backend_host.hpp"
#include "support/harness.hpp"
#include "support/affine_map.hpp"
#include "support/numeric.hpp"

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace {

using ptest::index_t;

struct trial {
  ptest::fast_random g;
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

}  // namespace

TEST_CASE("fuzz: layouts x lengths x options x threads x split lengths, against fp64") {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::seconds(20);
  const ptest::affine_map op;
  int trials = 0;
  for (; trials < 30000 && clock::now() < deadline; ++trials) {
    trial t;
    t.draw();
    const bool reduce = t.g.uniform(0, 1) < 0.2, small_split = t.g.uniform(0, 1) < 0.5;
    const ptest::scan_flags f{!reduce && t.g.uniform(0, 1) < 0.5, t.g.uniform(0, 1) < 0.5, t.g.uniform(0, 1) < 0.5,
                              t.g.uniform(0, 1) < 0.5};
    const unsigned threads = unsigned(t.pick(1, 4));
    const std::string what = "trial " + std::to_string(trials) + ": " + t.describe() + " " + ptest::describe(f) +
                             (reduce ? " reduce" : "") + " threads=" + std::to_string(threads) +
                             (small_split ? " split 64" : "");
    INFO(what);

    std::vector<double> a(t.broadcast_gates ? std::size_t(t.T) + 1 : t.elements()), b(t.elements());
    std::vector<double> x(t.elements(), NAN), init(std::size_t(t.n0 * t.n1)), fin(init.size(), NAN);
    for (auto& v : a) v = t.g.uniform(-0.99, 0.99);
    for (auto& v : b) v = t.g.normal();
    for (auto& v : init) v = t.g.normal();
    const auto av = t.broadcast_gates ? parascan::strided(a.data(), t.n0, t.n1, 0, 0, t.T, 1) : t.view(a.data());
    const auto bv = t.view(b.data()), xv = t.view(x.data());
    parascan::options<double> opts;
    opts.exclusive = f.exclusive, opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.final = f.with_final && !reduce ? fin.data() : nullptr;
    const auto in = parascan::inputs(av, bv);
    const parascan::host exec{threads};
    if (reduce) {
      if (small_split) parascan::reduce_scan<parascan::host_policy<64>>(exec, op, in, fin.data(), opts);
      else parascan::reduce_scan(exec, op, in, fin.data(), opts);
    } else {
      if (small_split) parascan::prefix_scan<parascan::host_policy<64>>(exec, op, in, xv, opts);
      else parascan::prefix_scan(exec, op, in, xv, opts);
    }

    double worst = 0;
    std::vector<char> covered(x.size(), 0);
    const auto distance = [](double got, double ref) { return std::isnan(got) ? INFINITY : std::abs(got - ref) / (1 + std::abs(ref)); };
    for (index_t s = 0; s < t.n0 * t.n1; ++s) {
      const index_t n = bv.length_of(s);
      const double total = ptest::reference_scan(
          n, f.exclusive, f.reverse, f.with_initial ? init[std::size_t(s)] : 0.0,
          [&](double c, index_t step) { return av.at(s, step) * c + bv.at(s, step); },
          [&](index_t step, double c) {
            if (reduce) return;
            worst = std::max(worst, distance(xv.at(s, step), c));
            covered[std::size_t(&xv.at(s, step) - x.data())] = 1;
          });
      if (reduce || f.with_final) worst = std::max(worst, distance(fin[std::size_t(s)], total));
    }
    CHECK(worst <= 1e-10);
    std::size_t stray = 0;  // written outside the output view
    for (std::size_t i = 0; i < x.size(); ++i) stray += !covered[i] && !std::isnan(x[i]);
    CHECK(stray == 0);
    if (worst > 1e-10 || stray != 0) return;  // one failing trial is enough to report
  }
  MESSAGE(trials << " trials");
  CHECK(trials > 50);  // the deadline left room for a meaningful number
}
