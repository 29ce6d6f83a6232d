// Fuzz test of the CUDA backend: the host fuzz's random layouts (support/fuzz_trial.hpp: padded and
// permuted strides, an offset base, zero-stride gates, packed batches of random lengths with host
// offsets), lengths (0 .. 2^17, mostly short), options, prefix and reduce, under explicit policies (a
// warp, a block, sequential threads, and the default), on a non-commutative operator (affine maps in
// fp64) against a sequential fp64 reference. Every element of the output view must be written and
// nothing around it. Bounded in time; the run's seed is printed on failure and PARASCAN_TEST_SEED
// repeats it.
#include "support/backend_cuda.cuh"
#include "support/harness.hpp"
#include "support/affine_map.hpp"
#include "support/numeric.hpp"
#include "support/fuzz_trial.hpp"

#include <cmath>
#include <string>

using ptest::index_t;

namespace {

using parascan::combine_variant;

/// Runs the scan (REDUCE: the reduction) under policy number `p`.
template <bool REDUCE, class... A>
void run_under(int p, const A&... args) {
  const auto go = [&](auto policy) {
    using P = decltype(policy);
    if constexpr (REDUCE) parascan::reduce_scan<P>(ptest::exec(), args...);
    else parascan::prefix_scan<P>(ptest::exec(), args...);
  };
  switch (p) {
    case 0: return go(parascan::use_default_policy{});
    case 1: return go(parascan::cuda_policy<128, 4, combine_variant::warp, 1, 3>{});
    case 2: return go(parascan::cuda_policy<64, 2, combine_variant::block, 1, 2>{});
    default: return go(parascan::cuda_policy<64, 1, combine_variant::sequential>{});
  }
}

}  // namespace

TEST_CASE("fuzz: layouts x lengths x options x policies on the GPU, against fp64") {
  const ptest::affine_map op;
  const int trials = ptest::run_trials(20, [&](ptest::trial& t, int index) {
    const bool reduce = t.g.uniform(0, 1) < 0.2;
    const ptest::scan_flags f = t.draw_flags(reduce);
    const int policy = int(t.pick(0, 3));
    INFO("trial " << index << ": " << t.describe() << " " << ptest::describe(f) << (reduce ? " reduce" : "")
                  << " policy " << policy);

    ptest::buffer<double> a(t.broadcast_gates ? std::size_t(t.T) + 1 : t.elements()), b(t.elements());
    ptest::buffer<double> x(t.elements()), init(std::size_t(t.n0 * t.n1)), fin(init.size());
    ptest::fill(a, [&] { return t.g.uniform(-0.99, 0.99); });
    ptest::fill(b, [&] { return t.g.normal(); });
    ptest::fill(init, [&] { return t.g.normal(); });
    ptest::fill(x, [] { return double(NAN); });
    ptest::fill(fin, [] { return double(NAN); });
    const auto gates = [&](double* p) {
      return t.broadcast_gates ? parascan::strided(p, t.n0, t.n1, 0, 0, t.T, 1) : t.view(p);
    };
    parascan::options<double> opts;
    opts.exclusive = f.exclusive, opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.final = f.with_final && !reduce ? fin.data() : nullptr;
    const auto in = parascan::inputs(gates(a.data()), t.view(b.data()));
    if (reduce) run_under<true>(policy, op, in, fin.data(), opts);
    else run_under<false>(policy, op, in, t.view(x.data()), opts);
    x.download();
    fin.download();

    // The reference reads the host mirrors through the same views.
    const auto av = gates(a.host.data()), bv = t.view(b.host.data()), xv = t.view(x.host.data());
    const auto [worst, stray] = ptest::affine_errors(t, f, reduce, av, bv, xv, x.host, init.host, fin.host);
    CHECK(worst <= 1e-10);
    CHECK(stray == 0);  // written outside the output view
    return worst <= 1e-10 && stray == 0;
  });
  MESSAGE(trials << " trials");
  CHECK(trials > 0);  // under compute-sanitizer the 20 s pass in a few dozen trials: no minimum beyond one
}
