// Cases for ops/log_linear_recurrence.hpp: the positive and the signed log-space recurrences against fp64
// log-space references, over a dynamic range far beyond fp32 (log x drifts to ~ +500 over 100003 steps),
// with exact zeros (log 0 = -inf) and exact cancellations; special values; the operator laws.
#include <parascan/ops/log_linear_recurrence.hpp>

#include "support/laws.hpp"
#include "support/numeric.hpp"

namespace {

using ptest::index_t;
using parascan::ops::signed_log;

/// fp64 signed log-space addition, written independently of the operator.
struct ref_signed {
  double log_abs, sign;
};
ref_signed ref_add(ref_signed x, ref_signed y) {
  if (std::isnan(x.log_abs) || std::isnan(y.log_abs)) return {NAN, 1};
  const double m = std::max(x.log_abs, y.log_abs);
  if (m == -INFINITY) return {-INFINITY, 1};
  const double v = x.sign * std::exp(x.log_abs - m) + y.sign * std::exp(y.log_abs - m);
  return {v == 0 ? -INFINITY : m + std::log(std::abs(v)), v < 0 ? -1.0 : 1.0};
}

/// log a: drifts upwards (log x grows ~ 0.005 per step), one in a thousand exactly zero.
double random_log_a(ptest::fast_random& g) { return g.uniform(0, 1) < 0.001 ? -INFINITY : g.uniform(-0.3, 0.31); }
/// log |b| in [-20, 20], one in twenty exactly zero.
double random_log_b(ptest::fast_random& g) { return g.uniform(0, 1) < 0.05 ? -INFINITY : g.uniform(-20, 20); }
double random_sign(ptest::fast_random& g, double p_negative) { return g.uniform(0, 1) < p_negative ? -1.0 : 1.0; }

/// The positive recurrence in S: the error |got - ref| / (1 + |ref|) of log x stays below
/// ulps * eps(S) * (1 + sqrt(T)) (a log-value rounds to an ulp of its size at every step).
template <class S>
void check_positive(double ulps) {
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<S> la(sh.elements()), lb(sh.elements()), lx(sh.elements()), init(sh.count()), fin(sh.count());
    ptest::fast_random g;
    ptest::fill(la, [&] { return S(random_log_a(g)); });
    ptest::fill(lb, [&] { return S(random_log_b(g)); });
    ptest::fill(init, [&] { return S(random_log_b(g)); });
    ptest::fill(lx, [] { return ptest::poison<S>(); });
    ptest::fill(fin, [] { return ptest::poison<S>(); });
    parascan::log_linear_recurrence(ptest::exec(), sh.view(la.data(), offs.get(sh)), sh.view(lb.data(), offs.get(sh)),
                                    sh.view(lx.data(), offs.get(sh)), ptest::options_for(f, init.data(), fin.data()));
    lx.download();
    fin.download();

    ptest::scaled_error_meter err;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto av = sh.view(la.host.data(), host_offsets), bv = sh.view(lb.host.data(), host_offsets);
    const auto xv = sh.view(lx.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const double start = f.with_initial ? double(init.host[s]) : -INFINITY;
      const double total = ptest::reference_scan(
          av.length_of(s), f.exclusive, f.reverse, start,
          [&](double c, index_t t) { return ref_add({av.at(s, t) + c, 1}, {bv.at(s, t), 1}).log_abs; },
          [&](index_t t, double c) { err.add(xv.at(s, t), c); });
      if (f.with_final) err.add(fin.host[s], total);
    }
    if (std::getenv("PTEST_REPORT")) MESSAGE(sh.describe() << " " << err.worst);
    CHECK(err.worst <= ulps * ptest::eps_of<S>() * (1 + std::sqrt(double(sh.T))));
  });
}

/// Worst |x_got - x_ref| / (C (1 + |log C|)) over the elements added, where C is the reference of the
/// same recurrence on |a|, |b|: the size of the terms that met, to which cancellation's errors are
/// relative, times the rounding unit of a log-value of that size (log-values round to their own ulp).
struct signed_error_meter {
  double worst = 0;
  void add(const signed_log<double>& got, const ref_signed& ref, double log_c) {
    double e;
    if (std::isnan(got.log_abs) || std::isnan(log_c)) e = INFINITY;
    else if (log_c == -INFINITY) e = got.log_abs == -INFINITY ? 0.0 : INFINITY;
    else
      e = std::abs(got.sign * std::exp(got.log_abs - log_c) - ref.sign * std::exp(ref.log_abs - log_c)) /
          (1 + std::abs(log_c));
    if (!(e <= worst)) worst = e;
  }
};

