// Support for the matrix operators' cases (affine recurrence, matrix products): random matrices, poisoned
// matrices, relative Frobenius errors, and a reduced configuration sweep for large matrix sizes.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <limits>

#include "numeric.hpp"

namespace ptest {

/// An Eigen fixed-size matrix of NaN (unwritten outputs show).
template <class M>
M poison_matrix() {
  return M::Constant(std::numeric_limits<typename M::Scalar>::quiet_NaN());
}

/// A random Householder reflection I - 2 v v^T / v^T v times `scale`: products of them stay
/// well-conditioned (orthogonal up to the scales), so long chains neither overflow nor lose accuracy to
/// conditioning, and every entry of the product moves.
template <class M>
M random_reflection(fast_random& g, double scale = 1.0) {
  constexpr int N = M::RowsAtCompileTime;
  Eigen::Matrix<double, N, 1> v;
  for (int i = 0; i < N; ++i) v[i] = g.normal();
  const Eigen::Matrix<double, N, N> h =
      scale * (Eigen::Matrix<double, N, N>::Identity() - (2 / v.squaredNorm()) * v * v.transpose());
  return h.template cast<typename M::Scalar>();
}

/// A contracting matrix with long memory: diagonal entries in [0.5, 0.95] plus a dense random
/// perturbation of norm ~ 0.3, so W mixes every component and its spectral radius stays below one.
template <class M>
M random_contraction(fast_random& g) {
  constexpr int N = M::RowsAtCompileTime;
  Eigen::Matrix<double, N, N> w;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i) w(i, j) = g.uniform(-1, 1) * 0.25 / std::sqrt(double(N)) + (i == j ? g.uniform(0.5, 0.95) : 0.0);
  return w.template cast<typename M::Scalar>();
}

template <class M>
M random_matrix(fast_random& g) {
  M m;
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i < m.rows(); ++i) m(i, j) = typename M::Scalar(g.normal());
  return m;
}

/// ||got - ref||_F / ||ref||_F, with NaN anywhere in got giving infinity.
template <class A, class B>
double relative_frobenius(const Eigen::MatrixBase<A>& got, const Eigen::MatrixBase<B>& ref) {
  const auto g = got.template cast<double>().eval();
  if (!(g.array() == g.array()).all()) return std::numeric_limits<double>::infinity();
  const double d = (g - ref.template cast<double>()).norm(), r = ref.template cast<double>().norm();
  return d / (r > 0 ? r : 1.0);
}

/// A reduced sweep for heavy states: every layout, the lengths up to max_T, and every `flag_step`-th
/// options combination (plus the last, which has them all), in doctest's context.
template <class F>
void for_each_small_config(index_t max_T, std::size_t flag_step, F&& f) {
  for (layout_kind kind : all_layouts())
    for (index_t T : lengths()) {
      if (T > max_T) continue;
      const auto flags = all_flags();
      for (std::size_t i = 0; i < flags.size(); ++i) {
        if (i % flag_step != 0 && i != flags.size() - 1) continue;
        const shape sh = shape::make(kind, T);
        INFO(std::string(backend_name) << " " << sh.describe() << " " << describe(flags[i]));
        f(sh, flags[i]);
      }
    }
}

}  // namespace ptest
