// Cases for ops/basic_backward.hpp: the backward passes of cumsum, cumprod, cummax and cummin on every
// layout and option, from the forward's own outputs, against fp64 references computed from the inputs
// (sums over the outputs each step reached; cumprod's gradient with zeros among the factors; each
// extremum's gradient sent to the latest step holding it, ties and NaN included), and cumprod's against
// central differences.
#include <cmath>
#include <vector>

#include <parascan/ops/basic_backward.hpp>

#include "support/numeric.hpp"

namespace {
using ptest::index_t;

enum class scan_kind { sum, product, max, min };

/// The fp64 gradients of one sequence (in the forward's scan order p = 0 .. n-1) of the scan `kind` from
/// its inputs xs, initial value `init` and upstream gradients dys, plus gf for the final value; `scale`
/// holds the size of each gradient's terms; returns dL/d(initial). Output u covers the steps before it
/// (exclusive) or up to it, the final value all of them.
double reference_gradient(scan_kind kind, bool exclusive, const std::vector<double>& xs, double init,
                          const std::vector<double>& dys, double gf, std::vector<double>& dx,
                          std::vector<double>& scale, double& init_scale) {
  const std::size_t n = xs.size();
  dx.assign(n, 0.0), scale.assign(n, 0.0);
  // The gradient of the outputs covering exactly the steps up to p (last step p), and of those covering
  // none (only the initial value): dy[p] (inclusive) or dy[p + 1] (exclusive), gf at the end.
  // `ending_size` is the size of those terms (|dy| + |gf|, not |dy + gf|: the backward may add them
  // after scaling, so their cancellation is no measure of its rounding).
  std::vector<double> ending(n, 0.0), ending_size(n, 0.0);
  double ending_before = exclusive && n > 0 ? dys[0] : 0.0;
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t u = exclusive ? p + 1 : p;
    ending[p] = (u < n ? dys[u] : 0.0) + (p + 1 == n ? gf : 0.0);
    ending_size[p] = (u < n ? std::fabs(dys[u]) : 0.0) + (p + 1 == n ? std::fabs(gf) : 0.0);
  }
  double ending_before_size = std::fabs(ending_before);
  if (n == 0) ending_before += gf, ending_before_size += std::fabs(gf);
  init_scale = 0;
  if (kind == scan_kind::sum) {
    double sum = 0, size = 0;  // over the outputs that step p reached
    for (std::size_t p = n; p-- > 0;) {
      sum += ending[p], size += ending_size[p];
      dx[p] = sum, scale[p] = size;
    }
    init_scale = size + ending_before_size;
    return sum + ending_before;
  }
  if (kind == scan_kind::product) {
    // h[p]: the gradient reaching the product through step p from every output covering it; dx[p] =
    // h[p] times the product before p (no division: zeros are exact).
    std::vector<double> before(n);
    double acc = init;
    for (std::size_t p = 0; p < n; ++p) before[p] = acc, acc *= xs[p];
    double h = 0, size = 0;
    for (std::size_t p = n; p-- > 0;) {
      h = ending[p] + (p + 1 < n ? xs[p + 1] * h : 0.0);
      size = ending_size[p] + (p + 1 < n ? std::fabs(xs[p + 1]) * size : 0.0);
      dx[p] = h * before[p], scale[p] = size * std::fabs(before[p]);
    }
    if (n == 0) return init_scale = ending_before_size, ending_before;
    init_scale = std::fabs(xs[0]) * size + ending_before_size;
    return xs[0] * h + ending_before;
  }
  // Extrema: the forward's value (a NaN persists, ties keep the later value) and the latest step holding
  // it (the latest NaN where it is NaN), step by step; each output's gradient goes there.
  const bool is_max = kind == scan_kind::max;
  double value = init, d_init = ending_before;
  init_scale = ending_before_size;
  std::ptrdiff_t holder = -1;
  for (std::size_t p = 0; p < n; ++p) {
    const double x = xs[p];
    if (!(value != value || (is_max ? value > x : value < x))) value = x;
    if (value != value ? x != x : x == value) holder = std::ptrdiff_t(p);
    if (holder < 0) d_init += ending[p], init_scale += ending_size[p];
    else dx[std::size_t(holder)] += ending[p], scale[std::size_t(holder)] += ending_size[p];
  }
  return d_init;
}

