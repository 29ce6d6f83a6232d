// Cases for ops/log_linear_recurrence.hpp: the positive and the signed log-space recurrences against fp64
// log-space references, over a dynamic range far beyond fp32 (log x drifts to ~ +500 over 100003 steps),
// with exact zeros (log 0 = -inf) and exact cancellations; special values; the operator laws.
#include <algorithm>

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
    ptest::keep_worst(worst, e);
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

/// fp64 reference of the log-space adjoint from the stored inputs, in scan order p = 0 .. n-1: the
/// gradients of log a, log b and the initial log-value, each with the scale it is measured against (the
/// same sums over absolute values). y_prev0: log x0 (-inf without an initial state).
struct log_adjoint_reference {
  std::vector<double> da, db, scale_a, scale_b;
  double dx0 = 0, scale_x0 = 0;
  log_adjoint_reference(const std::vector<double>& la, const std::vector<double>& lb, const std::vector<double>& y,
                        double y_prev0, const std::vector<double>& dy, double gf) {
    const std::size_t n = la.size();
    da.assign(n, 0), db.assign(n, 0), scale_a.assign(n, 0), scale_b.assign(n, 0);
    double carried = gf, carried_scale = std::abs(gf);  // r[p+1] h[p+1]
    for (std::size_t p = n; p-- > 0;) {
      if (y[p] == -INFINITY) {  // x = 0: no gradient through this step
        carried = carried_scale = 0;
        continue;
      }
      const double h = dy[p] + carried, hs = std::abs(dy[p]) + carried_scale;
      const double r = std::exp(la[p] + (p == 0 ? y_prev0 : y[p - 1]) - y[p]), w = std::exp(lb[p] - y[p]);
      db[p] = h * w, scale_b[p] = hs * w;
      da[p] = h * r, scale_a[p] = hs * r;
      carried = r * h, carried_scale = r * hs;
    }
    dx0 = carried, scale_x0 = carried_scale;
  }
};

/// log x in fp64 from log a, log b and log x0, in scan order.
std::vector<double> log_forward(const std::vector<double>& la, const std::vector<double>& lb, double y0) {
  std::vector<double> y(la.size());
  for (std::size_t p = 0; p < la.size(); ++p) y[p] = y0 = ref_add({la[p] + y0, 1}, {lb[p], 1}).log_abs;
  return y;
}

