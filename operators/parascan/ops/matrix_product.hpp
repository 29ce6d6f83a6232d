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
#include <vector>

#include <Eigen/Core>

#include <parascan/chain_order.hpp>
#include <parascan/config.hpp>
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/matrix_form.hpp>
#include <parascan/options.hpp>
#include <parascan/policy.hpp>
#include <parascan/shifted.hpp>
#include <parascan/validate.hpp>

namespace parascan::ops {

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

/// The same products, opted in to tensor cores where the CUDA engine's warps share them: fp32 N x N with N
/// = 16 or 32, later factors on the right (left_to_right column-major, right_to_left row-major), sm_80
/// on. Each product is 3xTF32 (cuda/matrix.cuh): about fp32's rounding per product, but toward zero
/// within each block of 8 terms, so errors grow like T rather than sqrt(T) over a chain of T factors
/// (32 x 32 orthogonal factors, 1024 steps: 3.1e-5 largest relative error against 2.6e-6 with FMAs; H200
/// 0.303 against 0.33-0.34 ms over (64, 1024) chains). Elsewhere (host, fp64, other sizes or orders)
/// exactly matrix_product. Use it as the operator of prefix_scan / reduce_scan.
template <class M, chain_order Order = chain_order::left_to_right>
struct matrix_product_3xtf32 : matrix_product<M, Order> {};

/// The adjoint of the prefix chain: a reverse, exclusive scan over M, the upstream gradient G (dL/dP[t] of
/// each product alone) and the products one step behind. With R[t] = dL/dP[t] through every later
/// product, its state carries H[t], the gradient that reaches P[t-1] through step t:
///   left_to_right (P[t] = P[t-1] M[t]): H[t] = (G[t] + H[t+1]) M[t]^T, the map X -> X M^T + G M^T;
///   right_to_left (P[t] = M[t] P[t-1]): H[t] = M[t]^T (G[t] + H[t+1]), the map X -> M^T X + M^T G;
/// before step t it holds H[t+1], R[t] = G[t] + H[t+1], and step t emits dL/dM[t] = P[t-1]^T R[t]
/// (left_to_right) or R[t] P[t-1]^T (right_to_left). The total is H[0] = dL/d(initial matrix).
template <class M, chain_order Order = chain_order::left_to_right>
struct matrix_chain_adjoint {
  /// The map X -> X A + C (left_to_right) or A X + C (right_to_left).
  struct value_type {
    M A, C;
  };
  PARASCAN_HD value_type identity() const { return {M::Identity(), M::Zero()}; }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    if constexpr (Order == chain_order::left_to_right)
      return {earlier.A * later.A, earlier.C * later.A + later.C};
    else
      return {later.A * earlier.A, later.A * earlier.C + later.C};
  }
  template <class MM, class MG, class MP>
  PARASCAN_HD value_type lift(const Eigen::MatrixBase<MM>& m, const Eigen::MatrixBase<MG>& g,
                              const Eigen::MatrixBase<MP>&) const {
    const M mt = m.transpose();
    if constexpr (Order == chain_order::left_to_right)
      return {mt, g * mt};
    else
      return {mt, mt * g};
  }
  PARASCAN_HD M project(const value_type& s) const { return s.C; }
  PARASCAN_HD value_type seed(const M& h) const { return {M::Identity(), h}; }
  template <class MM, class MG, class MP>
  PARASCAN_HD M emit(const value_type& s, const Eigen::MatrixBase<MM>&, const Eigen::MatrixBase<MG>& g,
                     const Eigen::MatrixBase<MP>& p_prev) const {
    const M r = g + s.C;
    if constexpr (Order == chain_order::left_to_right)
      return p_prev.transpose() * r;
    else
      return r * p_prev.transpose();
  }
};

