// Affine (non-diagonal) matrix recurrence x[t] = W[t] x[t-1] + b[t], with Eigen fixed-size N x N
// matrices (N = 2..32) of float or double.
//
// Math: step t is the affine map x -> W x + b. Composing "first (W1, b1), then (W2, b2)" gives
//   (W1, b1) . (W2, b2) = (W2 W1, W2 b1 + b2)
// (the later matrix multiplies from the left), associative with identity (I, 0). The scan state after
// step t is the composition of steps 0..t; its b is x[t] from x[-1] = 0; seed(x0) = (I, x0) starts it
// from x0 instead.
//
// State: affine_state<S, N>{W, b}: an Eigen::Matrix<S, N, N> and an Eigen::Matrix<S, N, 1> (column-major,
// Eigen's default). Inputs, in this order: W[t], b[t] -> lift(W, b); any Eigen matrix expression of the
// right size converts (row-major storage or another scalar type, cast to S). project(state) = x (b).
//
// Cost: a combine is an N x N product and a matrix-vector product, N^3 + N^2 multiply-adds, against N^2
// for the sequential recurrence: a parallel scan pays N times the work of a sequential one, which the
// engine weighs for large N (see the design notes). The state is 4 (N^2 + N) bytes in fp32: 4.2 kB at N=32.
//
// Precision: for contracting W (spectral radius < 1) errors do not grow with T; each combine rounds
// about sqrt(N) ulps in the products. Products are written with Eigen's operator*, which Eigen evaluates
// coefficient-wise for small fixed sizes and in device code (EIGEN_DEVICE_FUNC; nvcc needs
// --expt-relaxed-constexpr and warning 20012 suppressed).
#pragma once

#include <type_traits>

#include <Eigen/Core>

#include <parascan/affine_form.hpp>
#include <parascan/config.hpp>
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>
#include <parascan/outputs.hpp>
#include <parascan/shifted.hpp>
#include <parascan/validate.hpp>

namespace parascan::ops {

/// The affine map x -> W x + b.
template <class S, int N>
struct affine_state {
  Eigen::Matrix<S, N, N> W;
  Eigen::Matrix<S, N, 1> b;
};

/// The operator of x[t] = W[t] x[t-1] + b[t] over N x N matrices of S.
template <class S, int N>
struct affine_recurrence {
  static_assert(N >= 1, "affine_recurrence: N is a fixed size >= 1");
  using matrix = Eigen::Matrix<S, N, N>;
  using vector = Eigen::Matrix<S, N, 1>;
  using value_type = affine_state<S, N>;

  PARASCAN_HD value_type identity() const { return {matrix::Identity(), vector::Zero()}; }
  /// earlier first, then later: (W2 W1, W2 b1 + b2).
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return {later.W * earlier.W, later.W * earlier.b + later.b};
  }
  /// One step from W[t] and b[t] (any N x N and N x 1 Eigen matrices; cast to S).
  template <class MW, class VB>
  PARASCAN_HD value_type lift(const Eigen::MatrixBase<MW>& W, const Eigen::MatrixBase<VB>& b) const {
    static_assert(MW::RowsAtCompileTime == N && MW::ColsAtCompileTime == N, "affine_recurrence: W must be N x N");
    static_assert(VB::RowsAtCompileTime == N && VB::ColsAtCompileTime == 1, "affine_recurrence: b must be N x 1");
    return {W.template cast<S>(), b.template cast<S>()};
  }
  PARASCAN_HD vector project(const value_type& s) const { return s.b; }
  /// The state whose output is x0: the constant map to x0 (W = I keeps later products right).
  PARASCAN_HD value_type seed(const vector& x0) const { return {matrix::Identity(), x0}; }
  bool finite(const value_type& s) const { return s.W.allFinite() && s.b.allFinite(); }
};