/// log_linear_recurrence_backward on every configuration, values stored as S: the gradients' error
/// relative to their scale (ptest::scaled_norm_error) at most `tol`.
template <class S>
void check_log_backward(double tol) {
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive) return;  // the forward's exclusive form has no backward wrapper
    ptest::backend_offsets offs(sh);
    ptest::buffer<S> la(sh.elements()), lb(sh.elements()), y(sh.elements()), dy(sh.elements());
    ptest::buffer<S> da(sh.elements()), db(sh.elements()), init(sh.count()), gf(sh.count()), dx0(sh.count());
    ptest::fast_random g;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](auto& buf) { return sh.view(buf.host.data(), host_offsets); };
    for (auto& v : la.host) v = S(g.uniform(0, 1) < 0.001 ? -INFINITY : g.uniform(-0.5, 0.0));
    for (auto& v : lb.host) v = S(random_log_b(g) / 2);
    for (auto& v : init.host) v = S(g.uniform(-10, 10));
    ptest::fill(dy, [&] { return S(g.normal()); });
    ptest::fill(gf, [&] { return S(g.normal()); });
    // The forward's outputs, from an fp64 reference of the stored inputs, stored as S.
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = hv(la).length_of(s);
      double carry = f.with_initial ? double(init.host[s]) : -INFINITY;
      for (index_t p = 0; p < n; ++p) {
        const index_t t = f.reverse ? n - 1 - p : p;
        carry = ref_add({double(hv(la).at(s, t)) + carry, 1}, {double(hv(lb).at(s, t)), 1}).log_abs;
        hv(y).at(s, t) = S(carry);
      }
    }
    la.upload(), lb.upload(), y.upload(), init.upload();
    ptest::fill(da, [] { return ptest::poison<S>(); });
    ptest::fill(db, [] { return ptest::poison<S>(); });
    ptest::fill(dx0, [] { return ptest::poison<S>(); });
    parascan::backward_options<S> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_final = f.with_final ? gf.data() : nullptr;
    opts.grad_initial = dx0.data();
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    parascan::log_linear_recurrence_backward(ptest::exec(), view(la), view(lb), view(y), view(dy), view(da), view(db),
                                             opts);
    da.download(), db.download(), dx0.download();

    ptest::scaled_norm_error err_a, err_b, err_x0;
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = hv(la).length_of(s);
      const auto time = [&](index_t p) { return f.reverse ? n - 1 - p : p; };
      std::vector<double> lap(n), lbp(n), yp(n), dyp(n);
      for (index_t p = 0; p < n; ++p) {
        lap[p] = double(hv(la).at(s, time(p))), lbp[p] = double(hv(lb).at(s, time(p)));
        yp[p] = double(hv(y).at(s, time(p))), dyp[p] = double(hv(dy).at(s, time(p)));
      }
      const log_adjoint_reference ref(lap, lbp, yp, f.with_initial ? double(init.host[s]) : -INFINITY, dyp,
                                      f.with_final ? double(gf.host[s]) : 0.0);
      for (index_t p = 0; p < n; ++p) {
        err_a.add(double(hv(da).at(s, time(p))), ref.da[p], ref.scale_a[p]);
        err_b.add(double(hv(db).at(s, time(p))), ref.db[p], ref.scale_b[p]);
      }
      err_x0.add(double(dx0.host[s]), ref.dx0, ref.scale_x0);
    }
    if (std::getenv("PTEST_REPORT"))
      MESSAGE(sh.describe() << " " << err_a.relative() << " " << err_b.relative() << " " << err_x0.relative());
    CHECK(err_a.relative() <= tol);
    CHECK(err_b.relative() <= tol);
    CHECK(err_x0.relative() <= tol);
  });
}

/// fp64 reference of the signed log-space adjoint, in scan order p = 0 .. n-1, from the stored inputs and
/// outputs x[p] = {log|x|, sign} (x[-1] = x0): dL/d(log|a|), and dL/d(log|b|) or, with value_b, dL/db,
/// each with its scale (the same sums over absolute values), and dL/d(log|x0|).
struct signed_adjoint_reference {
  std::vector<double> da, db, scale_a, scale_b;
  double dx0 = 0, scale_x0 = 0;
  signed_adjoint_reference(const std::vector<double>& la, const std::vector<double>& sa, const std::vector<double>& lb,
                           const std::vector<double>& sb, const std::vector<ref_signed>& x, ref_signed x0,
                           const std::vector<double>& dy, double gf, bool value_b) {
    const std::size_t n = la.size();
    da.assign(n, 0), db.assign(n, 0), scale_a.assign(n, 0), scale_b.assign(n, 0);
    double carried = gf, carried_scale = std::abs(gf);  // r[p+1] h[p+1]
    for (std::size_t p = n; p-- > 0;) {
      if (x[p].log_abs == -INFINITY) {  // x = 0: no gradient through this step
        carried = carried_scale = 0;
        continue;
      }
      const double h = dy[p] + carried, hs = std::abs(dy[p]) + carried_scale;
      const ref_signed before = p == 0 ? x0 : x[p - 1];
      const double r = sa[p] * before.sign * x[p].sign * std::exp(la[p] + before.log_abs - x[p].log_abs);
      const double w =
          value_b ? x[p].sign * std::exp(-x[p].log_abs) : sb[p] * x[p].sign * std::exp(lb[p] - x[p].log_abs);
      db[p] = h * w, scale_b[p] = hs * std::abs(w);
      da[p] = h * r, scale_a[p] = hs * std::abs(r);
      carried = r * h, carried_scale = std::abs(r) * hs;
    }
    dx0 = carried, scale_x0 = carried_scale;
  }
};

