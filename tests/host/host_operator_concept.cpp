// The operator concept: optional members (lift with one or several inputs, project, seed) are detected
// and used when present, defaults apply when absent. The failing side (a required member missing) is
// covered by the compile-fail tests in tests/compile_fail/.
#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include <parascan/parascan.hpp>

#include "support/affine_map.hpp"

using parascan::index_t;

namespace {

// Only the required members: one input converts to the state; outputs are states.
struct plain_sum {
  using value_type = double;
  double identity() const { return 0.0; }
  double operator()(double a, double b) const { return a + b; }
};

// lift from three inputs of different types: value * weight, masked.
struct masked_dot {
  using value_type = double;
  double identity() const { return 0.0; }
  double operator()(double a, double b) const { return a + b; }
  double lift(float x, double w, std::int8_t keep) const { return keep ? double(x) * w : 0.0; }
};

// Affine maps x -> a x + b composed in time order (project writes x, seed continues from x).
using affine = ptest::affine_map;

// The same without seed: it cannot take an initial state.
struct affine_no_seed {
  using value_type = affine::value_type;
  value_type identity() const { return {1.0, 0.0}; }
  value_type operator()(value_type e, value_type l) const { return {e.a * l.a, l.a * e.b + l.b}; }
  value_type lift(double a, double b) const { return {a, b}; }
  double project(value_type s) const { return s.b; }
};

}  // namespace

TEST_CASE("optional members are detected") {
  using namespace parascan::detail;
  static_assert(parascan::check_operator<plain_sum>());
  static_assert(parascan::check_operator<affine>());

  static_assert(!has_lift<plain_sum, const double&>::value);
  static_assert(has_lift<masked_dot, const float&, const double&, const std::int8_t&>::value);
  static_assert(!has_lift<masked_dot, const float&, const double&>::value);  // wrong arity is not a lift
  static_assert(has_lift<affine, const double&, const double&>::value);

  static_assert(!has_project<plain_sum, double>::value);
  static_assert(has_project<affine, affine::value_type>::value);
  static_assert(std::is_same<parascan::output_t<plain_sum>, double>::value);
  static_assert(std::is_same<parascan::output_t<affine>, double>::value);
  static_assert(std::is_same<parascan::state_t<affine>, affine::value_type>::value);

  static_assert(has_seed<affine, double>::value);
  static_assert(!has_seed<affine_no_seed, double>::value);
  static_assert(parascan::can_seed<plain_sum>);   // outputs are states: seeding is the identity map
  static_assert(parascan::can_seed<affine>);      // seed() given
  static_assert(!parascan::can_seed<affine_no_seed>);  // project without seed: no initial state
  CHECK(true);
}

TEST_CASE("the defaults: a single input converts to the state, outputs are states") {
  const std::vector<float> x = {1.5f, 2.0f, -0.5f, 4.0f};
  std::vector<double> y(4, -1.0);
  parascan::prefix_scan(parascan::host{1}, plain_sum{}, parascan::single(x.data(), 4), parascan::single(y.data(), 4));
  CHECK(y == std::vector<double>{1.5, 3.5, 3.0, 7.0});
  CHECK(parascan::lift(plain_sum{}, 2.5f) == 2.5);
  CHECK(parascan::project(plain_sum{}, 2.5) == 2.5);
  CHECK(parascan::seed(plain_sum{}, 2.5) == 2.5);
}

TEST_CASE("lift with several inputs of different types reads them in step") {
  const index_t n = 5;
  const std::vector<float> x = {1, 2, 3, 4, 5};
  const std::vector<double> w = {10, 20, 30, 40, 50};
  const std::vector<std::int8_t> keep = {1, 0, 1, 1, 0};
  std::vector<double> y(n, -1.0);
  double total = -1.0;
  parascan::prefix_scan(parascan::host{1}, masked_dot{},
                        parascan::inputs(parascan::single(x.data(), n), parascan::single(w.data(), n),
                                         parascan::single(keep.data(), n)),
                        parascan::single(y.data(), n));
  CHECK(y == std::vector<double>{10, 10, 100, 260, 260});
  parascan::reduce_scan(parascan::host{1}, masked_dot{},
                        parascan::inputs(parascan::single(x.data(), n), parascan::single(w.data(), n),
                                         parascan::single(keep.data(), n)),
                        &total);
  CHECK(total == 260);
}

TEST_CASE("project writes the output, seed continues from an initial output") {
  // x[t] = a[t] x[t-1] + b[t] from x0 = 2.
  const std::vector<double> a = {0.5, 2.0, 1.0, -1.0}, b = {1.0, 0.0, 3.0, 1.0};
  const double x0 = 2.0;
  std::vector<double> y(4, -1.0);
  double final_x = -1.0, total = -1.0;
  parascan::options<double> opts;
  opts.initial = &x0;
  opts.final = &final_x;
  parascan::prefix_scan(parascan::host{1}, affine{},
                        parascan::inputs(parascan::single(a.data(), 4), parascan::single(b.data(), 4)),
                        parascan::single(y.data(), 4), opts);
  CHECK(y == std::vector<double>{2.0, 4.0, 7.0, -6.0});
  CHECK(final_x == -6.0);

  parascan::options<double> reduce_opts;
  reduce_opts.initial = &x0;
  parascan::reduce_scan(parascan::host{1}, affine{},
                        parascan::inputs(parascan::single(a.data(), 4), parascan::single(b.data(), 4)), &total,
                        reduce_opts);
  CHECK(total == -6.0);

  // Without an initial state the scan starts from the identity map (x0 = 0).
  parascan::prefix_scan(parascan::host{1}, affine_no_seed{},
                        parascan::inputs(parascan::single(a.data(), 4), parascan::single(b.data(), 4)),
                        parascan::single(y.data(), 4));
  CHECK(y == std::vector<double>{1.0, 2.0, 5.0, -4.0});
}
