// Cases for ops/affine_recurrence.hpp at N = 4: every configuration in fp32 and fp64, the operator laws,
// Eigen expression inputs. Other sizes: affine_recurrence_sizes.hpp.
#include "support/affine_check.hpp"
#include "support/laws.hpp"

namespace {
const auto every_config = [](auto&& f) { ptest::for_each_config(f); };
}

TEST_CASE("affine_recurrence: N=4, fp32 and fp64, every configuration") {
  ptest::check_affine_recurrence<float, 4>(every_config, 16);
  ptest::check_affine_recurrence<double, 4>(every_config, 16);
}

TEST_CASE("affine_recurrence: operator laws") {
  using op_t = parascan::ops::affine_recurrence<double, 5>;
  ptest::fast_random g;
  ptest::check_operator_laws(
      op_t{},
      [&] { return op_t{}.lift(ptest::random_matrix<op_t::matrix>(g), ptest::random_matrix<op_t::vector>(g)); },
      [](const op_t::value_type& x, const op_t::value_type& y) {
        return std::max(ptest::relative_frobenius(x.W, y.W), ptest::relative_frobenius(x.b, y.b));
      },
      1e-14, 0.0);
}

TEST_CASE("affine_recurrence: row-major W lifts like its column-major copy") {
  using op_t = parascan::ops::affine_recurrence<float, 3>;
  ptest::fast_random g;
  const Eigen::Matrix<float, 3, 3, Eigen::RowMajor> w = ptest::random_matrix<op_t::matrix>(g);
  const Eigen::Vector3d b = ptest::random_matrix<Eigen::Vector3d>(g);
  const auto s = op_t{}.lift(w, b);
  CHECK(s.W == op_t::matrix(w));
  CHECK(s.b == b.cast<float>());
}