/// x = {log|x|, sign} in fp64 from log|a|, sign a, log|b|, sign b and x0, in scan order.
std::vector<ref_signed> signed_forward(const std::vector<double>& la, const std::vector<double>& sa,
                                       const std::vector<double>& lb, const std::vector<double>& sb, ref_signed x) {
  std::vector<ref_signed> out(la.size());
  for (std::size_t p = 0; p < la.size(); ++p) out[p] = x = ref_add({la[p] + x.log_abs, sa[p] * x.sign}, {lb[p], sb[p]});
  return out;
}

/// signed_log_linear_recurrence_backward on every configuration (inclusive forwards), in S: the forward's
/// outputs from an fp64 reference of the stored inputs, stored as signed_log<S>; the gradients' error
/// relative to their scale at most `tol`. four_inputs: (log|a|, sign a, log|b|, sign b), negative gates
/// among them; else (log a, b) with b's value and dL/db.
template <class S, bool four_inputs>
void check_signed_backward(double tol) {
  using Y = signed_log<S>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive) return;  // the forward's exclusive form has no backward wrapper
    ptest::backend_offsets offs(sh);
    ptest::buffer<S> la(sh.elements()), sa(sh.elements()), lb(sh.elements()), sb(sh.elements()), b(sh.elements());
    ptest::buffer<S> dy(sh.elements()), da(sh.elements()), db(sh.elements()), gf(sh.count()), dx0(sh.count());
    ptest::buffer<Y> x(sh.elements()), init(sh.count());
    ptest::fast_random g;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](auto& buf) { return sh.view(buf.host.data(), host_offsets); };
    for (auto& v : la.host) v = S(g.uniform(0, 1) < 0.001 ? -INFINITY : g.uniform(-0.5, 0.0));
    for (auto& v : sa.host) v = S(random_sign(g, four_inputs ? 0.3 : 0.0));
    for (auto& v : lb.host) v = S(random_log_b(g) / 2);
    for (auto& v : sb.host) v = S(random_sign(g, 0.5));
    for (std::size_t i = 0; i < b.size(); ++i) {
      b.host[i] = sb.host[i] * std::exp(lb.host[i]);  // the (log a, b) form's b, and its log|b| as stored
      if (!four_inputs) lb.host[i] = S(std::log(std::abs(double(b.host[i]))));
    }
    for (auto& v : init.host) v = Y{S(g.uniform(-10, 10)), S(random_sign(g, 0.5))};
    ptest::fill(dy, [&] { return S(g.normal()); });
    ptest::fill(gf, [&] { return S(g.normal()); });
    const auto scan_order = [&](index_t s, auto& buf) {
      const index_t n = hv(la).length_of(s);
      std::vector<double> out(std::size_t(n), 0.0);
      for (index_t p = 0; p < n; ++p) out[std::size_t(p)] = double(hv(buf).at(s, f.reverse ? n - 1 - p : p));
      return out;
    };
    const auto x0 = [&](index_t s) {
      return f.with_initial ? ref_signed{double(init.host[s].log_abs), double(init.host[s].sign)}
                            : ref_signed{-INFINITY, 1.0};
    };
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = hv(la).length_of(s);
      const auto xs = signed_forward(scan_order(s, la), scan_order(s, sa), scan_order(s, lb), scan_order(s, sb), x0(s));
      for (index_t p = 0; p < n; ++p)
        hv(x).at(s, f.reverse ? n - 1 - p : p) = Y{S(xs[std::size_t(p)].log_abs), S(xs[std::size_t(p)].sign)};
    }
    la.upload(), sa.upload(), lb.upload(), sb.upload(), b.upload(), x.upload(), init.upload();
    ptest::fill(da, [] { return ptest::poison<S>(); });
    ptest::fill(db, [] { return ptest::poison<S>(); });
    ptest::fill(dx0, [] { return ptest::poison<S>(); });
    parascan::backward_options<Y, S> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_final = f.with_final ? gf.data() : nullptr;
    opts.grad_initial = dx0.data();
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    if constexpr (four_inputs)
      parascan::signed_log_linear_recurrence_backward(ptest::exec(), view(la), view(sa), view(lb), view(sb), view(x),
                                                      view(dy), view(da), view(db), opts);
    else
      parascan::signed_log_linear_recurrence_backward(ptest::exec(), view(la), view(b), view(x), view(dy), view(da),
                                                      view(db), opts);
    da.download(), db.download(), dx0.download();

    ptest::scaled_norm_error err_a, err_b, err_x0;
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = hv(la).length_of(s);
      std::vector<ref_signed> xs(static_cast<std::size_t>(n));
      for (index_t p = 0; p < n; ++p) {
        const Y& v = hv(x).at(s, f.reverse ? n - 1 - p : p);
        xs[std::size_t(p)] = {double(v.log_abs), double(v.sign)};
      }
      const signed_adjoint_reference ref(scan_order(s, la), scan_order(s, sa), scan_order(s, lb), scan_order(s, sb), xs,
                                         x0(s), scan_order(s, dy), f.with_final ? double(gf.host[s]) : 0.0,
                                         !four_inputs);
      const auto got_a = scan_order(s, da), got_b = scan_order(s, db);
      for (std::size_t p = 0; p < std::size_t(n); ++p) {
        err_a.add(got_a[p], ref.da[p], ref.scale_a[p]);
        err_b.add(got_b[p], ref.db[p], ref.scale_b[p]);
      }
      err_x0.add(double(dx0.host[s]), ref.dx0, ref.scale_x0);
    }
    if (std::getenv("PTEST_REPORT"))
      MESSAGE(sh.describe() << " " << err_a.relative() << " " << err_b.relative() << " " << err_x0.relative());
    CHECK(err_a.relative() <= tol);
    CHECK(err_b.relative() <= tol);
    CHECK(err_x0.relative() <= tol);
  });
}

