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
          const MatD x = m.host[s * T + t].cast<double>();
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
