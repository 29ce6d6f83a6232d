// Batches of chains of N x N matrices whose size N is known only at run time (the element of a
// `sequences` view is one scalar: the matrix's first entry). For sizes fixed at compile time
// (Eigen::Matrix<S, N, N>, N <= 32) the ordinary `sequences<M>` views and ops/matrix_product.hpp are
// faster; these views feed the runtime-size chains of ops/runtime_matrix_chain.hpp (cuBLAS on the GPU,
// Eigen's dynamic matrices on the host).
//
// A matrix is N x N scalars with a leading dimension `ld` >= N: column-major, entry (i, j) at
// origin[i + j * ld]; row-major, at origin[i * ld + j]. `origins` places the matrices exactly as any other
// view places its elements: two batch axes and a time axis, strides in scalars (layout.hpp). A chain is
// one sequence of `origins`.
#pragma once

#include <type_traits>

#include "config.hpp"
#include "error.hpp"
#include "layout.hpp"
#include "options.hpp"

namespace parascan {

/// How a matrix's entries are laid out (NumPy and PyTorch tensors are row-major; cuBLAS, Eigen and
/// Fortran default to column-major).
enum class matrix_storage { column_major, row_major };

/// The arithmetic of a runtime-size matrix product on the GPU. `exact`: IEEE fp32 / fp64 multiply-adds
/// (the default). `tf32` / `bf16`: fp32 matrices multiplied on tensor cores from operands rounded to
/// TF32 (10-bit mantissa) or bf16 (7-bit), accumulated in fp32: faster, with errors of about 2^-11 or
/// 2^-8 relative per product instead of 2^-24. The host backend always computes exactly.
enum class matrix_math { exact, tf32, bf16 };

template <class S>
struct matrix_sequences {
  using scalar_type = S;

  sequences<S> origins;  // where each matrix starts: batch axes and time axis, strides in scalars
  index_t size = 0;      // N
  index_t ld = 0;        // leading dimension, >= N: scalars between columns (column-major) or rows (row-major)
  matrix_storage storage = matrix_storage::row_major;

  PARASCAN_HD index_t count() const { return origins.count(); }
  PARASCAN_HD index_t length() const { return origins.length; }
  /// Entry (i, j) of the matrix at step t of chain s.
  PARASCAN_HD S& at(index_t s, index_t t, index_t i, index_t j) const {
    S* m = origins.begin_of(s) + t * origins.time_stride;
    return storage == matrix_storage::column_major ? m[i + j * ld] : m[i * ld + j];
  }

  /// The same matrices, read-only.
  template <class U = S, std::enable_if_t<std::is_same<U, S>::value && !std::is_const<U>::value, int> = 0>
  operator matrix_sequences<const U>() const {
    return {origins, size, ld, storage};
  }
};

/// The other storage order: the same scalars read as the transpose.
PARASCAN_HD inline matrix_storage transposed(matrix_storage storage) {
  return storage == matrix_storage::row_major ? matrix_storage::column_major : matrix_storage::row_major;
}

/// The same matrices read as their transposes (the other storage order over the same scalars).
template <class S>
matrix_sequences<S> transposed(const matrix_sequences<S>& v) {
  return {v.origins, v.size, v.ld, transposed(v.storage)};
}

/// A contiguous (B, T, N, N) tensor: B chains of T dense N x N matrices (row-major by default, as a
/// contiguous PyTorch or NumPy array of that shape).
template <class S>
matrix_sequences<S> dense_chains(S* data, index_t B, index_t T, index_t N,
                                 matrix_storage storage = matrix_storage::row_major) {
  return {strided(data, B, 1, T * N * N, 0, T, N * N), N, N, storage};
}

/// Any placement: `origins` gives each matrix's first scalar (its strides in scalars), every matrix
/// N x N with leading dimension `ld`.
template <class S>
matrix_sequences<S> matrices_at(const sequences<S>& origins, index_t N, index_t ld, matrix_storage storage) {
  return {origins, N, ld, storage};
}

/// Options of a runtime-size matrix chain: those of every scan (options.hpp) plus the GPU's arithmetic.
/// `initial`, `final` (and a reduction's `result`) hold one dense N x N matrix per chain (leading dimension
/// N, N * N scalars apart, in chain order), stored like the output (like the input for a reduction).
template <class S>
struct matrix_options : options<S> {
  matrix_math math = matrix_math::exact;
};

/// Options of a runtime-size chain's backward pass (matrix_chain_backward, matrix_chain_product_backward):
/// those of every backward pass (options.hpp: how the forward ran, its initial matrices, dL/d(final),
/// where dL/d(initial) goes), each one dense N x N matrix a chain, plus the GPU's arithmetic.
template <class S>
struct matrix_backward_options : backward_options<S> {
  matrix_math math = matrix_math::exact;
};

namespace detail {

/// One backward call of a runtime-size chain (ops/runtime_matrix_chain.hpp), checked, as the backends get
/// it: in the order left_to_right (a right_to_left call arrives with every view and dense matrix read
/// transposed: (M[t] ... M[0])^T = M[0]^T ... M[t]^T).
/// Prefix (matrix_chain_backward): `out` and `grad_out` set, `grad_result` null; reduction
/// (matrix_chain_product_backward): the reverse. Dense per-chain matrices (options.initial, grad_final,
/// grad_initial, grad_result) are stored as `dense_storage`: like out (prefix) or in (reduction).
template <class S>
struct chain_backward {
  matrix_sequences<const S> in, out, grad_out;
  matrix_sequences<S> grad_in;
  const S* grad_result = nullptr;
  matrix_backward_options<S> opts;
  bool prefix = true;
  matrix_storage dense_storage = matrix_storage::row_major;

  chain_backward transposed_call() const {
    chain_backward t = *this;
    t.in = transposed(in);
    t.out = transposed(out);
    t.grad_out = transposed(grad_out);
    t.grad_in = transposed(grad_in);
    t.dense_storage = transposed(dense_storage);
    return t;
  }
};

}  // namespace detail

}  // namespace parascan