TEST_CASE("signed_log_linear_recurrence_backward: the adjoint reference against central differences (fp64)") {
  // L = sum_p w_p log|x_p| + wf log|x_{n-1}|; derivatives by log|a|, log|b|, b itself and log|x0|, with
  // negative gates and tokens (x crosses zero: the signs change along the sequence).
  const int n = 9;
  ptest::fast_random g;
  std::vector<double> la(n), sa(n), lb(n), sb(n), w(n);
  ref_signed x0{0, -1.0};
  // Inputs whose x stays clear of zero (|x| >= 0.05): near a zero crossing log|x| is too curved for a
  // difference step of 1e-6 to measure its derivative to 1e-6.
  do {
    for (int p = 0; p < n; ++p) {
      la[p] = g.uniform(-1, 0.2), sa[p] = random_sign(g, 0.3), lb[p] = g.uniform(-2, 2), sb[p] = random_sign(g, 0.5);
      w[p] = g.normal();
    }
    x0.log_abs = g.uniform(-2, 2);
  } while ([&] {
    const auto x = signed_forward(la, sa, lb, sb, x0);
    return std::any_of(x.begin(), x.end(), [](const ref_signed& v) { return v.log_abs < std::log(0.05); });
  }());
  const double wf = g.normal();
  const auto loss = [&] {
    const std::vector<ref_signed> x = signed_forward(la, sa, lb, sb, x0);
    double l = wf * x.back().log_abs;
    for (int p = 0; p < n; ++p) l += w[p] * x[p].log_abs;
    return l;
  };
  const auto xs = signed_forward(la, sa, lb, sb, x0);
  const signed_adjoint_reference ref(la, sa, lb, sb, xs, x0, w, wf, false),
      by_value(la, sa, lb, sb, xs, x0, w, wf, true);
  const auto numeric = [&](double& v) { return ptest::central_difference(v, loss); };
  for (int p = 0; p < n; ++p) {
    INFO("step ", p);
    CHECK(std::abs(numeric(la[p]) - ref.da[p]) <= 1e-6 * (1 + std::abs(ref.da[p])));
    CHECK(std::abs(numeric(lb[p]) - ref.db[p]) <= 1e-6 * (1 + std::abs(ref.db[p])));
    // dL/db by the value: b = sb exp(lb), so d/db = d/d(log|b|) / b.
    CHECK(std::abs(ref.db[p] / (sb[p] * std::exp(lb[p])) - by_value.db[p]) <= 1e-12 * (1 + std::abs(by_value.db[p])));
  }
  CHECK(std::abs(numeric(x0.log_abs) - ref.dx0) <= 1e-6 * (1 + std::abs(ref.dx0)));
}

