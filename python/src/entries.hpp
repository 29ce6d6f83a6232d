// The library calls the extension makes, one template per entry point over the execution: parascan::host
// (instantiated where parascan_ext.cpp calls them) or pyext::gpu, the CUDA backend on a stream of the
// current device (instantiated once in the entries_cuda_*.cu files, which nvcc compiles;
// parascan_ext.cpp sees only the `extern template` declarations of entries_gpu.hpp and never includes
// CUDA headers). Views arrive in the host element types (std::complex, Eigen::bfloat16 / half); on the GPU
// they become the device's (cuda::std::complex, __nv_bfloat16, __half), see entries_cuda.cuh.
#pragma once

#include <Eigen/Core>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include <parascan/ops/affine_recurrence.hpp>
#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/log_linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/ops/runtime_matrix_chain.hpp>
#include <parascan/parascan.hpp>

namespace pyext {

using parascan::sequences;

/// Device memory from the caller's framework, for temporaries too large for parascan's own pool to keep
/// (the runtime-size chains' workspace, gigabytes at N = 1024, which that pool would map afresh on every
/// call): parascan.torch hands out memory of PyTorch's caching allocator, ordered on the call's stream.
struct workspace_source {
  virtual ~workspace_source() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
};

/// The CUDA backend on `stream` (a cudaStream_t as an integer; 0: the legacy default stream) of the
/// current device; `workspace` (optional) supplies the runtime-size chains' temporaries.
struct gpu {
  std::uintptr_t stream = 0;
  workspace_source* workspace = nullptr;
};

/// The accumulator (state and per-sequence value) type of a storage type.
template <class T>
using acc_t = parascan::ops::accumulator_t<T>;

/// The host backend takes everything as it is; the gpu overloads are in entries_cuda.cuh.
inline const parascan::host& backend(const parascan::host& h) { return h; }
template <class T>
const sequences<T>& on_device(const parascan::host&, const sequences<T>& v) {
  return v;
}
template <class T>
const parascan::options<T>& on_device(const parascan::host&, const parascan::options<T>& o) {
  return o;
}
template <class Y, class GY>
const parascan::backward_options<Y, GY>& on_device(const parascan::host&, const parascan::backward_options<Y, GY>& o) {
  return o;
}

/// The one-input scans with a real accumulator.
enum class scan_kind { cumsum, cumprod, cummax, cummin, logcumsumexp };

template <class Exec, class T>
void linear_recurrence(const Exec& e, const sequences<const T>& a, const sequences<const T>& b, const sequences<T>& x,
                       const parascan::options<acc_t<T>>& o) {
  parascan::linear_recurrence(backend(e), on_device(e, a), on_device(e, b), on_device(e, x), on_device(e, o));
}

template <class Exec, class T>
void linear_recurrence_backward(const Exec& e, const sequences<const T>& a, const sequences<const T>& x,
                                const sequences<const T>& dx, const sequences<T>& da, const sequences<T>& db,
                                const parascan::backward_options<acc_t<T>>& o) {
  parascan::linear_recurrence_backward(backend(e), on_device(e, a), on_device(e, x), on_device(e, dx), on_device(e, da),
                                       on_device(e, db), on_device(e, o));
}

template <scan_kind K, class Exec, class T>
void scan(const Exec& e, const sequences<const T>& x, const sequences<T>& y, const parascan::options<T>& o) {
  const auto& exec = backend(e);
  const auto in = on_device(e, x);
  const auto out = on_device(e, y);
  const auto& opts = on_device(e, o);
  if constexpr (K == scan_kind::cumsum) parascan::cumsum(exec, in, out, opts);
  if constexpr (K == scan_kind::cumprod) parascan::cumprod(exec, in, out, opts);
  if constexpr (K == scan_kind::cummax) parascan::cummax(exec, in, out, opts);
  if constexpr (K == scan_kind::cummin) parascan::cummin(exec, in, out, opts);
  if constexpr (K == scan_kind::logcumsumexp) parascan::logcumsumexp(exec, in, out, opts);
}

template <class Exec, class T>
void logcumsumexp_backward(const Exec& e, const sequences<const T>& x, const sequences<const T>& y,
                           const sequences<const T>& dy, const sequences<T>& dx,
                           const parascan::backward_options<T>& o) {
  parascan::logcumsumexp_backward(backend(e), on_device(e, x), on_device(e, y), on_device(e, dy), on_device(e, dx),
                                  on_device(e, o));
}

template <class Exec, class T>
void log_linear_recurrence(const Exec& e, const sequences<const T>& la, const sequences<const T>& lb,
                           const sequences<T>& y, const parascan::options<T>& o) {
  parascan::log_linear_recurrence(backend(e), on_device(e, la), on_device(e, lb), on_device(e, y), on_device(e, o));
}

template <class Exec, class T>
void log_linear_recurrence_backward(const Exec& e, const sequences<const T>& la, const sequences<const T>& lb,
                                    const sequences<const T>& y, const sequences<const T>& dy, const sequences<T>& dla,
                                    const sequences<T>& dlb, const parascan::backward_options<T>& o) {
  parascan::log_linear_recurrence_backward(backend(e), on_device(e, la), on_device(e, lb), on_device(e, y),
                                           on_device(e, dy), on_device(e, dla), on_device(e, dlb), on_device(e, o));
}

template <class Exec, class T>
void signed_log_linear_recurrence(const Exec& e, const sequences<const T>& la, const sequences<const T>& b,
                                  const sequences<parascan::ops::signed_log<T>>& x,
                                  const parascan::options<parascan::ops::signed_log<T>>& o) {
  parascan::signed_log_linear_recurrence(backend(e), on_device(e, la), on_device(e, b), on_device(e, x),
                                         on_device(e, o));
}

template <class Exec, class T>
void signed_log_linear_recurrence_backward(const Exec& e, const sequences<const T>& la, const sequences<const T>& b,
                                           const sequences<const parascan::ops::signed_log<T>>& x,
                                           const sequences<const T>& dy, const sequences<T>& dla,
                                           const sequences<T>& db,
                                           const parascan::backward_options<parascan::ops::signed_log<T>, T>& o) {
  parascan::signed_log_linear_recurrence_backward(backend(e), on_device(e, la), on_device(e, b), on_device(e, x),
                                                  on_device(e, dy), on_device(e, dla), on_device(e, db),
                                                  on_device(e, o));
}

// ---- Matrices and vectors as the extension lays them out: an N x N matrix row-major and contiguous, an
// N-vector contiguous, at any address a view may have (unaligned Eigen types); state vectors (initial /
// final of the affine recurrence) as Eigen's own.
template <class S, int N>
using matrix_of = Eigen::Matrix<S, N, N, Eigen::RowMajor | Eigen::DontAlign>;
template <class S, int N>
using vector_of = Eigen::Matrix<S, N, 1, Eigen::DontAlign>;
template <class S, int N>
using state_vector_of = Eigen::Matrix<S, N, 1>;

/// Calls f(integral_constant<int, N>{}) for the sizes the extension has fixed-size matrix kernels for
/// (the affine recurrence's and the chains'); else fails naming `name`.
template <class F>
void with_fixed_size(parascan::index_t n, const std::string& name, F&& f) {
  switch (n) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    default:
      parascan::detail::fail(name + ".shape", "N x N matrices with N = 2, 3, 4, 8 or 16, got N = " + std::to_string(n));
  }
}

