// Cumulative (prefix) and chain (reduce) products of Eigen fixed-size N x N matrices, in either order.
//
// Order (the side on which each later matrix multiplies):
//   chain_order::left_to_right (default): P[t] = M[0] M[1] ... M[t]  -- the written order of a chain;
//       each later matrix multiplies on the RIGHT: P[t] = P[t-1] M[t].
//   chain_order::right_to_left:           P[t] = M[t] ... M[1] M[0]  -- the order in which the maps of
//       x[t] = M[t] x[t-1] apply (P[t] x[-1] = x[t]); each later matrix multiplies on the LEFT.
// "Later" means later in scan order: with options.reverse the scan starts at the last step, so
// left_to_right gives P[t] = M[T-1] ... M[t] and right_to_left gives P[t] = M[t] ... M[T-1].
// An initial matrix (options.initial) is the earliest factor: left_to_right P[t] = I0 M[0] ... M[t].
//
// State: the matrix itself (Eigen::Matrix<S, N, N>); identity I; lift, project, seed are the identity
// map, so outputs, initial and final values are matrices too.
//
// Precision: a product rounds about sqrt(N) ulps per factor; over T factors errors grow like sqrt(T) for
// well-conditioned (e.g. orthogonal) factors. Products of general matrices grow or shrink exponentially
// in T (Lyapunov exponents): expect overflow long before rounding matters.
#pragma once

#include <type_traits>

#include <Eigen/Core>

#include <parascan/config.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>

namespace parascan::ops {

/// Which side later matrices multiply on (see the top of this header).
enum class chain_order {
  left_to_right,  // P[t] = P[t-1] M[t]
  right_to_left,  // P[t] = M[t] P[t-1]
};

/// The matrix product operator over M = Eigen::Matrix<S, N, N>.
template <class M, chain_order Order = chain_order::left_to_right>
struct matrix_product {
  static_assert(M::RowsAtCompileTime == M::ColsAtCompileTime && M::RowsAtCompileTime != Eigen::Dynamic,
                "matrix_product: M must be a fixed-size square Eigen matrix");
  using value_type = M;

  PARASCAN_HD value_type identity() const { return M::Identity(); }
  PARASCAN_HD value_type operator()(const M& earlier, const M& later) const {
    if constexpr (Order == chain_order::left_to_right) {
      return earlier * later;
    } else {
      return later * earlier;
    }
  }
};

}  // namespace parascan::ops

namespace parascan {

using ops::chain_order;

/// Cumulative products: out[t] = M[0] ... M[t] (left_to_right) or M[t] ... M[0] (right_to_left) for every
/// sequence. `in` and `out` are views of one Eigen fixed-size square matrix type.
/// Example: parascan::matrix_chain<parascan::chain_order::right_to_left>(parascan::host{}, in, out);
template <chain_order Order = chain_order::left_to_right, class Exec, class M>
void matrix_chain(const Exec& exec, const sequences<M>& in, const sequences<std::remove_const_t<M>>& out,
                  const options<std::remove_const_t<M>>& opts = {}) {
  prefix_scan(exec, ops::matrix_product<std::remove_const_t<M>, Order>{}, in, out, opts);
}

/// Chain products: result[s] = the product of every matrix of sequence s, in the given order.
template <chain_order Order = chain_order::left_to_right, class Exec, class M>
void matrix_chain_product(const Exec& exec, const sequences<M>& in, std::remove_const_t<M>* result,
                          const options<std::remove_const_t<M>>& opts = {}) {
  reduce_scan(exec, ops::matrix_product<std::remove_const_t<M>, Order>{}, in, result, opts);
}

}  // namespace parascan
