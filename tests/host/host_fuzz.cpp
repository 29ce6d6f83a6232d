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
#include "support/fuzz_trial.hpp"

#include <cmath>
#include <string>
#include <vector>

using ptest::index_t;

TEST_CASE("fuzz: layouts x lengths x options x threads x split lengths, against fp64") {
  const ptest::affine_map op;
  const int trials = ptest::run_trials(20, [&](ptest::trial& t, int index) {
    const bool reduce = t.g.uniform(0, 1) < 0.2, small_split = t.g.uniform(0, 1) < 0.5;
    const ptest::scan_flags f = t.draw_flags(reduce);
    const unsigned threads = unsigned(t.pick(1, 4));
    const std::string what = "trial " + std::to_string(index) + ": " + t.describe() + " " + ptest::describe(f) +
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

    const auto [worst, stray] = ptest::affine_errors(t, f, reduce, av, bv, xv, x, init, fin);
    CHECK(worst <= 1e-10);
    CHECK(stray == 0);  // written outside the output view
    return worst <= 1e-10 && stray == 0;
  });
  MESSAGE(trials << " trials");
  CHECK(trials > 50);  // the deadline left room for a meaningful number
}
