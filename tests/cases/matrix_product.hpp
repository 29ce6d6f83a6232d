// Cases for ops/matrix_product.hpp at N = 4: cumulative products in both orders on every configuration,
// chain products (reduce), the written order of each side, and the operator laws.
// Other sizes: matrix_product_sizes.hpp.
#include "support/laws.hpp"
#include "support/matrix_product_check.hpp"

namespace {
using parascan::chain_order;
using ptest::index_t;
const auto every_config = [](auto&& f) { ptest::for_each_config(f); };
}  // namespace

TEST_CASE("matrix_chain: N=4 fp32, both orders, every configuration") {
  ptest::check_matrix_chain<float, 4, chain_order::left_to_right>(every_config, 4);
  ptest::check_matrix_chain<float, 4, chain_order::right_to_left>(every_config, 4);
}

TEST_CASE("matrix_chain: the side each order multiplies on") {
  using Mat = Eigen::Matrix<double, 2, 2>;
  ptest::buffer<Mat> m(3), out(3);
  m.host = {(Mat() << 1, 2, 3, 4).finished(), (Mat() << 0, 1, 1, 0).finished(), (Mat() << 2, 0, 0, 3).finished()};
  m.upload();
  parascan::matrix_chain(ptest::exec(), parascan::single(m.data(), 3), parascan::single(out.data(), 3));
  out.download();
  CHECK(out.host[2] == m.host[0] * m.host[1] * m.host[2]);  // left_to_right: M0 M1 M2
  parascan::matrix_chain<chain_order::right_to_left>(ptest::exec(), parascan::single(m.data(), 3),
                                                      parascan::single(out.data(), 3));
  out.download();
  CHECK(out.host[2] == m.host[2] * m.host[1] * m.host[0]);  // right_to_left: M2 M1 M0
  parascan::options<Mat> reverse;
  reverse.reverse = true;
  parascan::matrix_chain<chain_order::right_to_left>(ptest::exec(), parascan::single(m.data(), 3),
                                                      parascan::single(out.data(), 3), reverse);
  out.download();
  CHECK(out.host[0] == m.host[0] * m.host[1] * m.host[2]);  // right_to_left, reverse: suffix M0 M1 M2
}

TEST_CASE("matrix_chain_product: totals per sequence, both orders") {
  using Mat = Eigen::Matrix<float, 4, 4>;
  using MatD = Eigen::Matrix<double, 4, 4>;
  for (index_t T : ptest::lengths()) {
    const index_t B = 2, D = 3;
    ptest::buffer<Mat> m(B * D * T), r(B * D);
    ptest::fast_random g;
    ptest::fill(m, [&] { return ptest::random_reflection<Mat>(g); });
    for (int order = 0; order < 2; ++order) {
      ptest::fill(r, [] { return ptest::poison_matrix<Mat>(); });
      if (order == 0) parascan::matrix_chain_product(ptest::exec(), parascan::bdt(m.data(), B, D, T), r.data());
      else parascan::matrix_chain_product<chain_order::right_to_left>(ptest::exec(), parascan::bdt(m.data(), B, D, T), r.data());
      r.download();
      double worst = 0;
      for (index_t s = 0; s < B * D; ++s) {
        MatD ref = MatD::Identity();
        for (index_t t = 0; t < T; ++t) {
          const MatD x = m.host[s * T + t].template cast<double>();
          ref = order == 0 ? MatD(ref * x) : MatD(x * ref);
        }
        worst = std::max(worst, ptest::relative_frobenius(r.host[s], ref));
      }
      INFO("T=" << T << " order " << order);
      CHECK(worst <= 4 * ptest::eps_of<float>() * 2 * (1 + std::sqrt(double(T))));
    }
  }
}