template <class T>
void run_backward(scan_kind kind, const parascan::sequences<const T>& x, const parascan::sequences<const T>& y,
                  const parascan::sequences<const T>& dy, const parascan::sequences<T>& dx,
                  const parascan::backward_options<T>& opts) {
  switch (kind) {
    case scan_kind::sum: return parascan::cumsum_backward(ptest::exec(), dy, dx, opts);
    case scan_kind::product: return parascan::cumprod_backward(ptest::exec(), x, y, dy, dx, opts);
    case scan_kind::max: return parascan::cummax_backward(ptest::exec(), x, y, dy, dx, opts);
    case scan_kind::min: return parascan::cummin_backward(ptest::exec(), x, y, dy, dx, opts);
  }
}

/// One backward pass on every configuration, inputs in T: sums of normal values, products of factors
/// near 1 with exact zeros and signs, extrema of small integers (ties) with NaN among them. End gradients
/// (grad_final, grad_initial) with inclusive forwards.
template <class T>
void check_basic_backward(scan_kind kind) {
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<T> x(sh.elements()), y(sh.elements()), dy(sh.elements()), dx(sh.elements());
    ptest::buffer<T> init(sh.count()), fin(sh.count()), gf(sh.count()), gi(sh.count());
    ptest::fast_random g;
    ptest::fill(x, [&]() -> T {
      if (kind == scan_kind::sum) return T(g.normal());
      if (kind == scan_kind::product) {
        const double u = g.uniform(0, 1);
        return u < 0.03 ? T(0) : T((u < 0.5 ? -1 : 1) * g.uniform(0.9, 1.1));
      }
      return g.uniform(0, 1) < 0.01 ? T(NAN) : T(std::floor(g.uniform(-4, 4)));
    });
    ptest::fill(init, [&]() -> T { return kind == scan_kind::product ? T(g.uniform(0.5, 2)) : T(std::floor(g.uniform(-4, 4))); });
    ptest::fill(dy, [&] { return T(g.normal()); });
    ptest::fill(gf, [&] { return T(g.normal()); });
    ptest::fill(dx, [] { return ptest::poison<T>(); });
    ptest::fill(gi, [] { return ptest::poison<T>(); });
    const auto view = [&](ptest::buffer<T>& b) { return sh.view(b.data(), offs.get(sh)); };
    const auto in = [&](ptest::buffer<T>& b) { return parascan::sequences<const T>(view(b)); };
    const parascan::options<T> forward = ptest::options_for<T>(f, init.data(), fin.data());
    switch (kind) {
      case scan_kind::sum: parascan::cumsum(ptest::exec(), in(x), view(y), forward); break;
      case scan_kind::product: parascan::cumprod(ptest::exec(), in(x), view(y), forward); break;
      case scan_kind::max: parascan::cummax(ptest::exec(), in(x), view(y), forward); break;
      case scan_kind::min: parascan::cummin(ptest::exec(), in(x), view(y), forward); break;
    }
    const bool ends = !f.exclusive;
    parascan::backward_options<T> opts;
    opts.reverse = f.reverse, opts.exclusive = f.exclusive, opts.initial = forward.initial;
    opts.grad_final = ends && f.with_final ? gf.data() : nullptr;
    opts.grad_initial = ends ? gi.data() : nullptr;
    run_backward<T>(kind, in(x), in(y), in(dy), view(dx), opts);
    dx.download(), gi.download();

    double worst = 0;
    const auto keep = [&](double got, double want, double size) {
      worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - want) / (size + 1e-300));
    };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto xv = sh.view(x.host.data(), host_offsets), dyv = sh.view(dy.host.data(), host_offsets),
               dxv = sh.view(dx.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = xv.length_of(s);
      const auto time = [&](index_t p) { return f.reverse ? n - 1 - p : p; };
      const std::size_t steps = std::size_t(n);
      std::vector<double> xs(steps), dys(steps), ref, scale;
      for (index_t p = 0; p < n; ++p)
        xs[std::size_t(p)] = double(xv.at(s, time(p))), dys[std::size_t(p)] = double(dyv.at(s, time(p)));
      const double start = f.with_initial ? double(init.host[std::size_t(s)])
                           : kind == scan_kind::product ? 1.0
                           : kind == scan_kind::sum     ? 0.0
                           : kind == scan_kind::max     ? -INFINITY
                                                        : INFINITY;
      double init_scale = 0;
      const double d_init = reference_gradient(kind, f.exclusive, xs, start, dys,
                                               opts.grad_final != nullptr ? double(gf.host[std::size_t(s)]) : 0.0,
                                               ref, scale, init_scale);
      for (index_t p = 0; p < n; ++p)
        keep(double(dxv.at(s, time(p))), ref[std::size_t(p)], scale[std::size_t(p)]);
      if (ends) keep(double(gi.host[std::size_t(s)]), d_init, init_scale);
    }
    CHECK(worst <= 16 * ptest::eps_of<T>() * (1 + std::sqrt(double(sh.T))));
  });
}

}  // namespace

