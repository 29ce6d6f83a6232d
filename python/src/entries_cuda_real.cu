// The GPU instantiations of the real one-input scans, logcumsumexp's backward and the log-space
// recurrence (entries_gpu.hpp).
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

#define PYEXT_INSTANTIATE_SCAN(K, T)                                                         \
  template void pyext::scan<pyext::scan_kind::K, pyext::gpu, T>(                             \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<T>&, \
      const parascan::options<T>&);
#define PYEXT_INSTANTIATE_REAL(T)                                                                                \
  PYEXT_INSTANTIATE_SCAN(cumsum, T)                                                                              \
  PYEXT_INSTANTIATE_SCAN(cumprod, T)                                                                             \
  PYEXT_INSTANTIATE_SCAN(cummax, T)                                                                              \
  PYEXT_INSTANTIATE_SCAN(cummin, T)                                                                              \
  PYEXT_INSTANTIATE_SCAN(logcumsumexp, T)                                                                        \
  template void pyext::logcumsumexp_backward<pyext::gpu, T>(                                                     \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::backward_options<T>&); \
  template void pyext::log_linear_recurrence<pyext::gpu, T>(                                                     \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<T>&, const parascan::options<T>&);                                               \
  template void pyext::log_linear_recurrence_backward<pyext::gpu, T>(                                            \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,               \
      const parascan::sequences<const T>&, const parascan::sequences<const T>&, const parascan::sequences<T>&,   \
      const parascan::sequences<T>&, const parascan::backward_options<T>&);
PYEXT_GPU_REAL_TYPES(PYEXT_INSTANTIATE_REAL)
