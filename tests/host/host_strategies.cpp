// The host backend's strategies: sequential per sequence, threads over sequences, and the three-phase
// split (reduce chunks, scan the totals, rescan) of sequences longer than the policy's split_length when
// there are fewer sequences than threads. Every strategy is checked against an fp64 sequential reference
// with non-commutative operators (affine maps, orthogonal 2x2 matrices), so that combining chunks in the
// wrong order shows; every option (exclusive, reverse, initial, final) goes through every strategy.
#include "support/backend_host.hpp"
#include "support/harness.hpp"
#include "support/affine_map.hpp"

#include <algorithm>
#include <cmath>

namespace {

using ptest::index_t;
using ptest::layout_kind;
using ptest::shape;

// Affine maps x -> a x + b composed in time order (project writes x, seed continues from x).
using affine = ptest::affine_map;

// 2x2 matrix product in time order (earlier on the left), state = output.
struct mat2 {
  double m[4];
};
struct matrix_product {
  using value_type = mat2;
  mat2 identity() const { return {{1, 0, 0, 1}}; }
  mat2 operator()(const mat2& e, const mat2& l) const {
    return {{e.m[0] * l.m[0] + e.m[1] * l.m[2], e.m[0] * l.m[1] + e.m[1] * l.m[3],
             e.m[2] * l.m[0] + e.m[3] * l.m[2], e.m[2] * l.m[1] + e.m[3] * l.m[3]}};
  }
};

// The affine case: inputs a (|a| < 1, either sign, so that x stays bounded) and b; the reference
// recurrence written directly, x = a x + b.
struct affine_case {
  using Y = double;
  affine op;
  std::vector<double> a, b;
  void generate(std::size_t n) {
    a.resize(n);
    b.resize(n);
    for (auto& v : a) v = ptest::uniform(-0.99, 0.99);
    for (auto& v : b) v = ptest::normal();
  }
  auto inputs(const shape& sh, const index_t* offs) const {
    return parascan::inputs(sh.view(a.data(), offs), sh.view(b.data(), offs));
  }
  Y start() const { return 0.0; }
  Y random_output() const { return ptest::normal(); }
  Y poison() const { return std::nan(""); }
  Y step(Y x, const shape& sh, index_t s, index_t t) {
    return ptest::host_at(a, sh, s, t) * x + ptest::host_at(b, sh, s, t);
  }
  static double distance(Y got, Y ref) { return std::abs(got - ref) / (1.0 + std::abs(ref)); }
};

// The matrix case: random rotations and reflections (O(2) does not commute, and products stay bounded).
struct matrix_case {
  using Y = mat2;
  matrix_product op;
  std::vector<mat2> m;
  static mat2 random_orthogonal() {
    const double th = ptest::uniform(0, 6.283185307179586), c = std::cos(th), s = std::sin(th);
    return ptest::uniform(0, 1) < 0.5 ? mat2{{c, -s, s, c}} : mat2{{c, s, s, -c}};
  }
  void generate(std::size_t n) {
    m.resize(n);
    for (auto& v : m) v = random_orthogonal();
  }
  auto inputs(const shape& sh, const index_t* offs) const { return sh.view(m.data(), offs); }
  Y start() const { return op.identity(); }
  Y random_output() const { return random_orthogonal(); }
  Y poison() const { return {{std::nan(""), std::nan(""), std::nan(""), std::nan("")}}; }
  Y step(const Y& carry, const shape& sh, index_t s, index_t t) { return op(carry, ptest::host_at(m, sh, s, t)); }
  static double distance(const Y& got, const Y& ref) {
    double d = 0;
    for (int i = 0; i < 4; ++i) d = std::max(d, std::isnan(got.m[i]) ? INFINITY : std::abs(got.m[i] - ref.m[i]));
    return d;
  }
};

// Runs prefix_scan and reduce_scan with Policy on `threads` threads over shape sh with flags f, and
// compares every output, final state and total with the reference. Outputs start poisoned (NaN).
template <class Policy, class Case>
void check(Case& c, const shape& sh, unsigned threads, const ptest::scan_flags& f) {
  using Y = typename Case::Y;
  INFO("threads=" << threads << " split_length=" << Policy::split_length << " " << sh.describe() << " "
                  << ptest::describe(f));
  const index_t* offs = sh.packed() ? sh.offsets.data() : nullptr;
  c.generate(sh.elements());
  std::vector<Y> y(sh.elements(), c.poison()), init(sh.count()), fin(sh.count(), c.poison()),
      total(sh.count(), c.poison());
  for (auto& v : init) v = c.random_output();

  const auto opts = ptest::options_for<Y>(f, init.data(), fin.data());
  parascan::prefix_scan<Policy>(parascan::host{threads}, c.op, c.inputs(sh, offs), sh.view(y.data(), offs), opts);
  parascan::options<Y> reduce_opts;
  reduce_opts.reverse = f.reverse;
  reduce_opts.initial = opts.initial;
  parascan::reduce_scan<Policy>(parascan::host{threads}, c.op, c.inputs(sh, offs), total.data(), reduce_opts);

  constexpr double tolerance = 1e-9;
  index_t bad = 0;
  std::string first_bad;
  const auto expect = [&](const Y& got, const Y& ref, const char* what, index_t s, index_t t) {
    if (Case::distance(got, ref) <= tolerance) return;  // false for NaN: unwritten outputs count as bad
    if (bad++ == 0) first_bad = std::string(what) + " s=" + std::to_string(s) + " t=" + std::to_string(t);
  };
  const auto view = sh.view(y.data(), offs);
  for (index_t s = 0; s < sh.count(); ++s) {
    const Y start = f.with_initial ? init[s] : c.start();
    const Y ref = ptest::reference_scan(
        view.length_of(s), f.exclusive, f.reverse, start, [&](const Y& x, index_t t) { return c.step(x, sh, s, t); },
        [&](index_t t, const Y& r) { expect(view.at(s, t), r, "output", s, t); });
    if (f.with_final) expect(fin[s], ref, "final", s, -1);
    expect(total[s], ref, "reduce_scan total", s, -1);
  }
  CHECK_MESSAGE(bad == 0, bad << " wrong values, first: " << first_bad);
}

template <class Policy>
void check_all_flags(const shape& sh, unsigned threads) {
  for (const auto& f : ptest::all_flags()) {
    affine_case a;
    check<Policy>(a, sh, threads, f);
    matrix_case m;
    check<Policy>(m, sh, threads, f);
  }
}

using small_split = parascan::host_policy<64>;

shape uniform_shape(layout_kind kind, index_t n0, index_t n1, index_t T) { return shape{kind, n0, n1, T, {}}; }
shape packed_shape(layout_kind kind, std::vector<index_t> offsets, index_t channels) {
  const index_t n = index_t(offsets.size()) - 1;
  return shape{kind, n, channels, offsets.back() - offsets.front(), std::move(offsets)};
}

}  // namespace