/// The signed recurrence in S with inputs (log a, b value) when `four_inputs` is false, else (log|a|,
/// sign a, log|b|, sign b): the signed_error_meter's error at most ulps * eps(S) * (1 + sqrt(T)).
template <class S, bool four_inputs>
void check_signed(double ulps) {
  using Y = signed_log<S>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<S> la(sh.elements()), sa(sh.elements()), lb(sh.elements()), sb(sh.elements()), b(sh.elements());
    ptest::buffer<Y> x(sh.elements()), init(sh.count()), fin(sh.count());
    ptest::fast_random g;
    ptest::fill(la, [&] { return S(random_log_a(g)); });
    ptest::fill(lb, [&] { return S(random_log_b(g)); });
    ptest::fill(sa, [&] { return S(random_sign(g, four_inputs ? 0.3 : 0.0)); });
    ptest::fill(sb, [&] { return S(random_sign(g, 0.5)); });
    for (std::size_t i = 0; i < b.size(); ++i) b.host[i] = sb.host[i] * std::exp(lb.host[i]);
    b.upload();
    ptest::fill(init, [&] { return Y{S(random_log_b(g)), S(random_sign(g, 0.5))}; });
    ptest::fill(x, [] { return Y{ptest::poison<S>(), ptest::poison<S>()}; });
    ptest::fill(fin, [] { return Y{ptest::poison<S>(), ptest::poison<S>()}; });
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    if constexpr (four_inputs)
      parascan::signed_log_linear_recurrence(ptest::exec(), view(la), view(sa), view(lb), view(sb), view(x),
                                             ptest::options_for(f, init.data(), fin.data()));
    else
      parascan::signed_log_linear_recurrence(ptest::exec(), view(la), view(b), view(x), ptest::options_for(f, init.data(), fin.data()));
    x.download();
    fin.download();

    signed_error_meter err;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto av = sh.view(la.host.data(), host_offsets), sav = sh.view(sa.host.data(), host_offsets);
    const auto bv = sh.view(lb.host.data(), host_offsets), sbv = sh.view(sb.host.data(), host_offsets);
    const auto xv = sh.view(x.host.data(), host_offsets);
    const auto as_double = [](const Y& y) { return signed_log<double>{double(y.log_abs), double(y.sign)}; };
    struct carry {
      ref_signed x;
      double log_c;
    };
    for (index_t s = 0; s < sh.count(); ++s) {
      const carry start = f.with_initial ? carry{{double(init.host[s].log_abs), double(init.host[s].sign)},
                                                 double(init.host[s].log_abs)}
                                         : carry{{-INFINITY, 1}, -INFINITY};
      const carry total = ptest::reference_scan(
          av.length_of(s), f.exclusive, f.reverse, start,
          [&](const carry& c, index_t t) {
            const double la_t = av.at(s, t), lb_t = bv.at(s, t);
            return carry{ref_add({la_t + c.x.log_abs, sav.at(s, t) * c.x.sign}, {lb_t, sbv.at(s, t)}),
                         ref_add({la_t + c.log_c, 1}, {lb_t, 1}).log_abs};
          },
          [&](index_t t, const carry& c) { err.add(as_double(xv.at(s, t)), c.x, c.log_c); });
      if (f.with_final) err.add(as_double(fin.host[s]), total.x, total.log_c);
    }
    if (std::getenv("PTEST_REPORT")) MESSAGE(sh.describe() << " " << err.worst);
    CHECK(err.worst <= ulps * ptest::eps_of<S>() * (1 + std::sqrt(double(sh.T))));
  });
}

}  // namespace

TEST_CASE("log_linear_recurrence: positive a, b in fp32 and fp64") {
  check_positive<float>(8);
  check_positive<double>(8);
}

TEST_CASE("signed_log_linear_recurrence: (log a, b) and (log|a|, sign a, log|b|, sign b)") {
  check_signed<float, false>(8);
  check_signed<float, true>(8);
  check_signed<double, true>(8);
}