/// A matrix chain's size: f(integral_constant<int, N>{}) where a fixed-size kernel exists and `math` is
/// exact, else f(N) (the runtime-size chains, which also multiply on tensor cores).
template <class F>
void with_chain_size(parascan::index_t n, parascan::matrix_math math, F&& f) {
  const bool fixed = n == 2 || n == 3 || n == 4 || n == 8 || n == 16;
  if (fixed && math == parascan::matrix_math::exact) return with_fixed_size(n, "matrices", f);
  f(n);
}

/// A chain's options (forward or backward) for its size: the fixed sizes' plain options, or the runtime-size
/// chains' with their arithmetic.
template <class S, bool BACKWARD, int N>
auto chain_options(std::integral_constant<int, N>, parascan::matrix_math) {
  using M = matrix_of<S, N>;
  return std::conditional_t<BACKWARD, parascan::backward_options<M>, parascan::options<M>>{};
}
template <class S, bool BACKWARD>
auto chain_options(parascan::index_t, parascan::matrix_math math) {
  std::conditional_t<BACKWARD, parascan::matrix_backward_options<S>, parascan::matrix_options<S>> o;
  o.math = math;
  return o;
}

template <class Exec, class S, int N>
void affine_recurrence(const Exec& e, const sequences<const matrix_of<S, N>>& W,
                       const sequences<const vector_of<S, N>>& b, const sequences<vector_of<S, N>>& x,
                       const parascan::options<state_vector_of<S, N>>& o) {
  parascan::affine_recurrence(backend(e), on_device(e, W), on_device(e, b), on_device(e, x), on_device(e, o));
}