TEST_CASE("signed_log_linear_recurrence_backward: fp32 and fp64, both input forms, every layout and option") {
  // Each share r = exp(log|a| + log|x[t-1]| - log|x[t]|) rounds an ulp of its argument's terms, as the
  // positive adjoint's; near-cancellations push log|x| further down (|log|x|| up to ~20 here), so twice
  // its bound (the worst of 20 fp32 runs: 21 eps).
  check_signed_backward<float, true>(128 * ptest::eps_of<float>());
  check_signed_backward<float, false>(128 * ptest::eps_of<float>());
  check_signed_backward<double, true>(128 * ptest::eps_of<double>());
  check_signed_backward<double, false>(128 * ptest::eps_of<double>());
}

TEST_CASE("signed_log_linear_recurrence_backward: no gradient is 0, also where x leaves the float range") {
  // x = 1, e^-30, e^-60, ... (b = 1 then 0: 1 / x overflows fp32 from the fourth step, even computed as
  // (h e^(-log|x| / 2)) e^(-log|x| / 2) from the seventh), a loss of log|x[0]| alone: h = 0 past step 0, so
  // dL/db and dL/d(log a) are 0 there (not 0 * inf), in both input forms.
  const index_t n = 10;
  ptest::buffer<float> la(n, -30.0f), sa(n, 1.0f), b(n, 0.0f), lb(n, -INFINITY), sb(n, 1.0f), dy(n, 0.0f);
  ptest::buffer<float> da(n), db(n);
  ptest::buffer<signed_log<float>> x(n);
  b.host[0] = 1.0f, lb.host[0] = 0.0f, dy.host[0] = 1.0f;
  for (auto* buf : {&la, &sa, &b, &lb, &sb, &dy}) buf->upload();
  const auto v = [&](auto& buf) { return parascan::single(buf.data(), n); };
  parascan::signed_log_linear_recurrence(ptest::exec(), v(la), v(b), v(x));
  for (const bool four_inputs : {false, true}) {
    INFO((four_inputs ? "(log|a|, sign a, log|b|, sign b)" : "(log a, b)"));
    ptest::fill(da, [] { return ptest::poison<float>(); });
    ptest::fill(db, [] { return ptest::poison<float>(); });
    if (four_inputs)
      parascan::signed_log_linear_recurrence_backward(ptest::exec(), v(la), v(sa), v(lb), v(sb), v(x), v(dy), v(da),
                                                      v(db));
    else
      parascan::signed_log_linear_recurrence_backward(ptest::exec(), v(la), v(b), v(x), v(dy), v(da), v(db));
    da.download(), db.download();
    CHECK(db.host[0] == doctest::Approx(1.0));  // dL/db[0] = dL/dx[0] = 1 / x[0]; dL/d(log|b[0]|) = b / x = 1
    CHECK(da.host[0] == 0.0f);                  // x[-1] = 0
    for (index_t t = 1; t < n; ++t) {
      CHECK(da.host[t] == 0.0f);
      CHECK(db.host[t] == 0.0f);
    }
  }
}