TEST_CASE("threads over sequences: 1, 2 and 7 threads on batches") {
  for (unsigned threads : {1u, 2u, 7u})
    for (layout_kind kind : {layout_kind::bdt, layout_kind::btd, layout_kind::strided}) {
      check_all_flags<parascan::host_policy<>>(uniform_shape(kind, 3, 5, 257), threads);
      check_all_flags<small_split>(uniform_shape(kind, 3, 5, 257), threads);  // enough sequences: no split
    }
}

TEST_CASE("more threads than sequences") {
  // Shorter than split_length: each sequence sequentially; longer: each split across the 7 threads.
  check_all_flags<parascan::host_policy<>>(uniform_shape(layout_kind::bdt, 1, 3, 300), 7);
  check_all_flags<small_split>(uniform_shape(layout_kind::bdt, 1, 3, 300), 7);
  check_all_flags<small_split>(uniform_shape(layout_kind::btd, 2, 2, 1000), 7);
  // Some sequences above split_length, some below, in one batch.
  check_all_flags<parascan::host_policy<200>>(packed_shape(layout_kind::packed_td, {0, 150, 350, 351, 1400}, 1), 7);
}

TEST_CASE("three-phase split of a single sequence longer than split_length") {
  for (unsigned threads : {2u, 7u})
    for (index_t n : {64, 65, 100, 1000, 4097}) {
      check_all_flags<small_split>(uniform_shape(layout_kind::single, 1, 1, n), threads);
      check_all_flags<small_split>(uniform_shape(layout_kind::strided, 1, 1, n), threads);  // time stride 2
    }
  // Fewer steps than threads: some chunks are empty.
  for (index_t n : {1, 2, 3, 6, 7, 8})
    check_all_flags<parascan::host_policy<1>>(uniform_shape(layout_kind::single, 1, 1, n), 7);
}

TEST_CASE("packed batches with empty sequences") {
  const std::vector<index_t> offsets = {0, 0, 500, 500, 1300, 1301, 1301};
  for (unsigned threads : {1u, 2u, 7u}) {
    check_all_flags<small_split>(packed_shape(layout_kind::packed_td, offsets, 1), threads);  // 6 sequences
    check_all_flags<small_split>(packed_shape(layout_kind::packed_td, offsets, 3), threads);  // 18 sequences
    check_all_flags<small_split>(packed_shape(layout_kind::packed_dt, offsets, 2), threads);
  }
  // Nothing but empty sequences, and offsets that do not start at zero.
  check_all_flags<small_split>(packed_shape(layout_kind::packed_td, {0, 0, 0}, 1), 7);
  check_all_flags<small_split>(packed_shape(layout_kind::packed_td, {5, 5, 900, 900}, 1), 7);
}

TEST_CASE("default policy: one sequence of 2^21 steps splits across threads") {
  const shape sh = uniform_shape(layout_kind::single, 1, 1, index_t(1) << 21);
  static_assert(parascan::default_policy_t<affine, parascan::arch::host>::split_length < (index_t(1) << 21));
  using policy = parascan::default_policy_t<affine, parascan::arch::host>;
  for (const ptest::scan_flags& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true},
                                     ptest::scan_flags{false, true, true, true}}) {
    affine_case a;
    check<policy>(a, sh, 4, f);
    matrix_case m;
    check<parascan::default_policy_t<matrix_product, parascan::arch::host>>(m, sh, 4, f);
  }
}
