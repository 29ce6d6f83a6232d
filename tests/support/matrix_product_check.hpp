// The matrix chain check shared by cases/matrix_product.hpp and cases/matrix_product_sizes.hpp.
#pragma once

#include <parascan/ops/matrix_product.hpp>

#include "matrices.hpp"

namespace ptest {

/// Runs matrix_chain<Order> over N x N matrices of S (scaled random reflections) on the configurations
/// `sweep` visits, against an fp64 sequential reference: every output's relative Frobenius error stays
/// below ulps * eps(S) * sqrt(N) * (1 + sqrt(T)) (rounding errors of a product of T well-conditioned
/// factors add up like a random walk).
template <class S, int N, parascan::chain_order Order, class Sweep>
void check_matrix_chain(Sweep&& sweep, double ulps) {
  using Mat = Eigen::Matrix<S, N, N>;
  using MatD = Eigen::Matrix<double, N, N>;
  sweep([&](const shape& sh, const scan_flags& f) {
    const double tol = ulps * eps_of<S>() * std::sqrt(double(N)) * (1 + std::sqrt(double(sh.T)));
    backend_offsets offs(sh);
    buffer<Mat> m(sh.elements()), out(sh.elements()), init(sh.count()), fin(sh.count());
    fast_random g;
    fill(m, [&] { return random_reflection<Mat>(g, g.uniform(0.95, 1.05)); });
    fill(init, [&] { return random_reflection<Mat>(g, g.uniform(0.5, 2)); });
    fill(out, [] { return poison_matrix<Mat>(); });
    fill(fin, [] { return poison_matrix<Mat>(); });

    const auto opts = ptest::options_for<Mat>(f, init.data(), fin.data());
    parascan::matrix_chain<Order>(exec(), sh.view(m.data(), offs.get(sh)), sh.view(out.data(), offs.get(sh)), opts);
    out.download();
    fin.download();

    double worst = 0;
    const auto add = [&](const Mat& got, const MatD& ref) {
      const double e = relative_frobenius(got, ref);
      if (!(e <= worst)) worst = e;
    };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto mv = sh.view(m.host.data(), host_offsets);
    const auto ov = sh.view(out.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const MatD start = f.with_initial ? MatD(init.host[s].template cast<double>()) : MatD::Identity();
      const MatD total = reference_scan(
          mv.length_of(s), f.exclusive, f.reverse, start,
          [&](const MatD& c, index_t t) -> MatD {
            const MatD x = mv.at(s, t).template cast<double>();
            return Order == parascan::chain_order::left_to_right ? MatD(c * x) : MatD(x * c);
          },
          [&](index_t t, const MatD& c) { add(ov.at(s, t), c); });
      if (f.with_final) add(fin.host[s], total);
    }
    CHECK(worst <= tol);
  });
}

}  // namespace ptest
