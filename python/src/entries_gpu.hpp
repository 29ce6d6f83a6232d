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
// Real types of the one-input scans, logcumsumexp's backward and the log-space recurrence.
#define PYEXT_GPU_REAL_TYPES(X) X(float) X(double)

#define PYEXT_DECLARE_LINEAR(T)                                                                          \
  extern template void pyext::linear_recurrence<pyext::gpu, T>(                                          \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,       \
      const parascan::sequences<T>&, const parascan::options<pyext::acc_t<T>>&);                         \
  extern template void pyext::linear_recurrence_backward<pyext::gpu, T>(                                 \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,       \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::sequences<T>&, \
      const parascan::backward_options<pyext::acc_t<T>>&);
#define PYEXT_DECLARE_SCAN(K, T)                                                             \
  extern template void pyext::scan<pyext::scan_kind::K, pyext::gpu, T>(                      \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<T>&, \
      const parascan::options<T>&);
#define PYEXT_DECLARE_REAL(T)                                                                                    \
  PYEXT_DECLARE_SCAN(cumsum, T)                                                                                  \
  PYEXT_DECLARE_SCAN(cumprod, T)                                                                                 \
  PYEXT_DECLARE_SCAN(cummax, T)                                                                                  \
  PYEXT_DECLARE_SCAN(cummin, T)                                                                                  \
  PYEXT_DECLARE_SCAN(logcumsumexp, T)                                                                            \
  extern template void pyext::logcumsumexp_backward<pyext::gpu, T>(                                              \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::backward_options<T>&); \
  extern template void pyext::log_linear_recurrence<pyext::gpu, T>(                                              \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<T>&, const parascan::options<T>&);                                               \
  extern template void pyext::log_linear_recurrence_backward<pyext::gpu, T>(                                     \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<const T>&, const parascan::sequences<T>&,   \
      const parascan::sequences<T>&, const parascan::backward_options<T>&);

PYEXT_GPU_LINEAR_TYPES(PYEXT_DECLARE_LINEAR)
PYEXT_GPU_REAL_TYPES(PYEXT_DECLARE_REAL)