TEST_CASE("cumsum_backward: fp32 and fp64, every layout and option") {
  check_basic_backward<float>(scan_kind::sum);
  check_basic_backward<double>(scan_kind::sum);
}

TEST_CASE("cumprod_backward: zeros and signs among the factors, every layout and option") {
  check_basic_backward<float>(scan_kind::product);
  check_basic_backward<double>(scan_kind::product);
}

TEST_CASE("cummax_backward and cummin_backward: ties and NaN, every layout and option") {
  check_basic_backward<float>(scan_kind::max);
  check_basic_backward<double>(scan_kind::min);
}

TEST_CASE("cumprod_backward: against central differences (fp64, zeros among the factors)") {
  // L = sum w[t] y[t] + wf F, y = cumprod(x from I), inclusive and exclusive (no end gradients there).
  ptest::fast_random r;
  const int n = 7;
  std::vector<double> x(n), w(n), dx(n);
  for (double& v : x) v = r.uniform(-1.5, 1.5);
  x[2] = 0;  // a zero factor: its neighbours' gradients vanish past it, its own does not
  for (double& v : w) v = r.normal();
  double init = 0.7, wf = -0.4, d_init = 0;
  for (const bool exclusive : {false, true}) {
    INFO((exclusive ? "exclusive" : "inclusive"));
    const auto loss = [&] {
      std::vector<double> y(n);
      double final_value = 0;
      parascan::options<double> o;
      o.exclusive = exclusive, o.initial = &init, o.final = &final_value;
      parascan::cumprod(parascan::host{1}, parascan::single<const double>(x.data(), n), parascan::single(y.data(), n), o);
      double l = exclusive ? 0 : wf * final_value;
      for (int t = 0; t < n; ++t) l += w[t] * y[t];
      return l;
    };
    std::vector<double> y(n);
    parascan::options<double> o;
    o.exclusive = exclusive, o.initial = &init;
    parascan::cumprod(parascan::host{1}, parascan::single<const double>(x.data(), n), parascan::single(y.data(), n), o);
    parascan::backward_options<double> opts;
    opts.exclusive = exclusive, opts.initial = &init;
    if (!exclusive) opts.grad_final = &wf, opts.grad_initial = &d_init;
    parascan::cumprod_backward(parascan::host{1}, parascan::single<const double>(x.data(), n),
                               parascan::single<const double>(y.data(), n), parascan::single<const double>(w.data(), n),
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
    if (!exclusive) CHECK(std::abs(numeric(init) - d_init) <= 1e-7 * (1 + std::abs(d_init)));
  }
}

TEST_CASE("cumprod_backward and cummax_backward: end gradients of an exclusive forward are refused") {
  const index_t T = 5;
  ptest::buffer<float> x(T), y(T), dy(T), dx(T), gf(1);
  ptest::fill(dx, [] { return ptest::poison<float>(); });
  const auto in = [&](ptest::buffer<float>& b) { return parascan::single<const float>(b.data(), T); };
  parascan::backward_options<float> opts;
  opts.exclusive = true;
  opts.grad_final = gf.data();
  CHECK_THROWS_WITH_AS(parascan::cumprod_backward(ptest::exec(), in(x), in(y), in(dy), parascan::single(dx.data(), T), opts),
                       doctest::Contains("options.grad_final: null with an exclusive forward"), parascan::error);
  CHECK_THROWS_WITH_AS(parascan::cummax_backward(ptest::exec(), in(x), in(y), in(dy), parascan::single(dx.data(), T), opts),
                       doctest::Contains("options.grad_final: null with an exclusive forward"), parascan::error);
  dx.download();
  for (float d : dx.host) CHECK(std::isnan(d));
}
