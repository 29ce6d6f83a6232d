// Cases for ops/logsumexp.hpp: logcumsumexp and logsumexp against an fp64 sequential reference, with
// -inf inputs (log 0) mixed in, special values, and the operator's laws.
#include <parascan/ops/logsumexp.hpp>

#include "support/laws.hpp"
#include "support/numeric.hpp"

namespace {

using ptest::index_t;

/// Log-values in [-20, 20], one in twenty -inf.
double random_log(ptest::fast_random& g) { return g.uniform(0, 1) < 0.05 ? -INFINITY : g.uniform(-20, 20); }

/// logcumsumexp on every configuration, inputs stored as T, outputs as Y: the error |got - ref| /
/// (1 + |ref|) stays below out_ulps * eps(Y) + acc_ulps * eps(state) * (1 + sqrt(T)). A running log-sum
/// rounds to an ulp of its own size at every step (increments below half an ulp are lost), so like any
/// running sum its error grows with the length.
template <class T, class Y>
void check_logcumsumexp(double out_ulps, double acc_ulps) {
  using Acc = parascan::ops::accumulator_t<T>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    const double tol = out_ulps * (std::is_same<Y, Acc>::value ? 0.0 : ptest::eps_of<Y>()) +
                       acc_ulps * ptest::eps_of<Acc>() * (1 + std::sqrt(double(sh.T)));
    ptest::backend_offsets offs(sh);
    ptest::buffer<T> x(sh.elements());
    ptest::buffer<Y> y(sh.elements());
    ptest::buffer<Acc> init(sh.count()), fin(sh.count());
    ptest::fast_random g;
    ptest::fill(x, [&] { return ptest::store<T>(random_log(g)); });
    ptest::fill(init, [&] { return ptest::store<Acc>(random_log(g)); });
    ptest::fill(y, [] { return ptest::poison<Y>(); });
    ptest::fill(fin, [] { return ptest::poison<Acc>(); });

    const auto opts = ptest::options_for<Acc>(f, init.data(), fin.data());
    parascan::logcumsumexp(ptest::exec(), sh.view(x.data(), offs.get(sh)), sh.view(y.data(), offs.get(sh)), opts);
    y.download();
    fin.download();

    ptest::scaled_error_meter err;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto xv = sh.view(x.host.data(), host_offsets);
    const auto yv = sh.view(y.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const double start = f.with_initial ? ptest::to_double(init.host[s]) : -INFINITY;
      const double total = ptest::reference_scan(
          xv.length_of(s), f.exclusive, f.reverse, start,
          [&](double c, index_t t) { return ptest::log_add_exp(c, ptest::to_double(xv.at(s, t))); },
          [&](index_t t, double c) { err.add(ptest::to_double(yv.at(s, t)), c); });
      if (f.with_final) err.add(ptest::to_double(fin.host[s]), total);
    }
    CHECK(err.worst <= tol);
  });
}

}  // namespace

TEST_CASE("logcumsumexp: fp32 and fp64 with -inf inputs") {
  check_logcumsumexp<float, float>(0, 4);
  check_logcumsumexp<double, double>(0, 4);
}

TEST_CASE("logcumsumexp: bf16 storage, fp32 state") {
  check_logcumsumexp<ptest::bf16, ptest::bf16>(0.5, 4);
}