/// The adjoint of the chain product (reduce): a reverse, exclusive scan over the factors M and the products
/// before each step, L[t] (from the initial matrix), seeded with G = dL/d(result). Its state is the
/// gradient that reaches L[t + 1] from the result, R[t]: G (M[t+1] ... M[T-1])^T (left_to_right, each
/// factor's transpose joins on the right) or (M[T-1] ... M[t+1])^T G (right_to_left, on the left) -- a
/// matrix_product of the transposes. Step t emits dL/dM[t] = L[t]^T R[t] (left_to_right) or R[t] L[t]^T
/// (right_to_left); the total, G (M[0] ... M[T-1])^T or its mirror, is dL/d(initial matrix).
template <class M, chain_order Order = chain_order::left_to_right>
struct matrix_chain_product_adjoint {
  using value_type = M;
  matrix_product<M, Order> product;
  PARASCAN_HD value_type identity() const { return M::Identity(); }
  PARASCAN_HD value_type operator()(const M& earlier, const M& later) const { return product(earlier, later); }
  template <class MM, class ML>
  PARASCAN_HD value_type lift(const Eigen::MatrixBase<MM>& m, const Eigen::MatrixBase<ML>&) const {
    return m.transpose();
  }
  PARASCAN_HD M project(const value_type& s) const { return s; }
  PARASCAN_HD value_type seed(const M& g) const { return g; }
  template <class MM, class ML>
  PARASCAN_HD M emit(const value_type& s, const Eigen::MatrixBase<MM>&, const Eigen::MatrixBase<ML>& before) const {
    if constexpr (Order == chain_order::left_to_right)
      return before.transpose() * s;
    else
      return s * before.transpose();
  }
};

}  // namespace parascan::ops