TEST_CASE("matrix_chain: operator laws") {
  using Mat = Eigen::Matrix<double, 6, 6>;
  ptest::fast_random g;
  const auto distance = [](const Mat& x, const Mat& y) { return ptest::relative_frobenius(x, y); };
  ptest::check_operator_laws(parascan::ops::matrix_product<Mat>{}, [&] { return ptest::random_matrix<Mat>(g); },
                             distance, 1e-14, 0.0);
  ptest::check_operator_laws(parascan::ops::matrix_product<Mat, chain_order::right_to_left>{},
                             [&] { return ptest::random_matrix<Mat>(g); }, distance, 1e-14, 0.0);
}

namespace {

/// dL/dM of the prefix chain by an fp64 loop over positions p (the forward's scan order): R_p = G_p +
/// R_{p+1} M_{p+1}^T (left_to_right) or G_p + M_{p+1}^T R_{p+1} (right_to_left), R_{n-1} = G_{n-1} + gf;
/// dM_p = P_{p-1}^T R_p or R_p P_{p-1}^T; returns dL/d(initial) = R_0 M_0^T or M_0^T R_0.
template <parascan::chain_order Order>
Eigen::Matrix3d chain_adjoint_reference(const std::vector<Eigen::Matrix3d>& m, const std::vector<Eigen::Matrix3d>& p_prev,
                                        const std::vector<Eigen::Matrix3d>& g, const Eigen::Matrix3d& gf,
                                        std::vector<Eigen::Matrix3d>& dm) {
  constexpr bool l2r = Order == parascan::chain_order::left_to_right;
  const std::size_t n = m.size();
  dm.resize(n);
  Eigen::Matrix3d h = gf;  // H_{p+1}
  for (std::size_t p = n; p-- > 0;) {
    const Eigen::Matrix3d r = g[p] + h;
    dm[p] = l2r ? Eigen::Matrix3d(p_prev[p].transpose() * r) : Eigen::Matrix3d(r * p_prev[p].transpose());
    h = l2r ? Eigen::Matrix3d(r * m[p].transpose()) : Eigen::Matrix3d(m[p].transpose() * r);
  }
  return h;
}

/// matrix_chain_backward<Order> on every configuration (inclusive forwards), 3 x 3 fp32 orthogonal factors,
/// products and upstream gradients at random (the adjoint is linear in them), against the fp64 loop.
template <parascan::chain_order Order>
void check_chain_backward() {
  using Mat = Eigen::Matrix<float, 3, 3>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive) return;
    ptest::backend_offsets offs(sh);
    ptest::buffer<Mat> m(sh.elements()), p(sh.elements()), g(sh.elements()), dm(sh.elements());
    ptest::buffer<Mat> init(sh.count()), gf(sh.count()), d0(sh.count());
    ptest::fast_random r;
    ptest::fill(m, [&] { return ptest::random_reflection<Mat>(r); });
    ptest::fill(p, [&] { return ptest::random_reflection<Mat>(r); });
    ptest::fill(g, [&] { return ptest::random_matrix<Mat>(r); });
    ptest::fill(init, [&] { return ptest::random_reflection<Mat>(r); });
    ptest::fill(gf, [&] { return ptest::random_matrix<Mat>(r); });
    ptest::fill(dm, [] { return ptest::poison_matrix<Mat>(); });
    ptest::fill(d0, [] { return ptest::poison_matrix<Mat>(); });
    parascan::backward_options<Mat> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_final = f.with_final ? gf.data() : nullptr;
    opts.grad_initial = d0.data();
    const auto view = [&](ptest::buffer<Mat>& b) { return sh.view(b.data(), offs.get(sh)); };
    parascan::matrix_chain_backward<Order>(ptest::exec(), view(m), view(p), view(g), view(dm), opts);
    dm.download(), d0.download();

