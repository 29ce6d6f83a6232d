// Cases for ops/linear_recurrence.hpp: x[t] = a[t] x[t-1] + b[t] in fp32, fp64, bf16/fp16 storage (fp32
// state), complex64, and mixed gate/token types, against an fp64 (complex<double>) sequential reference.
#include <parascan/ops/linear_recurrence.hpp>

#include "support/laws.hpp"
#include "support/numeric.hpp"

namespace {

using ptest::index_t;
constexpr double pi = 3.14159265358979323846;

/// A contracting gate: |a| in [0.8, 0.999] (memory up to ~1000 steps); complex gates get a random phase,
/// real ones a negative sign one time in ten.
template <class G>
std::complex<double> random_gate(ptest::fast_random& g) {
  const double r = g.uniform(0.8, 0.999);
  if constexpr (ptest::is_complex<G>::value) return std::polar(r, g.uniform(-pi, pi));
  else return g.uniform(0, 1) < 0.1 ? -r : r;
}
template <class X>
std::complex<double> random_token(ptest::fast_random& g) {
  if constexpr (ptest::is_complex<X>::value) return {g.normal(), g.normal()};
  else return g.normal();
}

/// The error measure of a recurrence's outputs (ptest::scaled_norm_error): c[t] = |a[t] x[t-1]| + |b[t]| is
/// the size of the terms that step t adds (|x0| for an initial value). Plain relative error would be
/// unbounded where the terms cancel (x near 0), which one- or two-step sequences hit often; over long
/// runs ||c|| ~ ||x||.
using recurrence_error = ptest::scaled_norm_error;

/// Runs linear_recurrence on every configuration with gates stored as G, tokens as X, outputs as Y, and
/// checks the error (recurrence_error) against the fp64 reference of the stored inputs: at most
/// out_ulps * eps(Y) (the output's own rounding) + acc_ulps * eps(state).
template <class G, class X, class Y>
void check_linear_recurrence(double out_ulps, double acc_ulps) {
  using Acc = parascan::ops::common_accumulator_t<G, X>;
  const double tol = out_ulps * (std::is_same<Y, Acc>::value ? 0.0 : ptest::eps_of<Y>()) +
                     acc_ulps * ptest::eps_of<Acc>();
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<G> a(sh.elements());
    ptest::buffer<X> b(sh.elements());
    ptest::buffer<Y> y(sh.elements());
    ptest::buffer<Acc> init(sh.count()), fin(sh.count());
    ptest::fast_random g;
    ptest::fill(a, [&] { return ptest::store<G>(random_gate<G>(g)); });
    ptest::fill(b, [&] { return ptest::store<X>(random_token<X>(g)); });
    ptest::fill(init, [&] { return ptest::store<Acc>(random_token<Acc>(g)); });
    ptest::fill(y, [] { return ptest::poison<Y>(); });
    ptest::fill(fin, [] { return ptest::poison<Acc>(); });

    const auto opts = ptest::options_for<Acc>(f, init.data(), fin.data());
    parascan::linear_recurrence(ptest::exec(), sh.view(a.data(), offs.get(sh)), sh.view(b.data(), offs.get(sh)),
                                sh.view(y.data(), offs.get(sh)), opts);
    y.download();
    fin.download();

    recurrence_error err;
    struct carry {
      std::complex<double> x;
      double scale;
    };
    const auto add = [&](const auto& got, const carry& ref) { err.add(ptest::to_complex(got), ref.x, ref.scale); };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto av = sh.view(a.host.data(), host_offsets);
    const auto bv = sh.view(b.host.data(), host_offsets);
    const auto yv = sh.view(y.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = av.length_of(s);
      const std::complex<double> x0 = f.with_initial ? ptest::to_complex(init.host[s]) : 0.0;
      const carry total = ptest::reference_scan(
          n, f.exclusive, f.reverse, carry{x0, std::abs(x0)},
          [&](const carry& c, index_t t) {
            const std::complex<double> a_t = ptest::to_complex(av.at(s, t)), b_t = ptest::to_complex(bv.at(s, t));
            return carry{a_t * c.x + b_t, std::abs(a_t * c.x) + std::abs(b_t)};
          },
          [&](index_t t, const carry& c) { add(yv.at(s, t), c); });
      if (f.with_final) add(fin.host[s], total);
    }
    CHECK(err.relative() <= tol);
  });
}