TEST_CASE("logcumsumexp: special values") {
  // Pairs (x0, x1) scanned as sequences of two on the backend: y1 = log(exp x0 + exp x1).
  const float inf = INFINITY;
  const float pairs[][3] = {{-inf, -inf, -inf},    {-inf, 3.0f, 3.0f},     {3.0f, -inf, 3.0f},   {inf, inf, inf},
                            {inf, -inf, inf},      {-inf, inf, inf},       {NAN, 1.0f, NAN},     {1.0f, NAN, NAN},
                            {NAN, -inf, NAN},      {-inf, NAN, NAN},       {inf, NAN, NAN},      {NAN, inf, NAN},
                            {0.0f, 0.0f, float(std::log(2.0))},            // no overflow, no underflow:
                            {1000.0f, 1000.0f, float(1000 + std::log(2.0))}, {-1000.0f, -1000.0f, float(-1000 + std::log(2.0))},
                            {80.0f, -80.0f, 80.0f}};                       // a rescale of e^-160: 0
  const index_t n_pairs = index_t(sizeof pairs / sizeof pairs[0]);
  ptest::buffer<float> px(2 * n_pairs), py(2 * n_pairs);
  for (index_t i = 0; i < n_pairs; ++i) px.host[2 * i] = pairs[i][0], px.host[2 * i + 1] = pairs[i][1];
  px.upload();
  parascan::logcumsumexp(ptest::exec(), parascan::bdt(px.data(), 1, n_pairs, 2), parascan::bdt(py.data(), 1, n_pairs, 2));
  py.download();
  for (index_t i = 0; i < n_pairs; ++i) {
    INFO("pair " << i << ": " << pairs[i][0] << ", " << pairs[i][1] << " gave " << py.host[2 * i + 1]);
    const float want = pairs[i][2], got = py.host[2 * i + 1];
    if (std::isnan(want)) CHECK(std::isnan(got));
    else if (std::isinf(want)) CHECK(got == want);
    else CHECK(got == doctest::Approx(want).epsilon(1e-7));
  }

  // All -inf: -inf everywhere, no NaN. A NaN step: NaN from there on, finite before.
  const index_t T = 3000;
  ptest::buffer<float> x(T, -inf), y(T);
  x.upload();
  parascan::logcumsumexp(ptest::exec(), parascan::single(x.data(), T), parascan::single(y.data(), T));
  y.download();
  bool all_neg_inf = true;
  for (float v : y.host) all_neg_inf = all_neg_inf && v == -inf;
  CHECK(all_neg_inf);
  for (auto& v : x.host) v = 0.5f;
  x.host[1234] = NAN;
  x.upload();
  parascan::logcumsumexp(ptest::exec(), parascan::single(x.data(), T), parascan::single(y.data(), T));
  y.download();
  bool right = true;
  for (index_t t = 0; t < T; ++t) right = right && (t < 1234 ? std::isfinite(y.host[t]) : std::isnan(y.host[t]));
  CHECK(right);
}

TEST_CASE("logsumexp: totals per sequence") {
  for (index_t T : ptest::lengths()) {
    const index_t B = 2, D = 3;
    ptest::buffer<float> x(B * D * T), r(B * D);
    ptest::fast_random g;
    ptest::fill(x, [&] { return float(random_log(g)); });
    ptest::fill(r, [] { return ptest::poison<float>(); });
    parascan::logsumexp(ptest::exec(), parascan::bdt(x.data(), B, D, T), r.data());
    r.download();
    ptest::scaled_error_meter err;
    for (index_t s = 0; s < B * D; ++s) {
      double ref = -INFINITY;
      for (index_t t = 0; t < T; ++t) ref = ptest::log_add_exp(ref, x.host[s * T + t]);
      err.add(r.host[s], ref);
    }
    INFO("T=" << T);
    CHECK(err.worst <= 4 * ptest::eps_of<float>() * (1 + std::sqrt(double(T))));
  }
}

TEST_CASE("logcumsumexp: operator laws") {
  // States: one to three lifted log-values combined, so that scaled sums other than 1 occur; compared
  // through the log-value each stands for.
  const parascan::ops::log_add_exp<double> op;
  ptest::fast_random g;
  const auto state = [&] {
    auto s = op.lift(random_log(g));
    for (int k = int(g.uniform(0, 3)); k > 0; --k) s = op(s, op.lift(random_log(g)));
    return s;
  };
  ptest::check_operator_laws(
      op, state,
      [&](const auto& x, const auto& y) {
        const double a = op.project(x), b = op.project(y);
        return a == b ? 0.0 : std::abs(a - b) / (1 + std::abs(b));
      },
      4e-16, 0.0);
}

