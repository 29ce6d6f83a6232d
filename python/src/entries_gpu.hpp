// The GPU entries the extension's CUDA files instantiate (entries_cuda_*.cu), declared for
// parascan_ext.cpp, plus the device helpers it needs without CUDA headers. Each PYEXT_GPU_* list names
// the element types of one entry; the .cu files instantiate exactly these.
#pragma once

#include "entries.hpp"

namespace pyext {

/// The current device, and making one current (cudaGetDevice / cudaSetDevice, errors as parascan::error).
int current_device();
void set_device(int device);
/// Makes `device` current again after a call, ignoring errors (for destructors).
void restore_device(int device) noexcept;

}  // namespace pyext

// Storage types of the linear recurrence and its backward on the GPU.
#define PYEXT_GPU_LINEAR_TYPES(X) \
  X(float) X(double) X(std::complex<float>) X(std::complex<double>) X(Eigen::bfloat16) X(Eigen::half)
// Real types of the one-input scans, logcumsumexp's backward and the log-space recurrences.
#define PYEXT_GPU_REAL_TYPES(X) X(float) X(double)

// The GPU entries' explicit instantiations: with PREFIX `extern` their declarations (here, for
// parascan_ext.cpp), with an empty PREFIX their definitions (in the .cu files, one list each).
#define PYEXT_LINEAR_FORWARD(PREFIX, T)                                                            \
  PREFIX template void pyext::linear_recurrence<pyext::gpu, T>(                                    \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&, \
      const parascan::sequences<T>&, const parascan::options<pyext::acc_t<T>>&);
#define PYEXT_LINEAR_BACKWARD(PREFIX, T)                                                                 \
  PREFIX template void pyext::linear_recurrence_backward<pyext::gpu, T>(                                 \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,       \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::sequences<T>&, \
      const parascan::backward_options<pyext::acc_t<T>>&);
#define PYEXT_SCAN(PREFIX, K, T)                                                             \
  PREFIX template void pyext::scan<pyext::scan_kind::K, pyext::gpu, T>(                      \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<T>&, \
      const parascan::options<T>&);
#define PYEXT_REAL(PREFIX, T)                                                                                    \
  PYEXT_SCAN(PREFIX, cumsum, T)                                                                                  \
  PYEXT_SCAN(PREFIX, cumprod, T)                                                                                 \
  PYEXT_SCAN(PREFIX, cummax, T)                                                                                  \
  PYEXT_SCAN(PREFIX, cummin, T)                                                                                  \
  PYEXT_SCAN(PREFIX, logcumsumexp, T)                                                                            \
  PREFIX template void pyext::logcumsumexp_backward<pyext::gpu, T>(                                              \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::backward_options<T>&); \
  PREFIX template void pyext::log_linear_recurrence<pyext::gpu, T>(                                              \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<T>&, const parascan::options<T>&);                                               \
  PREFIX template void pyext::log_linear_recurrence_backward<pyext::gpu, T>(                                     \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<const T>&, const parascan::sequences<T>&,   \
      const parascan::sequences<T>&, const parascan::backward_options<T>&);                                     \
  PREFIX template void pyext::signed_log_linear_recurrence<pyext::gpu, T>(                                       \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<parascan::ops::signed_log<T>>&,                                                 \
      const parascan::options<parascan::ops::signed_log<T>>&);                                                   \
  PREFIX template void pyext::signed_log_linear_recurrence_backward<pyext::gpu, T>(                              \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const parascan::ops::signed_log<T>>&, const parascan::sequences<const T>&,       \
      const parascan::sequences<T>&, const parascan::sequences<T>&,                                              \
      const parascan::backward_options<parascan::ops::signed_log<T>, T>&);

// Matrix sizes and scalars of the affine recurrence and the matrix chains (entries.hpp's with_fixed_size).
#define PYEXT_GPU_MATRIX_SIZES(X, S) X(S, 2) X(S, 3) X(S, 4) X(S, 8) X(S, 16)
#define PYEXT_MATRIX_CHAIN_ORDER(PREFIX, ORDER, S, N)                                                               \
  PREFIX template void pyext::matrix_chain<parascan::chain_order::ORDER, pyext::gpu, S, N>(                         \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&,                                  \
      const parascan::sequences<pyext::matrix_of<S, N>>&, const parascan::options<pyext::matrix_of<S, N>>&);        \
  PREFIX template void pyext::matrix_chain_product<parascan::chain_order::ORDER, pyext::gpu, S, N>(                 \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&, pyext::matrix_of<S, N>*,         \
      const parascan::options<pyext::matrix_of<S, N>>&);                                                            \
  PREFIX template void pyext::matrix_chain_backward<parascan::chain_order::ORDER, pyext::gpu, S, N>(                \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&,                                  \
      const parascan::sequences<const pyext::matrix_of<S, N>>&,                                                     \
      const parascan::sequences<const pyext::matrix_of<S, N>>&, const parascan::sequences<pyext::matrix_of<S, N>>&, \
      const parascan::backward_options<pyext::matrix_of<S, N>>&);                                                   \
  PREFIX template void pyext::matrix_chain_product_backward<parascan::chain_order::ORDER, pyext::gpu, S, N>(        \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&, const pyext::matrix_of<S, N>*,   \
      const parascan::sequences<pyext::matrix_of<S, N>>&, const parascan::backward_options<pyext::matrix_of<S, N>>&);