/// x[t] = a[t] x[t-1] + b[t], written as y[t] = c[t] x[t] through emit() (an SSM's readout): the
/// epilogue sees the step's three input elements; final states stay project() = x.
struct readout {
  using value_type = parascan::ops::linear_state<float>;
  parascan::ops::linear_recurrence<float> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  PARASCAN_HD value_type lift(float a, float b, float) const { return {a, b}; }
  PARASCAN_HD float project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(float x0) const { return {1.0f, x0}; }
  PARASCAN_HD float emit(const value_type& s, float, float, float c) const { return c * s.b; }
};

/// The same recurrence writing two outputs of different types from one scan: y[t] = c[t] x[t] (float)
/// and x[t] itself (double).
struct readout_and_state : readout {
  PARASCAN_HD parascan::value_pack<float, float> emit(const value_type& s, float, float, float c) const {
    return parascan::values(c * s.b, s.b);
  }
};

}  // namespace

TEST_CASE("linear_recurrence: fp32 and fp64") {
  check_linear_recurrence<float, float, float>(0, 8);
  check_linear_recurrence<double, double, double>(0, 8);
}

TEST_CASE("linear_recurrence: bf16 and fp16 storage with an fp32 state") {
  check_linear_recurrence<ptest::bf16, ptest::bf16, float>(0, 8);        // fp32 output
  check_linear_recurrence<ptest::bf16, ptest::bf16, ptest::bf16>(0.5, 8);  // bf16 output: one rounding
  check_linear_recurrence<ptest::f16, ptest::f16, ptest::f16>(0.5, 8);
  check_linear_recurrence<ptest::bf16, float, float>(0, 8);              // bf16 gates, fp32 tokens
}

TEST_CASE("linear_recurrence: complex64 gates and tokens") {
  check_linear_recurrence<ptest::complex64, ptest::complex64, ptest::complex64>(0, 8);
}

TEST_CASE("linear_recurrence: operator laws") {
  const parascan::ops::linear_recurrence<double> op;
  using S = parascan::ops::linear_state<double>;
  ptest::check_operator_laws(
      op, [] { return S{ptest::uniform(-1.5, 1.5), ptest::normal()}; },
      [](const S& x, const S& y) {  // relative to 1 + |value|: a sum may cancel to near zero
        return std::max(std::abs(x.a - y.a) / (1 + std::abs(y.a)), std::abs(x.b - y.b) / (1 + std::abs(y.b)));
      },
      1e-14, 0.0);
}

TEST_CASE("linear_recurrence: in place over the tokens") {
  const index_t T = 5000;
  ptest::buffer<float> a(T), b(T);
  ptest::fill(a, [] { return float(ptest::uniform(0.9, 0.99)); });
  ptest::fill(b, [] { return float(ptest::normal()); });
  const std::vector<float> tokens = b.host;
  parascan::linear_recurrence(ptest::exec(), parascan::single(a.data(), T), parascan::single(b.data(), T),
                              parascan::single(b.data(), T));
  b.download();
  ptest::error_meter err;
  double x = 0;
  for (index_t t = 0; t < T; ++t) err.add(b.host[t], x = a.host[t] * x + tokens[t]);
  CHECK(err.relative() <= 8 * ptest::eps_of<float>());
}

