// The backward pass of x[t] = a[t] x[t-1] + b[t] written with the engine's pieces: shifted inputs (the
// gates one step ahead, the states one step behind), an epilogue that sees the step's inputs (emit) and
// several outputs written by one scan (parascan::outputs, parascan::values).
//
// With g[t] = dL/dx[t] through the whole future (dy[t] = the upstream gradient of output t):
//   g[t] = dy[t] + a[t+1] g[t+1]        a reverse linear recurrence over the gates shifted by one,
//   dL/db[t] = g[t],  dL/da[t] = g[t] x[t-1] (x[-1] = x0),  dL/dx0 = a[0] g[0].
// One reverse scan reads a[t+1], dy[t] and x[t-1] at step t and writes both dL/db[t] and dL/da[t]. The
// library's linear_recurrence_backward does the same in its own terms (an exclusive scan over the
// unshifted gates, which also gives dL/dx0); both are checked against a plain loop; exits 1 on a mismatch.
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

/// The adjoint recurrence g = a[t+1] g + dy[t] (inputs: shifted gates, upstream gradient, shifted
/// states), writing dL/db[t] = g[t] and dL/da[t] = g[t] x[t-1] through emit.
struct linear_backward {
  using value_type = parascan::ops::linear_state<float>;
  parascan::ops::linear_recurrence<float> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  PARASCAN_HD value_type lift(float a_next, float dy, float) const { return {a_next, dy}; }
  PARASCAN_HD float project(const value_type& s) const { return s.b; }
  PARASCAN_HD parascan::value_pack<float, float> emit(const value_type& s, float, float, float x_prev) const {
    return parascan::values(s.b, s.b * x_prev);
  }
};

}  // namespace

int main() {
  const std::int64_t T = 1000;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> gate(0.8f, 0.99f);
  std::normal_distribution<float> normal;
  std::vector<float> a(T), b(T), dy(T), x(T), db(T), da(T);
  for (std::int64_t t = 0; t < T; ++t) a[t] = gate(rng), b[t] = normal(rng), dy[t] = normal(rng);
  const float x0 = 0.5f;

  const parascan::host exec{};
  const auto view = [&](std::vector<float>& v) { return parascan::single(v.data(), T); };
  parascan::options<float> forward;
  forward.initial = &x0;
  parascan::linear_recurrence(exec, view(a), view(b), view(x), forward);

  // In reverse: the gates one step ahead (0 past the end), the states one step behind (x0 before t = 0);
  // dL/db to the first output, dL/da to the second.
  parascan::options<float> backward;
  backward.reverse = true;
  parascan::prefix_scan(
      exec, linear_backward{},
      parascan::inputs(parascan::shifted(view(a), +1, 0.0f), view(dy), parascan::shifted(view(x), -1, x0)),
      parascan::outputs(view(db), view(da)), backward);
  const float dx0 = a[0] * db[0];

  // The library's wrapper computes the same (ops::linear_recurrence_adjoint, with the initial state).
  std::vector<float> lib_da(T), lib_db(T);
  float lib_dx0 = 0;
  parascan::backward_options<float> grad;
  grad.initial = &x0;
  grad.grad_initial = &lib_dx0;
  parascan::linear_recurrence_backward(exec, view(a), view(x), view(dy), view(lib_da), view(lib_db), grad);

  // The same by a plain loop.
  double worst = 0, g = 0;
  for (std::int64_t t = T - 1; t >= 0; --t) {
    g = dy[t] + (t + 1 < T ? a[t + 1] * g : 0.0);
    const double x_prev = t > 0 ? x[t - 1] : x0;
    worst = std::fmax(worst, std::fabs(db[t] - g) / (1 + std::fabs(g)));
    worst = std::fmax(worst, std::fabs(da[t] - g * x_prev) / (1 + std::fabs(g * x_prev)));
    worst = std::fmax(worst, std::fabs(lib_db[t] - g) / (1 + std::fabs(g)));
    worst = std::fmax(worst, std::fabs(lib_da[t] - g * x_prev) / (1 + std::fabs(g * x_prev)));
  }
  worst = std::fmax(worst, std::fabs(lib_dx0 - a[0] * g) / (1 + std::fabs(a[0] * g)));
  worst = std::fmax(worst, std::fabs(dx0 - a[0] * g) / (1 + std::fabs(a[0] * g)));
  std::printf("backward of a linear recurrence, T = %lld: dL/db[0] = %.6f, dL/da[0] = %.6f, dL/dx0 = %.6f\n",
              static_cast<long long>(T), db[0], da[0], dx0);
  std::printf("largest relative difference from a plain loop: %.2e\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