TEST_CASE("logcumsumexp: the state's special values") {
  const parascan::ops::log_add_exp<float> op;
  const float inf = INFINITY;
  const auto value = [&](float a, float b) { return op.project(op(op.lift(a), op.lift(b))); };
  CHECK(value(-inf, -inf) == -inf);
  CHECK(value(-inf, 3.0f) == 3.0f);
  CHECK(value(inf, inf) == inf);
  CHECK(value(inf, -inf) == inf);
  CHECK(std::isnan(value(NAN, 1.0f)));
  CHECK(std::isnan(value(1.0f, NAN)));
  CHECK(std::isnan(value(inf, NAN)));
  CHECK(std::isnan(value(NAN, -inf)));
  CHECK(op.project(op.identity()) == -inf);
  CHECK(op.project(op(op.identity(), op.identity())) == -inf);
  CHECK(value(1000.0f, 1000.0f) == doctest::Approx(1000 + std::log(2.0)).epsilon(1e-7));    // no overflow
  CHECK(value(-1000.0f, -1000.0f) == doctest::Approx(-1000 + std::log(2.0)).epsilon(1e-7));  // no underflow
}

namespace {

/// fp64 gradient of logcumsumexp: dx[p] = sum over the outputs u that step p reached (u >= p, or u > p for
/// an exclusive forward; positions in the forward's scan order) of dy[u] exp(x[p] - y[u]), 0 where y[u] is
/// -inf, plus gf exp(x[p] - F) for a final log-value F with gradient gf; `scale` gets the sum of the terms'
/// sizes. `grad_initial` (optional) gets the same sum for the initial log-value init (every output).
std::vector<double> ref_logcumsumexp_grad(const std::vector<double>& x, const std::vector<double>& y,
                                          const std::vector<double>& dy, bool exclusive, std::vector<double>& scale,
                                          double F = -INFINITY, double gf = 0, double init = -INFINITY,
                                          double* grad_initial = nullptr, double* initial_scale = nullptr) {
  // exp(x[p]) times suffix sums of dy[u] exp(-y[u]): fp64 holds every factor for |x| <= 20 + log(n).
  const std::size_t n = x.size();
  std::vector<double> dx(n, 0.0);
  scale.assign(n, 0.0);
  double sum = 0, size = 0;
  if (F != -INFINITY) sum = gf * std::exp(-F), size = std::abs(sum);
  for (std::size_t p = n; p-- > 0;) {
    const auto add = [&](std::size_t u) {
      if (y[u] != -INFINITY) sum += dy[u] * std::exp(-y[u]), size += std::abs(dy[u]) * std::exp(-y[u]);
    };
    if (!exclusive) add(p);
    dx[p] = std::exp(x[p]) * sum, scale[p] = std::exp(x[p]) * size;
    if (exclusive) add(p);
  }
  if (grad_initial != nullptr) *grad_initial = std::exp(init) * sum, *initial_scale = std::exp(init) * size;
  if (grad_initial != nullptr && n == 0) *grad_initial = gf, *initial_scale = std::abs(gf);  // F is the initial
  return dx;
}

/// logcumsumexp_backward on every configuration, inputs and gradients in T, from the forward's own outputs.
/// Inclusive forwards with an initial log-value take it back (with_initial: dL/d(initial) is checked too),
/// and with_final adds a gradient of the final log-value.
template <class T>
void check_logcumsumexp_backward(double ulps) {
  using Acc = parascan::ops::accumulator_t<T>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<T> x(sh.elements()), y(sh.elements()), dy(sh.elements()), dx(sh.elements());
    ptest::buffer<Acc> init(sh.count()), fin(sh.count()), gf(sh.count()), gi(sh.count());
    ptest::fast_random g;
    ptest::fill(x, [&] { return ptest::store<T>(random_log(g)); });
    ptest::fill(dy, [&] { return ptest::store<T>(g.normal()); });
    ptest::fill(dx, [] { return ptest::poison<T>(); });
    ptest::fill(y, [] { return ptest::poison<T>(); });  // every byte set: positions between views are read back
    ptest::fill(fin, [] { return ptest::poison<Acc>(); });
    ptest::fill(init, [&] { return Acc(random_log(g)); });
    ptest::fill(gf, [&] { return Acc(g.normal()); });
    ptest::fill(gi, [] { return ptest::poison<Acc>(); });
    const bool gradients_of_ends = !f.exclusive && (f.with_initial || f.with_final);
    const auto view = [&](ptest::buffer<T>& b) { return sh.view(b.data(), offs.get(sh)); };
    parascan::options<Acc> forward = ptest::options_for<Acc>(f, init.data(), fin.data());
    forward.final = fin.data();  // F, for the reference
    parascan::logcumsumexp(ptest::exec(), view(x), view(y), forward);
    parascan::backward_options<Acc> backward;
    backward.exclusive = f.exclusive, backward.reverse = f.reverse;
    if (gradients_of_ends) {
      backward.initial = forward.initial;
      backward.grad_final = f.with_final ? gf.data() : nullptr;
      backward.grad_initial = f.with_initial ? gi.data() : nullptr;
    }
    parascan::logcumsumexp_backward(ptest::exec(), view(x), view(y), view(dy), view(dx), backward);
    y.download();
    dx.download();
    fin.download();
    gi.download();

    double worst = 0;
    const auto error = [](double got, double want, double scale) {
      return want == 0 && scale == 0 ? std::abs(got)
                                     : std::isfinite(got) ? std::abs(got - want) / (scale + 1e-300) : INFINITY;
    };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](ptest::buffer<T>& b) { return sh.view(b.host.data(), host_offsets); };
    const auto xv = hv(x), yv = hv(y), dyv = hv(dy), dxv = hv(dx);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = xv.length_of(s);
      const auto time = [&](index_t p) { return f.reverse ? n - 1 - p : p; };
      std::vector<double> xs(n), ys(n), dys(n), scale;
      for (index_t p = 0; p < n; ++p)
        xs[p] = ptest::to_double(xv.at(s, time(p))), ys[p] = ptest::to_double(yv.at(s, time(p))),
        dys[p] = ptest::to_double(dyv.at(s, time(p)));
      const bool with_gf = gradients_of_ends && f.with_final;
      double grad_initial = 0, initial_scale = 0;
      const auto ref = ref_logcumsumexp_grad(xs, ys, dys, f.exclusive, scale, with_gf ? double(fin.host[s]) : -INFINITY,
                                             with_gf ? double(gf.host[s]) : 0.0,
                                             f.with_initial ? double(init.host[s]) : -INFINITY, &grad_initial,
                                             &initial_scale);
      for (index_t p = 0; p < n; ++p) worst = std::max(worst, error(ptest::to_double(dxv.at(s, time(p))), ref[p], scale[p]));
      if (gradients_of_ends && f.with_initial) worst = std::max(worst, error(gi.host[s], grad_initial, initial_scale));
      if (!gradients_of_ends) REQUIRE(std::isnan(gi.host[s]));  // untouched
    }
    CHECK(worst <= ulps * ptest::eps_of<T>() * (1 + std::sqrt(double(sh.T))));
  });
}