TEST_CASE("linear_recurrence: reduce_states gives the whole state, and chunks' states compose") {
  // (gate product, x) of every sequence against fp64, from x0 or 0, forward and reverse; then one
  // sequence reduced in two chunks whose states, composed with the operator, give the whole one's.
  using op_t = parascan::ops::linear_recurrence<float>;
  using S = parascan::ops::linear_state<float>;
  const op_t op;
  for (const index_t T : {index_t(0), index_t(1), index_t(33), index_t(4097), index_t(100003)})
    for (const bool reverse : {false, true})
      for (const bool with_initial : {false, true}) {
        const index_t count = T > 10000 ? 2 : 37;
        INFO("T=" << T << " reverse=" << reverse << " initial=" << with_initial);
        ptest::buffer<float> a(count * T), b(count * T), init(count);
        ptest::buffer<S> states(count);
        ptest::fill(a, [] { return float(ptest::uniform(0.9995, 1.0)); });  // products stay normal floats
        ptest::fill(b, [] { return float(ptest::normal()); });
        ptest::fill(init, [] { return float(ptest::normal()); });
        parascan::options<float> opts;
        opts.reverse = reverse;
        opts.initial = with_initial ? init.data() : nullptr;
        const auto view = [&](float* p) { return parascan::bdt(p, 1, count, T); };
        parascan::reduce_states(ptest::exec(), op, parascan::inputs(view(a.data()), view(b.data())), states.data(),
                                opts);
        states.download();
        ptest::error_meter gates, values;
        for (index_t s = 0; s < count; ++s) {
          double product = 1, x = with_initial ? init.host[s] : 0.0;
          for (index_t k = 0; k < T; ++k) {
            const index_t t = reverse ? T - 1 - k : k;
            product *= a.host[s * T + t];
            x = a.host[s * T + t] * x + b.host[s * T + t];
          }
          gates.add(states.host[s].a, product);
          values.add(states.host[s].b, x);
        }
        CHECK(gates.relative() <= 4 * std::sqrt(double(T) + 1) * ptest::eps_of<float>());
        CHECK(values.relative() <= (64 + 8 * std::sqrt(double(T))) * ptest::eps_of<float>());

        if (T < 2 || with_initial || reverse) continue;
        const index_t half = T / 3;  // chunks [0, half) and [half, T) of sequence 0
        ptest::buffer<S> parts(2);
        const auto chunk = [&](float* p, index_t t0, index_t n) { return parascan::single(p + t0, n); };
        parascan::reduce_states(ptest::exec(), op, parascan::inputs(chunk(a.data(), 0, half), chunk(b.data(), 0, half)),
                                parts.data());
        parascan::reduce_states(ptest::exec(), op,
                                parascan::inputs(chunk(a.data(), half, T - half), chunk(b.data(), half, T - half)),
                                parts.data() + 1);
        parts.download();
        const S joined = op(parts.host[0], parts.host[1]);
        ptest::error_meter err;
        err.add(joined.a, states.host[0].a);
        err.add(joined.b, states.host[0].b);
        CHECK(err.relative() <= (64 + 8 * std::sqrt(double(T))) * ptest::eps_of<float>());
      }
}

/// The readout y = c x (and, with two outputs, x as double) over every layout and option, against fp64.
template <bool TwoOutputs>
void check_readout() {
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<float> a(sh.elements()), b(sh.elements()), c(sh.elements()), y(sh.elements());
    ptest::buffer<double> x(TwoOutputs ? sh.elements() : 0);
    ptest::buffer<float> init(sh.count()), fin(sh.count());
    ptest::fast_random g;
    ptest::fill(a, [&] { return float(random_gate<float>(g).real()); });
    ptest::fill(b, [&] { return float(g.normal()); });
    ptest::fill(c, [&] { return float(g.normal()); });
    ptest::fill(init, [&] { return float(g.normal()); });
    ptest::fill(y, [] { return ptest::poison<float>(); });
    ptest::fill(x, [] { return ptest::poison<double>(); });
    ptest::fill(fin, [] { return ptest::poison<float>(); });
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    const auto opts = ptest::options_for<float>(f, init.data(), fin.data());
    if constexpr (TwoOutputs)
      parascan::prefix_scan(ptest::exec(), readout_and_state{}, parascan::inputs(view(a), view(b), view(c)),
                            parascan::outputs(view(y), view(x)), opts);
    else
      parascan::prefix_scan(ptest::exec(), readout{}, parascan::inputs(view(a), view(b), view(c)), view(y), opts);
    y.download();
    x.download();
    fin.download();

    recurrence_error err;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto av = sh.view(a.host.data(), host_offsets), bv = sh.view(b.host.data(), host_offsets);
    const auto cv = sh.view(c.host.data(), host_offsets), yv = sh.view(y.host.data(), host_offsets);
    const auto xv = sh.view(x.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const double x0 = f.with_initial ? init.host[s] : 0.0;
      const auto total = ptest::reference_scan(
          av.length_of(s), f.exclusive, f.reverse, std::pair<double, double>{x0, std::abs(x0)},
          [&](const std::pair<double, double>& x, index_t t) {
            return std::pair<double, double>{av.at(s, t) * x.first + bv.at(s, t),
                                             std::abs(av.at(s, t) * x.first) + std::abs(bv.at(s, t))};
          },
          [&](index_t t, const std::pair<double, double>& x) {
            err.add(yv.at(s, t), cv.at(s, t) * x.first, std::abs(cv.at(s, t)) * x.second);
            if (TwoOutputs) err.add(xv.at(s, t), x.first, x.second);
          });
      if (f.with_final) err.add(fin.host[s], total.first, total.second);
    }
    CHECK(err.relative() <= 8 * ptest::eps_of<float>());
  });
}