    ptest::error_meter err;
    const ptest::index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](ptest::buffer<Mat>& b) { return sh.view(b.host.data(), host_offsets); };
    const auto mv = hv(m), pv = hv(p), gv = hv(g), dmv = hv(dm);
    for (ptest::index_t s = 0; s < sh.count(); ++s) {
      const ptest::index_t n = mv.length_of(s);
      const auto time = [&](ptest::index_t q) { return f.reverse ? n - 1 - q : q; };
      std::vector<Eigen::Matrix3d> ms(n), ps(n), gs(n), ref;
      for (ptest::index_t q = 0; q < n; ++q) {
        ms[q] = mv.at(s, time(q)).template cast<double>(), gs[q] = gv.at(s, time(q)).template cast<double>();
        ps[q] = q > 0 ? Eigen::Matrix3d(pv.at(s, time(q - 1)).template cast<double>())
                      : (f.with_initial ? Eigen::Matrix3d(init.host[s].template cast<double>()) : Eigen::Matrix3d::Identity());
      }
      const Eigen::Matrix3d grad0 = chain_adjoint_reference<Order>(
          ms, ps, gs, f.with_final ? Eigen::Matrix3d(gf.host[s].template cast<double>()) : Eigen::Matrix3d::Zero(), ref);
      for (ptest::index_t q = 0; q < n; ++q)
        for (int i = 0; i < 9; ++i) err.add(double(dmv.at(s, time(q))(i)), ref[q](i));
      for (int i = 0; i < 9; ++i) err.add(double(d0.host[s](i)), grad0(i));
    }
    CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(sh.T))));
  });
}

/// matrix_chain_product_backward<Order> on every configuration: 3 x 3 fp32 factors that are products of two
/// reflections (not symmetric, so a factor read transposed shows), the result's gradient at random,
/// against chain_adjoint_reference with the products before each step from an fp64 loop and the upstream
/// gradient of every step zero but the last (the result's).
template <parascan::chain_order Order>
void check_chain_product_backward() {
  using Mat = Eigen::Matrix<float, 3, 3>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive || f.with_final) return;  // no exclusive reduction; grad_result is the final gradient
    ptest::backend_offsets offs(sh);
    ptest::buffer<Mat> m(sh.elements()), dm(sh.elements()), init(sh.count()), gr(sh.count()), d0(sh.count());
    ptest::fast_random r;
    ptest::fill(m, [&] { return Mat(ptest::random_reflection<Mat>(r) * ptest::random_reflection<Mat>(r)); });
    ptest::fill(init, [&] { return ptest::random_reflection<Mat>(r); });
    ptest::fill(gr, [&] { return ptest::random_matrix<Mat>(r); });
    ptest::fill(dm, [] { return ptest::poison_matrix<Mat>(); });
    ptest::fill(d0, [] { return ptest::poison_matrix<Mat>(); });
    parascan::backward_options<Mat> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_initial = d0.data();
    parascan::matrix_chain_product_backward<Order>(ptest::exec(), sh.view(m.data(), offs.get(sh)), gr.data(),
                                                   sh.view(dm.data(), offs.get(sh)), opts);
    dm.download(), d0.download();

    constexpr bool l2r = Order == parascan::chain_order::left_to_right;
    ptest::error_meter err;
    const ptest::index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto mv = sh.view(m.host.data(), host_offsets), dmv = sh.view(dm.host.data(), host_offsets);
    for (ptest::index_t s = 0; s < sh.count(); ++s) {
      const ptest::index_t n = mv.length_of(s);
      const auto time = [&](ptest::index_t q) { return f.reverse ? n - 1 - q : q; };
      Eigen::Matrix3d before = f.with_initial ? Eigen::Matrix3d(init.host[s].template cast<double>())
                                              : Eigen::Matrix3d::Identity();
      std::vector<Eigen::Matrix3d> ms(n), ps(n), gs(n, Eigen::Matrix3d::Zero()), ref;
      for (ptest::index_t q = 0; q < n; ++q) {
        ms[q] = mv.at(s, time(q)).template cast<double>(), ps[q] = before;
        before = l2r ? Eigen::Matrix3d(before * ms[q]) : Eigen::Matrix3d(ms[q] * before);
      }
      const Eigen::Matrix3d grad0 =
          chain_adjoint_reference<Order>(ms, ps, gs, gr.host[s].template cast<double>(), ref);
      for (ptest::index_t q = 0; q < n; ++q)
        for (int i = 0; i < 9; ++i) err.add(double(dmv.at(s, time(q))(i)), ref[q](i));
      for (int i = 0; i < 9; ++i) err.add(double(d0.host[s](i)), grad0(i));
    }
    CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(sh.T))));
  });
}

}  // namespace