/// logsumexp_backward on every configuration (no exclusive form; the result's gradient is its own argument),
/// inputs and gradients in T with -inf among them, the result from the forward itself: each gradient
/// g exp(x[t] - r), and dL/d(initial) = g exp(I - r) (0 without an initial), against fp64 with the error
/// relative to each exact value (0 exactly where the result is -inf).
template <class T>
void check_logsumexp_backward(double ulps) {
  using Acc = parascan::ops::accumulator_t<T>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive || f.with_final) return;
    ptest::backend_offsets offs(sh);
    ptest::buffer<T> x(sh.elements()), dx(sh.elements());
    ptest::buffer<Acc> init(sh.count()), r(sh.count()), gr(sh.count()), gi(sh.count());
    ptest::fast_random g;
    ptest::fill(x, [&] { return ptest::store<T>(random_log(g)); });
    ptest::fill(init, [&] { return Acc(random_log(g)); });
    ptest::fill(gr, [&] { return Acc(g.normal()); });
    ptest::fill(dx, [] { return ptest::poison<T>(); });
    ptest::fill(gi, [] { return ptest::poison<Acc>(); });
    const auto view = [&](ptest::buffer<T>& b) { return sh.view(b.data(), offs.get(sh)); };
    parascan::options<Acc> forward;
    forward.reverse = f.reverse;
    forward.initial = f.with_initial ? init.data() : nullptr;
    parascan::logsumexp(ptest::exec(), view(x), r.data(), forward);
    parascan::backward_options<Acc> backward;
    backward.reverse = f.reverse, backward.initial = forward.initial, backward.grad_initial = gi.data();
    parascan::logsumexp_backward(ptest::exec(), view(x), r.data(), gr.data(), view(dx), backward);
    dx.download(), r.download(), gi.download();

    double worst = 0;
    const auto error = [](double got, double want) {
      return want == 0 ? std::abs(got) : std::isfinite(got) ? std::abs(got - want) / std::abs(want) : INFINITY;
    };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto xv = sh.view(x.host.data(), host_offsets), dxv = sh.view(dx.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = xv.length_of(s);
      const double start = f.with_initial ? double(init.host[s]) : -INFINITY;
      double total = start;
      for (index_t t = 0; t < n; ++t) total = ptest::log_add_exp(total, ptest::to_double(xv.at(s, t)));
      const auto want = [&](double v) { return total == -INFINITY ? 0.0 : double(gr.host[s]) * std::exp(v - total); };
      // The result is a log-value: its error is absolute, scaled by 1 + |total| as logcumsumexp's (a relative
      // error would blow up where the total lies near 0: 1e-4 for a total of 1e-3, one run in 75).
      const double r_error = total == -INFINITY ? (double(r.host[s]) == -INFINITY ? 0.0 : INFINITY)
                                                : std::abs(double(r.host[s]) - total) / (1 + std::abs(total));
      worst = std::max(worst, r_error);
      for (index_t t = 0; t < n; ++t)
        worst = std::max(worst, error(ptest::to_double(dxv.at(s, t)), want(ptest::to_double(xv.at(s, t)))));
      worst = std::max(worst, error(double(gi.host[s]), want(start)));
    }
    // exp(x - r) carries r's rounding, |r| eps, with |x|, |r| <= ~10 here.
    CHECK(worst <= ulps * ptest::eps_of<T>() * (1 + std::sqrt(double(sh.T))));
  });
}

}  // namespace

