// Operator laws, checked on random states: associativity within a tolerance (floating-point combines are
// associative only up to rounding) and the identity on both sides. Runs the operator's combine on the
// host (its members are PARASCAN_HD), so a case file uses it the same way on every backend.
#pragma once

#include <doctest/doctest.h>


namespace ptest {

/// For `trials` random triples (a, b, c) from random_state(): distance((a.b).c, a.(b.c)) <= assoc_tol and
/// distance(e.a, a), distance(a.e, a) <= identity_tol. distance(x, y) is a relative error the caller
/// defines for its state (a norm, a log-space difference, ...). Reports the worst values seen.
template <class Op, class Gen, class Distance>
void check_operator_laws(const Op& op, Gen&& random_state, Distance&& distance, double assoc_tol,
                         double identity_tol = 0.0, int trials = 200) {
  double worst_assoc = 0, worst_identity = 0;
  const auto keep_worst = [](double& worst, double d) {
    if (!(d <= worst)) worst = d;  // a NaN distance sticks, and fails the checks below
  };
  for (int i = 0; i < trials; ++i) {
    const auto a = random_state(), b = random_state(), c = random_state();
    keep_worst(worst_assoc, double(distance(op(op(a, b), c), op(a, op(b, c)))));
    keep_worst(worst_identity, double(distance(op(op.identity(), a), a)));
    keep_worst(worst_identity, double(distance(op(a, op.identity()), a)));
  }
  INFO("associativity error " << worst_assoc << ", identity error " << worst_identity);
  CHECK(worst_assoc <= assoc_tol);
  CHECK(worst_identity <= identity_tol);
}

}  // namespace ptest