TEST_CASE("matrix_chain_backward: the adjoint against central differences (fp64, both orders)") {
  // L = sum_t <W_t, P_t> + <Wf, P_{n-1}> (Frobenius), P from an initial matrix Q.
  using Mat = Eigen::Matrix3d;
  const int n = 5;
  ptest::fast_random r;
  std::vector<Mat> m(n), w(n), p(n), dm(n);
  for (int q = 0; q < n; ++q) m[q] = ptest::random_matrix<Mat>(r) * 0.5, w[q] = ptest::random_matrix<Mat>(r);
  Mat q0 = ptest::random_matrix<Mat>(r), wf = ptest::random_matrix<Mat>(r), d0;
  const auto run = [&](auto order) {
    constexpr auto Order = decltype(order)::value;
    constexpr bool l2r = Order == parascan::chain_order::left_to_right;
    const auto loss = [&] {
      double l = 0;
      Mat prod = q0;
      for (int q = 0; q < n; ++q) l += w[q].cwiseProduct(prod = l2r ? Mat(prod * m[q]) : Mat(m[q] * prod)).sum();
      return l + wf.cwiseProduct(prod).sum();
    };
    Mat prod = q0;
    for (int q = 0; q < n; ++q) p[q] = prod = l2r ? Mat(prod * m[q]) : Mat(m[q] * prod);
    parascan::backward_options<Mat> opts;
    opts.initial = &q0, opts.grad_final = &wf, opts.grad_initial = &d0;
    const auto v = [&](std::vector<Mat>& vec) { return parascan::single(vec.data(), n); };
    parascan::matrix_chain_backward<Order>(parascan::host{1}, v(m), v(p), v(w), v(dm), opts);
    const auto numeric = [&](double& value) {
      const double keep = value;
      value = keep + 1e-6;
      const double plus = loss();
      value = keep - 1e-6;
      const double minus = loss();
      value = keep;
      return (plus - minus) / 2e-6;
    };
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < 9; ++i) CHECK(std::abs(numeric(m[q](i)) - dm[q](i)) <= 1e-7 * (1 + std::abs(dm[q](i))));
    for (int i = 0; i < 9; ++i) CHECK(std::abs(numeric(q0(i)) - d0(i)) <= 1e-7 * (1 + std::abs(d0(i))));
  };
  run(std::integral_constant<parascan::chain_order, parascan::chain_order::left_to_right>{});
  run(std::integral_constant<parascan::chain_order, parascan::chain_order::right_to_left>{});
}

TEST_CASE("matrix_chain_backward: 3 x 3 fp32, both orders, every layout, reverse, initial and final gradients") {
  check_chain_backward<parascan::chain_order::left_to_right>();
  check_chain_backward<parascan::chain_order::right_to_left>();
}