TEST_CASE("signed_log_linear_recurrence: exact zeros and cancellation, no NaN") {
  using parascan::ops::signed_logaddexp;
  const float inf = INFINITY;
  const signed_log<float> zero{-inf, 1}, three{std::log(3.0f), 1}, minus_three{std::log(3.0f), -1};
  CHECK(signed_logaddexp(three, minus_three).log_abs == -inf);  // 3 - 3 = 0
  CHECK(signed_logaddexp(zero, zero).log_abs == -inf);
  CHECK(signed_logaddexp(zero, minus_three).log_abs == minus_three.log_abs);
  CHECK(signed_logaddexp(zero, minus_three).sign == -1);
  CHECK(std::isnan(signed_logaddexp(signed_log<float>{inf, 1}, signed_log<float>{inf, -1}).log_abs));
  CHECK(std::isnan(signed_logaddexp(signed_log<float>{NAN, 1}, three).log_abs));
  const float lo = 1.0f - 1e-6f;  // e - e^lo: log1mexp near 0, where log1p(-exp(d)) would lose digits
  const auto near = signed_logaddexp(signed_log<float>{1.0f, 1}, signed_log<float>{lo, -1});
  CHECK(near.log_abs == doctest::Approx(1.0 + std::log(-std::expm1(double(lo) - 1.0))).epsilon(1e-5));

  // x = 3, then 1 * 3 - 3 = 0 exactly, then 0.5 * 0 + 5 = 5, then 0 * 5 - 2 = -2 (a zero gate resets).
  const float la[] = {0, 0, std::log(0.5f), -inf}, b[] = {3, -3, 5, -2};
  ptest::buffer<float> la_b(4), b_b(4);
  ptest::buffer<signed_log<float>> x(4);
  ptest::buffer<float> xv(4);
  la_b.host.assign(la, la + 4);
  b_b.host.assign(b, b + 4);
  la_b.upload();
  b_b.upload();
  parascan::signed_log_linear_recurrence(ptest::exec(), parascan::single(la_b.data(), 4), parascan::single(b_b.data(), 4),
                                         parascan::single(x.data(), 4));
  x.download();
  CHECK(x.host[0].log_abs == doctest::Approx(std::log(3.0)));
  CHECK(x.host[1].log_abs == -inf);
  CHECK(x.host[1].sign == 1);
  CHECK(x.host[2].log_abs == doctest::Approx(std::log(5.0)));
  CHECK(x.host[3].log_abs == doctest::Approx(std::log(2.0)));
  CHECK(x.host[3].sign == -1);
  // The same into a view of float: x itself.
  parascan::signed_log_linear_recurrence(ptest::exec(), parascan::single(la_b.data(), 4), parascan::single(b_b.data(), 4),
                                         parascan::single(xv.data(), 4));
  xv.download();
  CHECK(xv.host[0] == doctest::Approx(3));
  CHECK(xv.host[1] == 0);
  CHECK(xv.host[2] == doctest::Approx(5));
  CHECK(xv.host[3] == doctest::Approx(-2));
}

TEST_CASE("log_linear_recurrence: operator laws") {
  ptest::fast_random g;
  using P = parascan::ops::log_linear_recurrence<double>;
  ptest::check_operator_laws(
      P{}, [&] { return P::value_type{g.uniform(-3, 3), random_log_b(g)}; },
      [](const P::value_type& x, const P::value_type& y) {
        const auto d = [](double u, double v) { return u == v ? 0.0 : std::abs(u - v) / (1 + std::abs(v)); };
        return std::max(d(x.log_a, y.log_a), d(x.log_b, y.log_b));
      },
      1e-15, 0.0);
  using Q = parascan::ops::signed_log_linear_recurrence<double>;
  ptest::check_operator_laws(
      Q{}, [&] { return Q{}.lift(g.uniform(-2, 2), random_sign(g, 0.5), g.uniform(-2, 2), random_sign(g, 0.5)); },
      // Values compared relative to 1 + their size: sums of terms up to e^6 may cancel to near zero, so
      // the tolerance allows rounding of the terms (~ 400 eps).
      [](const Q::value_type& x, const Q::value_type& y) {
        const auto d = [](const signed_log<double>& u, const signed_log<double>& v) {
          const double a = double(u), b = double(v);
          return std::abs(a - b) / (1 + std::abs(b));
        };
        return std::max(d(x.a, y.a), d(x.b, y.b));
      },
      1e-12, 0.0);
}