namespace parascan {

/// The CUDA engine spreads products of float or double matrices over a warp's lanes (matrix_form.hpp).
/// A row-major M stores the transpose, on which the order's side is the other one.
template <class M, chain_order Order>
struct matrix_form<ops::matrix_product<M, Order>> {
  using scalar = typename M::Scalar;
  static constexpr bool available = std::is_same<scalar, float>::value || std::is_same<scalar, double>::value;
  static constexpr int size = M::RowsAtCompileTime;
  static constexpr bool later_on_right = (Order == chain_order::left_to_right) != bool(M::IsRowMajor);
};

template <class M, chain_order Order>
struct matrix_form<ops::matrix_product_3xtf32<M, Order>> : matrix_form<ops::matrix_product<M, Order>> {
  static constexpr bool tensor_cores = true;
};

/// 2 x 2 fp32 products (16-byte states moved as bytes, cuda/relocatable.cuh; 32 bytes a step): 2 items a
/// thread at 6 blocks of warps, and the wide states' 4 items from 2048 steps. Prefix over (16384, 1024)
/// chains, % of the copy floor (H100, 2026-11-28, policy_sweep part matrix2): 92.0 against 80.9 for the
/// wide states' 4 items at 4 blocks, 85.5 at 8 blocks of 2 items (64 registers), 85.8 for 64-thread
/// blocks of 2 items; at (4096, 4096) 4 items 76.0 against 57.1 for 2 at 8 blocks.
template <class M, chain_order Order>
struct default_policy<ops::matrix_product<M, Order>, arch::sm90> {
  using type = std::conditional_t<
      std::is_same<typename M::Scalar, float>::value && M::RowsAtCompileTime == 2,
      long_sequences<cuda_policy<128, 2, combine_variant::warp, 6, 3>, 16, sm90_tuning::wide_warps>,
      typename sm90_by_family<ops::matrix_product<M, Order>>::type>;
};

/// Cumulative products: out[t] = M[0] ... M[t] (left_to_right) or M[t] ... M[0] (right_to_left) for every
/// sequence. `in` and `out` are views of one Eigen fixed-size square matrix type.
/// Example: parascan::matrix_chain<parascan::chain_order::right_to_left>(parascan::host{}, in, out);
template <chain_order Order = chain_order::left_to_right, class Exec, class M>
void matrix_chain(const Exec& exec, const sequences<M>& in, const sequences<std::remove_const_t<M>>& out,
                  const options<std::remove_const_t<M>>& opts = {}) {
  prefix_scan(exec, ops::matrix_product<std::remove_const_t<M>, Order>{}, in, out, opts);
}

/// Gradients of out = matrix_chain<Order>(in, out, {reverse, initial}) for a loss L, from the factors
/// `in`, the products `out` and the upstream gradient `grad_out` (dL/dout[t] of each product alone):
/// grad_in = dL/din; opts.grad_final adds dL/d(final product), opts.grad_initial receives
/// dL/d(initial matrix). One reverse scan (ops::matrix_chain_adjoint) reading the products one step
/// behind (shifted). All views share one shape (any layout).
template <chain_order Order = chain_order::left_to_right, class Exec, class M, class P, class G, class D>
void matrix_chain_backward(const Exec& exec, const sequences<M>& in, const sequences<P>& out,
                           const sequences<G>& grad_out, const sequences<D>& grad_in,
                           const backward_options<std::remove_const_t<M>>& opts = {}) {
  using matrix = std::remove_const_t<M>;
  detail::check_backward_call(exec, in, out, grad_out, grad_in, static_cast<const sequences<D>*>(nullptr), opts,
                              {"in", "out", "grad_out", "grad_in", ""});
  // The products one step behind: the initial matrix (or I) before the first.
  const auto p_prev = parascan::shifted(out, previous_step(opts), matrix(matrix::Identity()), opts.initial);
  prefix_scan(exec, ops::matrix_chain_adjoint<matrix, Order>{}, parascan::inputs(in, grad_out, p_prev), grad_in,
              adjoint_options(opts));
}

/// Chain products: result[s] = the product of every matrix of sequence s, in the given order.
template <chain_order Order = chain_order::left_to_right, class Exec, class M>
void matrix_chain_product(const Exec& exec, const sequences<M>& in, std::remove_const_t<M>* result,
                          const options<std::remove_const_t<M>>& opts = {}) {
  reduce_scan(exec, ops::matrix_product<std::remove_const_t<M>, Order>{}, in, result, opts);
}

/// Gradients of result = matrix_chain_product<Order>(in, result, {reverse, initial}) for a loss L, from the
/// factors `in` and the gradient of each sequence's result, `grad_result` (one matrix a sequence):
/// grad_in = dL/din; opts.grad_initial receives dL/d(initial matrix). opts.grad_final must stay null (the
/// result's gradient is grad_result). Two passes: matrix_chain writes the products before each step into
/// grad_in (exclusive), then ops::matrix_chain_product_adjoint scans back over the factors and those
/// products, writing each factor's gradient in place. grad_in has in's shape and shares no byte with it.
template <chain_order Order = chain_order::left_to_right, class Exec, class M, class D>
void matrix_chain_product_backward(const Exec& exec, const sequences<M>& in, const std::remove_const_t<M>* grad_result,
                                   const sequences<D>& grad_in,
                                   const backward_options<std::remove_const_t<M>>& opts = {}) {
  using matrix = std::remove_const_t<M>;
  static_assert(std::is_same<std::remove_const_t<D>, matrix>::value && !std::is_const<D>::value,
                "matrix_chain_product_backward: grad_in is a writable view of the factors' matrix type");
  if (opts.grad_final != nullptr)
    detail::fail("options.grad_final", "null: the result's gradient is the argument grad_result");
  if (grad_result == nullptr && in.count() > 0)
    detail::fail("grad_result", "a non-null array of one matrix per sequence");
  detail::check_backward_call(exec, in, in, in, grad_in, static_cast<const sequences<D>*>(nullptr), opts,
                              {"in", "in", "in", "grad_in", ""});
  if (in.count() > 0) {
    require_backend_memory(exec, grad_result, "grad_result");
    std::vector<index_t> offsets;
    const detail::byte_span result = detail::span_of(grad_result, in.count());
    if (detail::span_of(host_readable(exec, grad_in, offsets)).overlaps(result))
      detail::fail("grad_in", "no overlap with grad_result");
    if (detail::span_of(opts.grad_initial, in.count()).overlaps(result))
      detail::fail("options.grad_initial", "no overlap with grad_result");
  }
  backward_options<matrix> checked = opts;
  checked.grad_final = grad_result;
  options<matrix> before;
  before.reverse = opts.reverse;
  before.exclusive = true;
  before.initial = opts.initial;
  matrix_chain<Order>(exec, in, grad_in, before);
  prefix_scan(exec, ops::matrix_chain_product_adjoint<matrix, Order>{},
              parascan::inputs(in, grad_in), grad_in, adjoint_options(checked));
}

}  // namespace parascan