TEST_CASE("emit: what a step writes from its state and its own inputs (y = c x), every layout and option") {
  static_assert(parascan::emits<readout, float, float, float> && !parascan::emits<readout, float, float>);
  check_readout<false>();
}

TEST_CASE("output packs: one scan writes y = c x (float) and x (double), every layout and option") {
  check_readout<true>();
}

TEST_CASE("shifted inputs: gates read one step ahead or behind, boundary values scalar or per sequence") {
  // x[t] = a[t + lag] x[t-1] + b[t], a[t + lag] = the boundary where t + lag is outside the sequence:
  // lag +1 with one boundary for all (the backward pass's a[t + 1], 0 past the end), lag -1 with one per
  // sequence (x[t - 1] with each sequence's x0), lag 2 (two steps at the end take the boundary).
  for (const index_t lag : {index_t(1), index_t(-1), index_t(2)})
    ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
      INFO("lag " << lag);
      ptest::backend_offsets offs(sh);
      ptest::buffer<float> a(sh.elements()), b(sh.elements()), y(sh.elements());
      ptest::buffer<float> init(sh.count()), fin(sh.count()), edge(sh.count());
      ptest::fast_random g;
      ptest::fill(a, [&] { return float(random_gate<float>(g).real()); });
      ptest::fill(b, [&] { return float(g.normal()); });
      ptest::fill(init, [&] { return float(g.normal()); });
      ptest::fill(edge, [&] { return float(g.uniform(-0.9, 0.9)); });
      ptest::fill(y, [] { return ptest::poison<float>(); });
      ptest::fill(fin, [] { return ptest::poison<float>(); });
      const auto gates = sh.view(a.data(), offs.get(sh));
      const float scalar_edge = 0.5f;
      const auto opts = ptest::options_for<float>(f, init.data(), fin.data());
      const auto tokens = sh.view(b.data(), offs.get(sh)), out = sh.view(y.data(), offs.get(sh));
      const parascan::ops::linear_recurrence<float> op;
      if (lag == -1)
        parascan::prefix_scan(ptest::exec(), op, parascan::inputs(parascan::shifted(gates, lag, edge.data()), tokens),
                              out, opts);
      else
        parascan::prefix_scan(ptest::exec(), op, parascan::inputs(parascan::shifted(gates, lag, scalar_edge), tokens),
                              out, opts);
      y.download();
      fin.download();

      recurrence_error err;
      const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
      const auto av = sh.view(a.host.data(), host_offsets), bv = sh.view(b.host.data(), host_offsets);
      const auto yv = sh.view(y.host.data(), host_offsets);
      for (index_t s = 0; s < sh.count(); ++s) {
        const index_t n = av.length_of(s);
        const auto gate = [&](index_t t) -> double {
          const index_t u = t + lag;
          if (u >= 0 && u < n) return av.at(s, u);
          return lag == -1 ? double(edge.host[s]) : double(scalar_edge);
        };
        const double x0 = f.with_initial ? init.host[s] : 0.0;
        const auto total = ptest::reference_scan(
            n, f.exclusive, f.reverse, std::pair<double, double>{x0, std::abs(x0)},
            [&](const std::pair<double, double>& x, index_t t) {
              return std::pair<double, double>{gate(t) * x.first + bv.at(s, t),
                                               std::abs(gate(t) * x.first) + std::abs(bv.at(s, t))};
            },
            [&](index_t t, const std::pair<double, double>& x) { err.add(yv.at(s, t), x.first, x.second); });
        if (f.with_final) err.add(fin.host[s], total.first, total.second);
      }
      CHECK(err.relative() <= 8 * ptest::eps_of<float>());
    });
}