TEST_CASE("logsumexp_backward: fp32 and fp64 with -inf inputs, every layout, initial log-values") {
  check_logsumexp_backward<float>(64);
  check_logsumexp_backward<double>(64);
}

TEST_CASE("logsumexp_backward: against central differences (fp64)") {
  // L = g logsumexp(x from I): dL/dx[t] and dL/dI by differences.
  ptest::fast_random r;
  const int n = 7;
  std::vector<double> x(n), dx(n);
  for (double& v : x) v = r.uniform(-3, 3);
  double initial = 0.5, grad = -1.5, total = 0, grad_initial = 0;
  const auto loss = [&] {
    double result = 0;
    parascan::options<double> o;
    o.initial = &initial;
    parascan::logsumexp(parascan::host{1}, parascan::single<const double>(x.data(), n), &result, o);
    return grad * result;
  };
  total = loss() / grad;
  parascan::backward_options<double> opts;
  opts.initial = &initial, opts.grad_initial = &grad_initial;
  parascan::logsumexp_backward(parascan::host{1}, parascan::single<const double>(x.data(), n), &total, &grad,
                               parascan::single(dx.data(), n), opts);
  const auto numeric = [&](double& value) {
    const double keep = value;
    value = keep + 1e-6;
    const double plus = loss();
    value = keep - 1e-6;
    const double minus = loss();
    value = keep;
    return (plus - minus) / 2e-6;
  };
  for (int t = 0; t < n; ++t) CHECK(std::abs(numeric(x[t]) - dx[t]) <= 1e-7 * (1 + std::abs(dx[t])));
  CHECK(std::abs(numeric(initial) - grad_initial) <= 1e-7 * (1 + std::abs(grad_initial)));
}