TEST_CASE("matrix_chain_product_backward: the adjoint against central differences (fp64, both orders)") {
  // L = <W, Q M_0 ... M_{n-1}> (Frobenius) and its mirror, from an initial matrix Q.
  using Mat = Eigen::Matrix3d;
  const int n = 6;
  ptest::fast_random r;
  std::vector<Mat> m(n), dm(n);
  for (auto& x : m) x = ptest::random_matrix<Mat>(r) * 0.5;
  Mat q0 = ptest::random_matrix<Mat>(r), w = ptest::random_matrix<Mat>(r), d0;
  const auto run = [&](auto order, bool reverse) {
    constexpr auto Order = decltype(order)::value;
    INFO((Order == parascan::chain_order::left_to_right ? "left_to_right" : "right_to_left")
         << (reverse ? " reverse" : ""));
    const auto loss = [&] {
      Mat total;
      parascan::options<Mat> o;
      o.reverse = reverse, o.initial = &q0;
      parascan::matrix_chain_product<Order>(parascan::host{1}, parascan::single(m.data(), n), &total, o);
      return w.cwiseProduct(total).sum();
    };
    parascan::backward_options<Mat> opts;
    opts.reverse = reverse, opts.initial = &q0, opts.grad_initial = &d0;
    parascan::matrix_chain_product_backward<Order>(parascan::host{1}, parascan::single(m.data(), n), &w,
                                                   parascan::single(dm.data(), n), opts);
    const auto numeric = [&](double& value) {
      const double keep = value;
      value = keep + 1e-6;
      const double plus = loss();
      value = keep - 1e-6;
      const double minus = loss();
      value = keep;
      return (plus - minus) / 2e-6;
    };
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < 9; ++i) CHECK(std::abs(numeric(m[q](i)) - dm[q](i)) <= 1e-7 * (1 + std::abs(dm[q](i))));
    for (int i = 0; i < 9; ++i) CHECK(std::abs(numeric(q0(i)) - d0(i)) <= 1e-7 * (1 + std::abs(d0(i))));
  };
  using l2r = std::integral_constant<parascan::chain_order, parascan::chain_order::left_to_right>;
  using r2l = std::integral_constant<parascan::chain_order, parascan::chain_order::right_to_left>;
  for (bool reverse : {false, true}) run(l2r{}, reverse), run(r2l{}, reverse);
}

TEST_CASE("matrix_chain_product_backward: 3 x 3 fp32, both orders, every layout, reverse, initial gradient") {
  check_chain_product_backward<parascan::chain_order::left_to_right>();
  check_chain_product_backward<parascan::chain_order::right_to_left>();
}

TEST_CASE("matrix_chain_product_backward: bad arguments are refused, nothing written") {
  using Mat = Eigen::Matrix<float, 2, 2>;
  const ptest::index_t T = 5;
  ptest::buffer<Mat> m(2 * T), dm(2 * T), gr(1), gi(1);
  ptest::fill(m, [] { return Mat(Mat::Identity()); });
  ptest::fill(dm, [] { return ptest::poison_matrix<Mat>(); });
  ptest::fill(gi, [] { return ptest::poison_matrix<Mat>(); });
  const auto in = parascan::single<const Mat>(m.data(), T);
  const auto out = parascan::single(dm.data(), T);
  parascan::backward_options<Mat> opts;
  opts.grad_initial = gi.data();
  const auto refused = [&](const parascan::sequences<const Mat>& i, const Mat* g, const parascan::sequences<Mat>& o,
                           const char* message) {
    CHECK_THROWS_WITH_AS(parascan::matrix_chain_product_backward(ptest::exec(), i, g, o, opts),
                         doctest::Contains(message), parascan::error);
  };
  refused(in, nullptr, out, "grad_result: a non-null array");
  refused(in, gr.data(), parascan::single(m.data() + 1, T), "grad_in: no overlap with in");
  refused(in, gr.data(), parascan::single(m.data(), T), "grad_in: no overlap with in");
  refused(in, dm.data() + 2, out, "grad_in: no overlap with grad_result");
  refused(in, gi.data(), out, "options.grad_initial: no overlap with grad_result");
  refused(in, gr.data(), parascan::single(dm.data(), T - 1), "grad_in");
  opts.grad_final = gr.data();
  refused(in, gr.data(), out, "options.grad_final: null");
  opts.grad_final = nullptr;
  opts.exclusive = true;
  refused(in, gr.data(), out, "options.exclusive");
  dm.download(), gi.download();
  for (const Mat& d : dm.host) CHECK(d.hasNaN());
  CHECK(gi.host[0].hasNaN());
}