/// The adjoint of the affine recurrence: a reverse, exclusive scan over W, the upstream gradient dy
/// (dL/dx[t] of each output alone) and the forward states one step behind, x[t-1]. Its state carries
/// h[t] = W[t]^T (dy[t] + h[t+1]), the gradient reaching x[t-1] through step t, as the affine map
/// h -> W^T h + W^T dy (so affine_recurrence's combine composes it); before step t it holds h[t+1], and
/// it emits two outputs,
///   dL/db[t] = g[t] = dL/dx[t] = dy[t] + h[t+1],   dL/dW[t] = g[t] x[t-1]^T;
/// the total is h[0] = dL/dx0, and seeding with dL/d(final state) adds it to g at the last step.
template <class S, int N>
struct affine_recurrence_adjoint {
  using forward = affine_recurrence<S, N>;
  using matrix = typename forward::matrix;
  using vector = typename forward::vector;
  using value_type = typename forward::value_type;
  forward rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  template <class MW, class VG, class VX>
  PARASCAN_HD value_type lift(const Eigen::MatrixBase<MW>& W, const Eigen::MatrixBase<VG>& dy,
                              const Eigen::MatrixBase<VX>&) const {
    const matrix Wt = W.template cast<S>().transpose();
    return {Wt, Wt * dy.template cast<S>()};
  }
  PARASCAN_HD vector project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const vector& h) const { return rec.seed(h); }
  bool finite(const value_type& s) const { return rec.finite(s); }
  /// (dL/db[t], dL/dW[t]), for parascan::outputs(grad_b, grad_W).
  template <class MW, class VG, class VX>
  PARASCAN_HD value_pack<vector, matrix> emit(const value_type& s, const Eigen::MatrixBase<MW>&,
                                              const Eigen::MatrixBase<VG>& dy,
                                              const Eigen::MatrixBase<VX>& x_prev) const {
    const vector g = dy.template cast<S>() + s.b;
    return values(g, matrix(g * x_prev.template cast<S>().transpose()));
  }
};

/// The operator for W stored as the Eigen matrix type M.
template <class M>
using affine_recurrence_for =
    affine_recurrence<typename std::remove_cv_t<M>::Scalar, std::remove_cv_t<M>::RowsAtCompileTime>;

}  // namespace parascan::ops

namespace parascan {

/// The CUDA engine walks many sequences in time (W x + b a step) for float and double at N = 2, 4, 8, 16,
/// 32 (affine_form.hpp).
template <class S, int N>
struct affine_form<ops::affine_recurrence<S, N>> {
  static constexpr bool available =
      (std::is_same<S, float>::value || std::is_same<S, double>::value) && N >= 2 && N <= 32 && (N & (N - 1)) == 0;
  using scalar = S;
  static constexpr int size = N;
};

/// x[t] = W[t] x[t-1] + b[t] for every sequence; x[-1] = opts.initial (or 0). W, b and x are views of
/// Eigen fixed-size matrices (N x N, N x 1, N x 1) of one shape. opts.initial / opts.final hold one
/// Eigen::Matrix<S, N, 1> per sequence. `exec` is parascan::host{...} or parascan::cuda{...}.
template <class Exec, class MW, class VB, class VX>
void affine_recurrence(const Exec& exec, const sequences<MW>& W, const sequences<VB>& b, const sequences<VX>& x,
                       const options<typename ops::affine_recurrence_for<MW>::vector>& opts = {}) {
  prefix_scan(exec, ops::affine_recurrence_for<MW>{}, parascan::inputs(W, b), x, opts);
}

/// Gradients of x = affine_recurrence(W, b, x, {reverse, initial}) for a loss L, from W, the forward's
/// outputs `x` and the upstream gradient `grad_x` (dL/dx[t] of each output alone, N x 1): grad_W = dL/dW
/// (N x N, g[t] x[t-1]^T), grad_b = dL/db; opts.grad_final adds dL/d(final state), opts.grad_initial
/// receives dL/d(initial state). All views share one shape (any layout). One reverse scan through the
/// engine (ops::affine_recurrence_adjoint) writing both gradients, as linear_recurrence_backward.
template <class Exec, class MW, class VX, class VG, class MDW, class VDB>
void affine_recurrence_backward(const Exec& exec, const sequences<MW>& W, const sequences<VX>& x,
                                const sequences<VG>& grad_x, const sequences<MDW>& grad_W,
                                const sequences<VDB>& grad_b,
                                const backward_options<typename ops::affine_recurrence_for<MW>::vector>& opts = {}) {
  using adjoint_t = ops::affine_recurrence_adjoint<typename std::remove_cv_t<MW>::Scalar,
                                                   std::remove_cv_t<MW>::RowsAtCompileTime>;
  using vector = typename adjoint_t::vector;
  detail::check_backward_call(exec, W, x, grad_x, grad_W, &grad_b, opts, {"W", "x", "grad_x", "grad_W", "grad_b"});
  const auto x_prev = parascan::shifted(x, previous_step(opts), vector(vector::Zero()), opts.initial);
  prefix_scan(exec, adjoint_t{}, parascan::inputs(W, grad_x, x_prev), parascan::outputs(grad_b, grad_W),
              adjoint_options(opts));
}

}  // namespace parascan