TEST_CASE("log_linear_recurrence_backward: the adjoint reference against central differences (fp64)") {
  // L = sum_p w_p y_p + wf y_{n-1}, y = log x; derivatives by log a, log b and log x0.
  const int n = 7;
  ptest::fast_random g;
  std::vector<double> la(n), lb(n), w(n);
  for (int p = 0; p < n; ++p) la[p] = g.uniform(-1, 0.2), lb[p] = g.uniform(-3, 3), w[p] = g.normal();
  double y0 = g.uniform(-2, 2);
  const double wf = g.normal();
  const auto loss = [&] {
    const std::vector<double> y = log_forward(la, lb, y0);
    double l = wf * y.back();
    for (int p = 0; p < n; ++p) l += w[p] * y[p];
    return l;
  };
  const log_adjoint_reference ref(la, lb, log_forward(la, lb, y0), y0, w, wf);
  const auto numeric = [&](double& v) { return ptest::central_difference(v, loss); };
  for (int p = 0; p < n; ++p) {
    CHECK(std::abs(numeric(la[p]) - ref.da[p]) <= 1e-7 * (1 + std::abs(ref.da[p])));
    CHECK(std::abs(numeric(lb[p]) - ref.db[p]) <= 1e-7 * (1 + std::abs(ref.db[p])));
  }
  CHECK(std::abs(numeric(y0) - ref.dx0) <= 1e-7 * (1 + std::abs(ref.dx0)));
}

