// Cases for the basic operators (ops/basic.hpp): sum, product, max, min.
#include <parascan/ops/basic.hpp>

namespace {

using ptest::index_t;

// Runs a prefix scan of op over a fresh random input on every configuration and compares it with the
// fp64 sequential reference `combine`. Rounding errors of a running sum grow like sqrt(T): the relative
// (2-norm) tolerance is eps * (8 + 2 sqrt(T)) for the storage type's epsilon `eps`.
template <class Op, class T, class Gen, class Combine>
void check_scalar_op(const Op& op, Gen gen, double identity, Combine combine, double eps) {
  using Y = parascan::output_t<Op>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<T> x(sh.elements());
    ptest::buffer<Y> y(sh.elements()), init(sh.count()), fin(sh.count());
    ptest::fill(x, gen);
    ptest::fill(init, [&] { return Y(gen()); });
    ptest::fill(y, [] { return ptest::poison<Y>(); });
    ptest::fill(fin, [] { return ptest::poison<Y>(); });

    const auto opts = ptest::options_for<Y>(f, init.data(), fin.data());
    parascan::prefix_scan(ptest::exec(), op, sh.view(x.data(), offs.get(sh)), sh.view(y.data(), offs.get(sh)), opts);
    y.download();
    fin.download();

    ptest::error_meter err;
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = sh.view(x.host.data(), sh.packed() ? sh.offsets.data() : nullptr).length_of(s);
      const double start = f.with_initial ? double(init.host[s]) : identity;
      const double total = ptest::reference_scan(
          n, f.exclusive, f.reverse, start,
          [&](double c, index_t t) { return combine(c, double(ptest::host_at(x.host, sh, s, t))); },
          [&](index_t t, double c) { err.add(double(ptest::host_at(y.host, sh, s, t)), c); });
      if (f.with_final) err.add(double(fin.host[s]), total);
    }
    CHECK(err.relative() <= eps * (8 + 2 * std::sqrt(double(sh.T))));
  });
}

}  // namespace

TEST_CASE("sum: float and double against the fp64 reference") {
  check_scalar_op<parascan::ops::sum<float>, float>(
      parascan::ops::sum<float>{}, [] { return float(ptest::normal()); }, 0.0,
      [](double c, double x) { return c + x; }, 6e-8);
  check_scalar_op<parascan::ops::sum<double>, double>(
      parascan::ops::sum<double>{}, [] { return ptest::normal(); }, 0.0, [](double c, double x) { return c + x; },
      1.2e-16);
}

TEST_CASE("max and min propagate values and NaN") {
  check_scalar_op<parascan::ops::max<float>, float>(
      parascan::ops::max<float>{}, [] { return float(ptest::normal()); }, -INFINITY,
      [](double c, double x) { return std::isnan(c) || c > x ? c : x; }, 0.0);
  check_scalar_op<parascan::ops::min<float>, float>(
      parascan::ops::min<float>{}, [] { return ptest::uniform(0, 1) < 0.001 ? NAN : float(ptest::normal()); },
      INFINITY, [](double c, double x) { return std::isnan(c) || c < x ? c : x; }, 0.0);
}

TEST_CASE("product of values near one") {
  check_scalar_op<parascan::ops::product<double>, double>(
      parascan::ops::product<double>{}, [] { return ptest::uniform(0.999, 1.001); }, 1.0,
      [](double c, double x) { return c * x; }, 1.2e-16);
}

TEST_CASE("cumsum, cumprod, cummax, cummin wrappers") {
  const index_t T = 5000;
  ptest::buffer<ptest::bf16> x(T);
  ptest::buffer<float> y(T);
  ptest::fill(x, [] { return ptest::bf16(float(ptest::uniform(0.999, 1.001))); });
  const auto in = parascan::single(x.data(), T);
  const auto out = parascan::single(y.data(), T);
  const auto check = [&](auto&& scan, double start, auto combine, double tol) {
    scan(ptest::exec(), in, out, parascan::options<float>{});
    y.download();
    ptest::error_meter err;
    double c = start;
    for (index_t t = 0; t < T; ++t) err.add(y.host[t], c = combine(c, double(float(x.host[t]))));
    CHECK(err.relative() <= tol);
  };
  const double tol = 6e-8 * (8 + 2 * std::sqrt(double(T)));  // fp32 accumulation of bf16 inputs
  check([](auto&&... a) { parascan::cumsum(a...); }, 0.0, [](double c, double v) { return c + v; }, tol);
  check([](auto&&... a) { parascan::cumprod(a...); }, 1.0, [](double c, double v) { return c * v; }, tol);
  check([](auto&&... a) { parascan::cummax(a...); }, -INFINITY, [](double c, double v) { return std::max(c, v); }, 0.0);
  check([](auto&&... a) { parascan::cummin(a...); }, INFINITY, [](double c, double v) { return std::min(c, v); }, 0.0);
}
