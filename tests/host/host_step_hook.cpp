// The optional sequential step hook (operator_traits.hpp): an operator's step(carry, x) may leave the part
// of the state that project() does not show stale, so the host backend may call it only where a carry is
// projected or stepped further, never where it is combined with another state. The operator below marks
// every state that step() produced and counts each combine that receives one: on every strategy
// (sequential, threads over sequences, the three-phase split), every option and both entry points the
// count must stay zero and every value must match the reference.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <vector>

#include <parascan/parascan.hpp>

using parascan::index_t;

namespace {

std::atomic<long> stepped_states_combined{0};
std::atomic<long> steps_taken{0};

// x[t] = a[t] x[t-1] + b[t]; step() skips the gate product and poisons it.
struct affine_with_step {
  struct value_type {
    double a, b;
    bool stepped;
  };
  value_type identity() const { return {1.0, 0.0, false}; }
  value_type operator()(const value_type& e, const value_type& l) const {
    if (e.stepped || l.stepped) ++stepped_states_combined;
    return {e.a * l.a, l.a * e.b + l.b, false};
  }
  value_type step(const value_type& carry, const value_type& x) const {
    ++steps_taken;
    return {std::nan(""), x.a * carry.b + x.b, true};
  }
  value_type lift(double a, double b) const { return {a, b, false}; }
  double project(const value_type& s) const { return s.b; }
  value_type seed(double x) const { return {1.0, x, false}; }
};
static_assert(parascan::detail::has_step<affine_with_step, affine_with_step::value_type>::value);

template <class Policy>
void check(index_t sequences, index_t T, unsigned threads) {
  const index_t n = sequences * T;
  std::vector<double> a(n), b(n), x(n), init(sequences), fin(sequences), total(sequences);
  for (index_t i = 0; i < n; ++i) a[i] = 0.5 + 0.49 * std::sin(double(i)), b[i] = std::cos(0.7 * double(i));
  for (index_t s = 0; s < sequences; ++s) init[s] = 0.25 * double(s + 1);
  const auto in = parascan::inputs(parascan::bdt(a.data(), 1, sequences, T), parascan::bdt(b.data(), 1, sequences, T));
  for (int m = 0; m < 8; ++m) {
    const bool exclusive = m & 1, reverse = m & 2, with_initial = m & 4;
    INFO("sequences=" << sequences << " T=" << T << " threads=" << threads << " exclusive=" << exclusive
                      << " reverse=" << reverse << " initial=" << with_initial);
    parascan::options<double> opts;
    opts.exclusive = exclusive;
    opts.reverse = reverse;
    opts.initial = with_initial ? init.data() : nullptr;
    opts.final = fin.data();
    stepped_states_combined = 0;
    steps_taken = 0;
    parascan::prefix_scan<Policy>(parascan::host{threads}, affine_with_step{}, in, parascan::bdt(x.data(), 1, sequences, T),
                                  opts);
    parascan::options<double> reduce_opts;
    reduce_opts.reverse = reverse;
    reduce_opts.initial = opts.initial;
    parascan::reduce_scan<Policy>(parascan::host{threads}, affine_with_step{}, in, total.data(), reduce_opts);
    CHECK(stepped_states_combined == 0);
    if (T > 1) CHECK(steps_taken > 0);  // the hook is used

    double worst = 0;
    for (index_t s = 0; s < sequences; ++s) {
      double carry = with_initial ? init[s] : 0.0;
      for (index_t p = 0; p < T; ++p) {
        const index_t i = s * T + (reverse ? T - 1 - p : p);
        const double before = carry;
        carry = a[i] * carry + b[i];
        worst = std::fmax(worst, std::fabs(x[i] - (exclusive ? before : carry)));
      }
      worst = std::fmax(worst, std::fabs(fin[s] - carry));
      worst = std::fmax(worst, std::fabs(total[s] - carry));
    }
    CHECK(worst <= 1e-9);  // false for NaN
  }
}

}  // namespace

TEST_CASE("step hook: sequential, threads over sequences") {
  check<parascan::host_policy<>>(1, 1000, 1);
  check<parascan::host_policy<>>(6, 500, 2);
  check<parascan::host_policy<>>(3, 300, 7);  // fewer sequences than threads, shorter than split_length
}

TEST_CASE("step hook: the three-phase split never combines a stepped carry") {
  for (unsigned threads : {2u, 3u, 7u})
    for (index_t T : {1, 5, 64, 1000, 4097}) check<parascan::host_policy<1>>(1, T, threads);
  check<parascan::host_policy<64>>(2, 999, 5);
}