template <class Exec, class S, int N>
void affine_recurrence_backward(const Exec& e, const sequences<const matrix_of<S, N>>& W,
                                const sequences<const vector_of<S, N>>& x, const sequences<const vector_of<S, N>>& dx,
                                const sequences<matrix_of<S, N>>& dW, const sequences<vector_of<S, N>>& db,
                                const parascan::backward_options<state_vector_of<S, N>>& o) {
  parascan::affine_recurrence_backward(backend(e), on_device(e, W), on_device(e, x), on_device(e, dx), on_device(e, dW),
                                       on_device(e, db), on_device(e, o));
}

template <parascan::chain_order Order, class Exec, class S, int N>
void matrix_chain(const Exec& e, const sequences<const matrix_of<S, N>>& in, const sequences<matrix_of<S, N>>& out,
                  const parascan::options<matrix_of<S, N>>& o) {
  parascan::matrix_chain<Order>(backend(e), on_device(e, in), on_device(e, out), on_device(e, o));
}

template <parascan::chain_order Order, class Exec, class S, int N>
void matrix_chain_product(const Exec& e, const sequences<const matrix_of<S, N>>& in, matrix_of<S, N>* result,
                          const parascan::options<matrix_of<S, N>>& o) {
  parascan::matrix_chain_product<Order>(backend(e), on_device(e, in), result, on_device(e, o));
}

template <parascan::chain_order Order, class Exec, class S, int N>
void matrix_chain_backward(const Exec& e, const sequences<const matrix_of<S, N>>& in,
                           const sequences<const matrix_of<S, N>>& p, const sequences<const matrix_of<S, N>>& dp,
                           const sequences<matrix_of<S, N>>& din,
                           const parascan::backward_options<matrix_of<S, N>>& o) {
  parascan::matrix_chain_backward<Order>(backend(e), on_device(e, in), on_device(e, p), on_device(e, dp),
                                         on_device(e, din), on_device(e, o));
}

template <parascan::chain_order Order, class Exec, class S, int N>
void matrix_chain_product_backward(const Exec& e, const sequences<const matrix_of<S, N>>& in,
                                   const matrix_of<S, N>* grad_result, const sequences<matrix_of<S, N>>& din,
                                   const parascan::backward_options<matrix_of<S, N>>& o) {
  parascan::matrix_chain_product_backward<Order>(backend(e), on_device(e, in), grad_result, on_device(e, din),
                                                 on_device(e, o));
}

// ---- Runtime-size chains (ops/runtime_matrix_chain.hpp): N x N matrices of any N, placed by a view of
// their first scalars; on the GPU through cuBLAS, with temporaries from the caller's workspace_source.

/// The host backend as it is (the host chains need no workspace of the caller's).
template <class F>
void with_workspace(const parascan::host& h, F&& f) {
  f(h);
}

// The runtime-size overloads of the chain entries above (the same names: parascan_ext.cpp calls either).
template <parascan::chain_order Order, class Exec, class S>
void matrix_chain(const Exec& e, const parascan::matrix_sequences<const S>& in,
                  const parascan::matrix_sequences<S>& out, const parascan::matrix_options<S>& o) {
  with_workspace(e, [&](const auto& exec) { parascan::matrix_chain<Order>(exec, in, out, o); });
}

template <parascan::chain_order Order, class Exec, class S>
void matrix_chain_product(const Exec& e, const parascan::matrix_sequences<const S>& in, S* result,
                          const parascan::matrix_options<S>& o) {
  with_workspace(e, [&](const auto& exec) { parascan::matrix_chain_product<Order>(exec, in, result, o); });
}

template <parascan::chain_order Order, class Exec, class S>
void matrix_chain_backward(const Exec& e, const parascan::matrix_sequences<const S>& in,
                           const parascan::matrix_sequences<const S>& p, const parascan::matrix_sequences<const S>& dp,
                           const parascan::matrix_sequences<S>& din, const parascan::matrix_backward_options<S>& o) {
  with_workspace(e, [&](const auto& exec) { parascan::matrix_chain_backward<Order>(exec, in, p, dp, din, o); });
}

template <parascan::chain_order Order, class Exec, class S>
void matrix_chain_product_backward(const Exec& e, const parascan::matrix_sequences<const S>& in, const S* grad_result,
                                   const parascan::matrix_sequences<S>& din,
                                   const parascan::matrix_backward_options<S>& o) {
  with_workspace(e, [&](const auto& exec) {
    parascan::matrix_chain_product_backward<Order>(exec, in, grad_result, din, o);
  });
}

}  // namespace pyext
