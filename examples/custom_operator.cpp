// Plugging a user-written associative operator into parascan: no kernel, no loop, just a functor.
//
//  1. Running argmax: the state is (value, index); lift() builds it from two inputs read in step (the
//     values and their positions), project() writes only the index.
//  2. Möbius transforms z -> (p z + q) / (r z + s) compose like 2x2 matrices, so the continued fraction
//     z[t] = 1 / (x[t] + z[t-1]) becomes a scan. Neither operator is commutative: parascan passes
//     (earlier, later) in time order.
//
// Each result is checked against a plain loop; the program exits 1 on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <parascan/parascan.hpp>

using parascan::index_t;

/// Running argmax over (value, index): the later element wins only when strictly larger, so ties keep
/// the earliest index.
struct running_argmax {
  struct value_type {
    float value;
    std::int64_t index;
  };
  PARASCAN_HD value_type identity() const { return {-std::numeric_limits<float>::infinity(), -1}; }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return later.value > earlier.value ? later : earlier;
  }
  PARASCAN_HD value_type lift(float value, std::int64_t index) const { return {value, index}; }
  PARASCAN_HD std::int64_t project(const value_type& s) const { return s.index; }
};

/// Composition of Möbius transforms, as 2x2 matrices [p q; r s]. Applying `earlier` then `later` is the
/// matrix product later * earlier. The matrices are rescaled after each product: a Möbius transform does
/// not change when its matrix is scaled, and the rescaling keeps long products from overflowing.
/// project() applies the composed transform to the starting value z0.
struct mobius {
  struct value_type {
    double p, q, r, s;
  };
  double z0 = 0.0;

  PARASCAN_HD value_type identity() const { return {1, 0, 0, 1}; }
  PARASCAN_HD value_type operator()(const value_type& e, const value_type& l) const {
    value_type m{l.p * e.p + l.q * e.r, l.p * e.q + l.q * e.s, l.r * e.p + l.s * e.r, l.r * e.q + l.s * e.s};
    const double scale = std::fmax(std::fmax(std::fabs(m.p), std::fabs(m.q)), std::fmax(std::fabs(m.r), std::fabs(m.s)));
    return scale > 0 ? value_type{m.p / scale, m.q / scale, m.r / scale, m.s / scale} : m;
  }
  /// Step z -> 1 / (x + z), i.e. [0 1; 1 x].
  PARASCAN_HD value_type lift(double x) const { return {0, 1, 1, x}; }
  PARASCAN_HD double project(const value_type& m) const { return (m.p * z0 + m.q) / (m.r * z0 + m.s); }
};

static bool argmax_example() {
  std::printf("running argmax\n");
  const std::vector<float> values = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 9, 7};
  const index_t n = index_t(values.size());
  std::vector<std::int64_t> positions(values.size()), argmax(values.size());
  for (index_t t = 0; t < n; ++t) positions[t] = t;

  parascan::prefix_scan(parascan::host{}, running_argmax{},
                        parascan::inputs(parascan::single(values.data(), n), parascan::single(positions.data(), n)),
                        parascan::single(argmax.data(), n));

  bool ok = true;
  std::int64_t best = 0;
  std::printf("  t  value  argmax so far\n");
  for (index_t t = 0; t < n; ++t) {
    if (values[t] > values[best]) best = t;
    ok &= argmax[t] == best;
    std::printf("  %2lld  %5.1f  %lld%s\n", (long long)t, values[t], (long long)argmax[t], argmax[t] == best ? "" : "  <- MISMATCH");
  }

  // The same operator on a batch: 64 sequences of 10000 steps, threads over sequences.
  const index_t B = 4, D = 16, T = 10000;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> x(B * D * T);
  std::vector<std::int64_t> pos(B * D * T), out(B * D * T);
  for (auto& v : x) v = normal(rng);
  for (index_t i = 0; i < B * D * T; ++i) pos[i] = i % T;
  const auto xs = parascan::bdt(x.data(), B, D, T);
  parascan::prefix_scan(parascan::host{}, running_argmax{},
                        parascan::inputs(xs, parascan::bdt(pos.data(), B, D, T)), parascan::bdt(out.data(), B, D, T));
  index_t wrong = 0;
  for (index_t s = 0; s < xs.count(); ++s) {
    std::int64_t b = 0;
    for (index_t t = 0; t < T; ++t) {
      if (xs.at(s, t) > xs.at(s, b)) b = t;
      wrong += out[s * T + t] != b;
    }
  }
  std::printf("  batch of %lld sequences x %lld steps: %lld mismatches\n\n", (long long)(B * D), (long long)T,
              (long long)wrong);
  return ok && wrong == 0;
}

static bool mobius_example() {
  std::printf("continued fraction z[t] = 1 / (x[t] + z[t-1]) as Mobius transforms\n");
  // All x = 1: z converges to 1/phi = 0.6180339887... through ratios of Fibonacci numbers.
  const index_t n = 12;
  const std::vector<double> ones(n, 1.0);
  std::vector<double> z(n);
  parascan::prefix_scan(parascan::host{}, mobius{0.0}, parascan::single(ones.data(), n), parascan::single(z.data(), n));
  bool ok = true;
  double loop = 0.0;
  for (index_t t = 0; t < n; ++t) {
    loop = 1.0 / (1.0 + loop);
    ok &= std::fabs(z[t] - loop) <= 1e-12;
    std::printf("  z[%2lld] = %.10f  (loop %.10f)\n", (long long)t, z[t], loop);
  }
  std::printf("  1/phi  = %.10f\n", (std::sqrt(5.0) - 1) / 2);

  // A long random one, split across threads (the three-phase path): the operator's order matters.
  const index_t T = 1 << 20;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<double> x(T), y(T);
  for (auto& v : x) v = u(rng);
  parascan::prefix_scan<parascan::host_policy<4096>>(parascan::host{4}, mobius{0.25}, parascan::single(x.data(), T),
                                                     parascan::single(y.data(), T));
  double worst = 0.0, zl = 0.25;
  for (index_t t = 0; t < T; ++t) {
    zl = 1.0 / (x[t] + zl);
    worst = std::fmax(worst, std::fabs(y[t] - zl) / std::fabs(zl));
  }
  std::printf("  %lld random steps from z0 = 0.25 on 4 threads: max relative error %.2e\n", (long long)T, worst);
  return ok && worst <= 1e-10;
}

int main() {
  const bool ok = argmax_example() & mobius_example();  // both run, whatever the first one says
  std::printf("%s\n", ok ? "OK: every result matches the loop" : "FAILED: results differ from the loop");
  return ok ? 0 : 1;
}