namespace {

using cplx = std::complex<double>;

/// fp64 adjoint of x_p = a_p x_{p-1} + b_p (positions p in the forward's scan order, x_{-1} = x0) for the
/// upstream gradients dy_p and d(final state) gf: db_p = g_p, da_p = g_p conj(x_{p-1}), returns dL/dx0;
/// scale_b / scale_a: the size of the terms (for recurrence_error).
struct adjoint_reference {
  std::vector<cplx> da, db;
  std::vector<double> scale_a, scale_b;
  cplx dx0;
  double scale_x0;
  adjoint_reference(const std::vector<cplx>& a, const std::vector<cplx>& x_prev, const std::vector<cplx>& dy, cplx gf) {
    const std::size_t n = a.size();
    da.resize(n), db.resize(n), scale_a.resize(n), scale_b.resize(n);
    cplx carried = gf;  // h_{p+1}
    double carried_scale = std::abs(gf);
    for (std::size_t k = n; k-- > 0;) {
      const cplx g = dy[k] + carried;
      db[k] = g, scale_b[k] = std::abs(dy[k]) + carried_scale;
      da[k] = g * std::conj(x_prev[k]), scale_a[k] = scale_b[k] * std::abs(x_prev[k]);
      carried = std::conj(a[k]) * g, carried_scale = std::abs(a[k]) * scale_b[k];
    }
    dx0 = carried, scale_x0 = carried_scale;
  }
};

/// linear_recurrence_backward on every configuration: gates G, states/upstream gradients X, gradients D.
template <class G, class X, class D>
void check_backward(double tol) {
  using Acc = parascan::ops::common_accumulator_t<G, X>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive) return;  // the forward's exclusive form has no backward wrapper
    ptest::backend_offsets offs(sh);
    ptest::buffer<G> a(sh.elements());
    ptest::buffer<X> x(sh.elements()), dy(sh.elements());
    ptest::buffer<D> da(sh.elements()), db(sh.elements());
    ptest::buffer<Acc> init(sh.count()), gf(sh.count()), dx0(sh.count());
    ptest::fast_random g;
    ptest::fill(a, [&] { return ptest::store<G>(random_gate<G>(g)); });
    ptest::fill(x, [&] { return ptest::store<X>(random_token<X>(g)); });  // any states: the adjoint is linear in them
    ptest::fill(dy, [&] { return ptest::store<X>(random_token<X>(g)); });
    ptest::fill(init, [&] { return ptest::store<Acc>(random_token<Acc>(g)); });
    ptest::fill(gf, [&] { return ptest::store<Acc>(random_token<Acc>(g)); });
    ptest::fill(da, [] { return ptest::poison<D>(); });
    ptest::fill(db, [] { return ptest::poison<D>(); });
    ptest::fill(dx0, [] { return ptest::poison<Acc>(); });
    parascan::backward_options<Acc> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_final = f.with_final ? gf.data() : nullptr;
    opts.grad_initial = dx0.data();
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    parascan::linear_recurrence_backward(ptest::exec(), view(a), view(x), view(dy), view(da), view(db), opts);
    da.download(), db.download(), dx0.download();

