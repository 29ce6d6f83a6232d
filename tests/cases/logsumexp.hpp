// Cases for ops/logsumexp.hpp: logcumsumexp and logsumexp against an fp64 sequential reference, with
// -inf inputs (log 0) mixed in, special values, and the operator's laws.
#include <parascan/ops/logsumexp.hpp>

#include "support/laws.hpp"
#include "support/numeric.hpp"

namespace {

using ptest::index_t;

/// fp64 reference, written independently of the operator: shift by the max, sum, log.
double ref_logaddexp(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return NAN;
  const double m = std::max(x, y);
  if (std::isinf(m)) return m;
  return m + std::log(std::exp(x - m) + std::exp(y - m));
}

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
          [&](double c, index_t t) { return ref_logaddexp(c, ptest::to_double(xv.at(s, t))); },
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
  using parascan::ops::logaddexp;
  const float inf = INFINITY;
  CHECK(logaddexp(-inf, -inf) == -inf);
  CHECK(logaddexp(-inf, 3.0f) == 3.0f);
  CHECK(logaddexp(3.0f, -inf) == 3.0f);
  CHECK(logaddexp(inf, inf) == inf);
  CHECK(logaddexp(inf, -inf) == inf);
  CHECK(logaddexp(-inf, inf) == inf);
  CHECK(std::isnan(logaddexp(NAN, 1.0f)));
  CHECK(std::isnan(logaddexp(1.0f, NAN)));
  CHECK(std::isnan(logaddexp(NAN, -inf)));
  CHECK(std::isnan(logaddexp(-inf, NAN)));
  CHECK(std::isnan(logaddexp(inf, NAN)));
  CHECK(logaddexp(0.0f, 0.0f) == doctest::Approx(std::log(2.0)).epsilon(1e-7));
  CHECK(logaddexp(1000.0f, 1000.0f) == doctest::Approx(1000 + std::log(2.0)).epsilon(1e-7));  // no overflow
  CHECK(logaddexp(-1000.0f, -1000.0f) == doctest::Approx(-1000 + std::log(2.0)).epsilon(1e-7));  // no underflow

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
      for (index_t t = 0; t < T; ++t) ref = ref_logaddexp(ref, x.host[s * T + t]);
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