TEST_CASE("logsumexp_backward: bad arguments are refused, nothing written") {
  const index_t T = 6;
  ptest::buffer<float> x(2 * T), dx(T), r(2), gr(1), gi(1);
  ptest::fill(dx, [] { return ptest::poison<float>(); });
  ptest::fill(gi, [] { return ptest::poison<float>(); });
  const auto in = parascan::single<const float>(x.data(), T);
  const auto out = parascan::single(dx.data(), T);
  parascan::backward_options<float> opts;
  opts.grad_initial = gi.data();
  const auto refused = [&](const float* result, const float* grad, const parascan::sequences<float>& o,
                           const char* message) {
    CHECK_THROWS_WITH_AS(parascan::logsumexp_backward(ptest::exec(), in, result, grad, o, opts),
                         doctest::Contains(message), parascan::error);
  };
  refused(nullptr, gr.data(), out, "result: a non-null array");
  refused(r.data(), nullptr, out, "grad_result: a non-null array");
  refused(dx.data() + 2, gr.data(), out, "grad_x: no overlap with result");
  refused(r.data(), gi.data(), out, "options.grad_initial: no overlap with grad_result");
  refused(r.data(), gr.data(), parascan::single(x.data() + 1, T), "grad_x");
  refused(r.data(), gr.data(), parascan::single(dx.data(), T - 1), "grad_x");
  opts.grad_final = gr.data();
  refused(r.data(), gr.data(), out, "options.grad_final: null");
  opts.grad_final = nullptr;
  opts.exclusive = true;
  refused(r.data(), gr.data(), out, "options.exclusive");
  dx.download(), gi.download();
  for (float d : dx.host) CHECK(std::isnan(d));
  CHECK(std::isnan(gi.host[0]));
}

TEST_CASE("logcumsumexp_backward: the gradient formula against central differences (fp64)") {
  // L = sum dy[u] y[u], y = logcumsumexp(x): dL/dx[p] by the formula and by differences.
  ptest::fast_random g;
  const int n = 9;
  std::vector<double> x(n), dy(n);
  for (int p = 0; p < n; ++p) x[p] = g.uniform(-3, 3), dy[p] = g.normal();
  for (const bool exclusive : {false, true}) {
    const auto forward = [&](const std::vector<double>& xs) {
      std::vector<double> y(n);
      double acc = -INFINITY;
      for (int p = 0; p < n; ++p) {
        if (!exclusive) acc = ptest::log_add_exp(acc, xs[p]);
        y[p] = acc;
        if (exclusive) acc = ptest::log_add_exp(acc, xs[p]);
      }
      return y;
    };
    const auto loss = [&](const std::vector<double>& xs) {
      const auto y = forward(xs);
      double l = 0;
      for (int p = 0; p < n; ++p) l += dy[p] * (y[p] == -INFINITY ? 0.0 : y[p]);
      return l;
    };
    std::vector<double> scale;
    const auto ref = ref_logcumsumexp_grad(x, forward(x), dy, exclusive, scale);
    for (int p = 0; p < n; ++p) {
      auto plus = x, minus = x;
      plus[p] += 1e-6, minus[p] -= 1e-6;
      CHECK(std::abs((loss(plus) - loss(minus)) / 2e-6 - ref[p]) <= 1e-6 * (1 + std::abs(ref[p])));
    }
  }
}

TEST_CASE("logcumsumexp_backward: fp32 and fp64 with -inf inputs, every layout and option") {
  check_logcumsumexp_backward<float>(64);
  check_logcumsumexp_backward<double>(64);
}

TEST_CASE("logcumsumexp_backward: end gradients of an exclusive forward are refused, nothing written") {
  const ptest::index_t T = 8;
  ptest::buffer<float> x(T), y(T), dy(T), dx(T), gf(1), gi(1);
  ptest::fill(dx, [] { return ptest::poison<float>(); });
  ptest::fill(gi, [] { return ptest::poison<float>(); });
  const auto v = [&](ptest::buffer<float>& b) { return parascan::single(b.data(), T); };
  parascan::backward_options<float> opts;
  opts.exclusive = true;
  opts.grad_final = gf.data();
  CHECK_THROWS_WITH_AS(parascan::logcumsumexp_backward(ptest::exec(), v(x), v(y), v(dy), v(dx), opts),
                       doctest::Contains("options.grad_final: null with an exclusive forward"), parascan::error);
  opts.grad_final = nullptr;
  opts.grad_initial = gi.data();
  CHECK_THROWS_WITH_AS(parascan::logcumsumexp_backward(ptest::exec(), v(x), v(y), v(dy), v(dx), opts),
                       doctest::Contains("options.grad_initial: null with an exclusive forward"), parascan::error);
  dx.download();
  gi.download();
  for (float d : dx.host) CHECK(std::isnan(d));
  CHECK(std::isnan(gi.host[0]));
}