    recurrence_error err_a, err_b, err_x0;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](auto& buf) { return sh.view(buf.host.data(), host_offsets); };
    const auto av = hv(a), xv = hv(x), dyv = hv(dy), dav = hv(da), dbv = hv(db);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = av.length_of(s);
      const auto time = [&](index_t p) { return f.reverse ? n - 1 - p : p; };
      std::vector<cplx> ap(n), xp(n), dyp(n);
      for (index_t p = 0; p < n; ++p) {
        ap[p] = ptest::to_complex(av.at(s, time(p))), dyp[p] = ptest::to_complex(dyv.at(s, time(p)));
        xp[p] = p == 0 ? (f.with_initial ? ptest::to_complex(init.host[s]) : 0.0) : ptest::to_complex(xv.at(s, time(p - 1)));
      }
      const adjoint_reference ref(ap, xp, dyp, f.with_final ? ptest::to_complex(gf.host[s]) : 0.0);
      for (index_t p = 0; p < n; ++p) {
        err_a.add(ptest::to_complex(dav.at(s, time(p))), ref.da[p], ref.scale_a[p]);
        err_b.add(ptest::to_complex(dbv.at(s, time(p))), ref.db[p], ref.scale_b[p]);
      }
      err_x0.add(ptest::to_complex(dx0.host[s]), ref.dx0, ref.scale_x0);
    }
    CHECK(err_a.relative() <= tol);
    CHECK(err_b.relative() <= tol);
    CHECK(err_x0.relative() <= tol);
  });
}

}  // namespace

TEST_CASE("linear_recurrence_backward: the adjoint reference against central differences (fp64, real and complex)") {
  // L = sum_p Re(conj(w_p) x_p) + Re(conj(wf) x_{n-1}); PyTorch's convention: grad = dL/dRe + i dL/dIm.
  const int n = 7;
  ptest::fast_random g;
  for (const bool complex : {false, true}) {
    const auto draw = [&] { return complex ? cplx(g.normal(), g.normal()) : cplx(g.normal(), 0); };
    std::vector<cplx> a(n), b(n), w(n);
    for (int p = 0; p < n; ++p) a[p] = 0.9 * draw() / std::max(1.0, std::abs(draw())), b[p] = draw(), w[p] = draw();
    cplx x0 = draw(), wf = draw();
    const auto loss = [&] {
      double l = 0;
      cplx x = x0;
      for (int p = 0; p < n; ++p) l += std::real(std::conj(w[p]) * (x = a[p] * x + b[p]));
      return l + std::real(std::conj(wf) * x);
    };
    std::vector<cplx> xprev(n);
    cplx x = x0;
    for (int p = 0; p < n; ++p) xprev[p] = x, x = a[p] * x + b[p];
    const adjoint_reference ref(a, xprev, w, wf);
    const double h = 1e-6;
    const auto numeric = [&](cplx& v) {  // dL/dRe v + i dL/dIm v
      const cplx keep = v;
      v = keep + h, v = v;
      const double re_plus = loss();
      v = keep - h;
      const double re_minus = loss();
      v = keep + cplx(0, h);
      const double im_plus = loss();
      v = keep - cplx(0, h);
      const double im_minus = loss();
      v = keep;
      return cplx((re_plus - re_minus) / (2 * h), complex ? (im_plus - im_minus) / (2 * h) : 0.0);
    };
    for (int p = 0; p < n; ++p) {
      CHECK(std::abs(numeric(a[p]) - ref.da[p]) <= 1e-7 * (1 + std::abs(ref.da[p])));
      CHECK(std::abs(numeric(b[p]) - ref.db[p]) <= 1e-7 * (1 + std::abs(ref.db[p])));
    }
    CHECK(std::abs(numeric(x0) - ref.dx0) <= 1e-7 * (1 + std::abs(ref.dx0)));
  }
}

TEST_CASE("linear_recurrence_backward: fp32 and fp64, every layout, reverse, initial and final gradients") {
  check_backward<float, float, float>(16 * ptest::eps_of<float>());
  check_backward<double, double, double>(16 * ptest::eps_of<double>());
}

TEST_CASE("linear_recurrence_backward: bf16 storage (fp32 arithmetic) and complex64") {
  // Two bf16 roundings: the gradient's at its write, and x0's (the initial state, read as the states'
  // storage type in place of x[-1]).
  check_backward<ptest::bf16, ptest::bf16, ptest::bf16>(ptest::eps_of<ptest::bf16>() + 16 * ptest::eps_of<float>());
  check_backward<ptest::complex64, ptest::complex64, ptest::complex64>(16 * ptest::eps_of<float>());
}