TEST_CASE("log_linear_recurrence_backward: fp32 and fp64, every layout, reverse, initial and final gradients") {
  // Each share r = exp(log a + y[t-1] - y[t]) rounds an ulp of its argument's terms (|y| up to ~15 here).
  check_log_backward<float>(64 * ptest::eps_of<float>());
  check_log_backward<double>(64 * ptest::eps_of<double>());
}

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
  // Sums through the operator's combine (gates a = 1), read back as signed logs.
  const parascan::ops::signed_log_linear_recurrence<float> op;
  const float inf = INFINITY, log3 = std::log(3.0f);
  const auto term = [&](float log_abs, float sign) { return op.lift(0.0f, 1.0f, log_abs, sign); };
  const auto sum = [&](auto x, auto y) { return op.project(op(x, y)); };
  CHECK(sum(term(log3, 1), term(log3, -1)).log_abs == -inf);  // 3 - 3 = 0
  CHECK(sum(term(log3, 1), term(log3, -1)).sign == 1);
  CHECK(sum(term(-inf, 1), term(-inf, -1)).log_abs == -inf);  // 0 + 0
  CHECK(sum(term(-inf, 1), term(log3, -1)).log_abs == doctest::Approx(log3));
  CHECK(sum(term(-inf, 1), term(log3, -1)).sign == -1);
  CHECK(std::isnan(sum(term(inf, 1), term(inf, -1)).log_abs));  // inf - inf
  CHECK(sum(term(inf, 1), term(log3, -1)).log_abs == inf);
  CHECK(std::isnan(sum(term(NAN, 1), term(log3, 1)).log_abs));
  CHECK(std::isnan(sum(op(term(NAN, 1), term(0.0f, -1)), term(0.0f, -1)).log_abs));  // sums that cancel by chance
  // A zero left by exact cancellation at a large magnitude does not swallow a small term after it:
  // (e^80 - e^80) + 1 = 1 (a stale max of 80 would scale the 1 by e^-80, below fp32's range).
  const auto cancelled = op(term(80.0f, 1), term(80.0f, -1));
  CHECK(op.project(op(cancelled, term(0.0f, 1))).log_abs == 0.0f);
  // Near-cancellation: e - e^lo loses what fp32 loses on terms of size e (an error relative to e).
  const float lo = 1.0f - 1e-6f;
  const auto near = sum(term(1.0f, 1), term(lo, -1));
  CHECK(near.sign == 1);
  CHECK(std::abs(std::exp(double(near.log_abs)) - (std::exp(1.0) - std::exp(double(lo)))) <=
        4 * ptest::eps_of<float>() * std::exp(1.0));
  // Repeated near-cancellations keep the scaled sum in range (renormalized by 2^64): seven exact ones, each
  // x - x (1 - 2^-24), take e^200 to e^200 2^-168 = e^83.55, whose scaled sum (2^-168) a float cannot hold.
  using state = parascan::ops::signed_log_linear_state<float>;
  state r{0.0f, 1.0f, 200.0f, 1.0f};
  for (int i = 0; i < 7; ++i) r = op(r, state{0.0f, 1.0f, r.max, -r.scaled_sum * (1.0f - 0x1p-24f)});
  CHECK(op.project(r).log_abs == doctest::Approx(200.0 - 168 * std::log(2.0)).epsilon(1e-6));
  CHECK(op.project(r).sign == 1);

  // The same special values scanned on the backend (gates 1): sequences of three tokens b, x[t] = x[t-1] + b[t].
  const float big = std::exp(80.0f);
  const float tokens[][3] = {{NAN, -1, -1}, {1, NAN, -1}, {inf, -inf, 1}, {3, -3, 1}, {big, -big, 1}, {-inf, 1, 1}};
  const index_t n_seq = index_t(sizeof tokens / sizeof tokens[0]);
  ptest::buffer<float> zeros(3 * n_seq, 0.0f), toks(3 * n_seq);
  ptest::buffer<signed_log<float>> sums(3 * n_seq);
  for (index_t i = 0; i < 3 * n_seq; ++i) toks.host[i] = tokens[i / 3][i % 3];
  zeros.upload();
  toks.upload();
  parascan::signed_log_linear_recurrence(ptest::exec(), parascan::bdt(zeros.data(), 1, n_seq, 3),
                                         parascan::bdt(toks.data(), 1, n_seq, 3), parascan::bdt(sums.data(), 1, n_seq, 3));
  sums.download();
  const auto at = [&](index_t s, index_t t) { return sums.host[3 * s + t]; };
  for (index_t t = 0; t < 3; ++t) CHECK(std::isnan(at(0, t).log_abs));  // NaN, then cancelling terms: NaN
  CHECK(std::isnan(at(1, 1).log_abs));
  CHECK(std::isnan(at(1, 2).log_abs));
  CHECK(std::isnan(at(2, 1).log_abs));  // inf - inf
  CHECK(at(3, 1).log_abs == -inf);      // 3 - 3 = 0, then 1
  CHECK(at(3, 1).sign == 1);
  CHECK(std::abs(at(3, 2).log_abs) <= 1e-6f);  // log 1 (the GPU's lg2.approx: within 2^-21)
  CHECK(at(4, 1).log_abs == -inf);  // e^80 - e^80 = 0, then 1 (not swallowed by a stale maximum)
  CHECK(std::abs(at(4, 2).log_abs) <= 1e-6f);
  CHECK(at(5, 2).log_abs == inf);  // -inf + 1 + 1
  CHECK(at(5, 2).sign == -1);

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
      P{}, [&] { return P{}.lift(g.uniform(-3, 3), random_log_b(g)); },
      [](const P::value_type& x, const P::value_type& y) {
        const auto d = [](double u, double v) { return u == v ? 0.0 : std::abs(u - v) / (1 + std::abs(v)); };
        return std::max(d(x.log_a, y.log_a), d(P{}.project(x), P{}.project(y)));
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
        return std::max(d({x.log_a, x.sign_a}, {y.log_a, y.sign_a}), d(Q{}.project(x), Q{}.project(y)));
      },
      1e-12, 0.0);
}