#define PYEXT_MATRIX_CHAIN(PREFIX, S, N)                \
  PYEXT_MATRIX_CHAIN_ORDER(PREFIX, left_to_right, S, N) \
  PYEXT_MATRIX_CHAIN_ORDER(PREFIX, right_to_left, S, N)
#define PYEXT_AFFINE(PREFIX, S, N)                                                                                  \
  PREFIX template void pyext::affine_recurrence<pyext::gpu, S, N>(                                                  \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&,                                  \
      const parascan::sequences<const pyext::vector_of<S, N>>&, const parascan::sequences<pyext::vector_of<S, N>>&, \
      const parascan::options<pyext::state_vector_of<S, N>>&);                                                      \
  PREFIX template void pyext::affine_recurrence_backward<pyext::gpu, S, N>(                                         \
      const pyext::gpu&, const parascan::sequences<const pyext::matrix_of<S, N>>&,                                  \
      const parascan::sequences<const pyext::vector_of<S, N>>&,                                                     \
      const parascan::sequences<const pyext::vector_of<S, N>>&, const parascan::sequences<pyext::matrix_of<S, N>>&, \
      const parascan::sequences<pyext::vector_of<S, N>>&,                                                           \
      const parascan::backward_options<pyext::state_vector_of<S, N>>&);

// The runtime-size chains (entries_cuda_runtime_chain.cu; float and double, both orders).
#define PYEXT_RUNTIME_CHAIN_ORDER(PREFIX, ORDER, S)                                                                    \
  PREFIX template void pyext::matrix_chain<parascan::chain_order::ORDER, pyext::gpu, S>(                               \
      const pyext::gpu&, const parascan::matrix_sequences<const S>&, const parascan::matrix_sequences<S>&,             \
      const parascan::matrix_options<S>&);                                                                             \
  PREFIX template void pyext::matrix_chain_product<parascan::chain_order::ORDER, pyext::gpu, S>(                       \
      const pyext::gpu&, const parascan::matrix_sequences<const S>&, S*, const parascan::matrix_options<S>&);          \
  PREFIX template void pyext::matrix_chain_backward<parascan::chain_order::ORDER, pyext::gpu, S>(                      \
      const pyext::gpu&, const parascan::matrix_sequences<const S>&, const parascan::matrix_sequences<const S>&,       \
      const parascan::matrix_sequences<const S>&, const parascan::matrix_sequences<S>&,                                \
      const parascan::matrix_backward_options<S>&);                                                                    \
  PREFIX template void pyext::matrix_chain_product_backward<parascan::chain_order::ORDER, pyext::gpu, S>(              \
      const pyext::gpu&, const parascan::matrix_sequences<const S>&, const S*, const parascan::matrix_sequences<S>&,   \
      const parascan::matrix_backward_options<S>&);
#define PYEXT_RUNTIME_CHAIN(PREFIX, S)                \
  PYEXT_RUNTIME_CHAIN_ORDER(PREFIX, left_to_right, S) \
  PYEXT_RUNTIME_CHAIN_ORDER(PREFIX, right_to_left, S)

#define PYEXT_DECLARE_LINEAR(T) PYEXT_LINEAR_FORWARD(extern, T) PYEXT_LINEAR_BACKWARD(extern, T)
#define PYEXT_DECLARE_REAL(T) PYEXT_REAL(extern, T)
PYEXT_GPU_LINEAR_TYPES(PYEXT_DECLARE_LINEAR)
PYEXT_GPU_REAL_TYPES(PYEXT_DECLARE_REAL)
#define PYEXT_DECLARE_MATRIX(S, N) PYEXT_MATRIX_CHAIN(extern, S, N) PYEXT_AFFINE(extern, S, N)
PYEXT_GPU_MATRIX_SIZES(PYEXT_DECLARE_MATRIX, float)
PYEXT_GPU_MATRIX_SIZES(PYEXT_DECLARE_MATRIX, double)
PYEXT_RUNTIME_CHAIN(extern, float)
PYEXT_RUNTIME_CHAIN(extern, double)
