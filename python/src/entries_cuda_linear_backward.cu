// The GPU instantiations of the linear recurrence's backward pass (entries_gpu.hpp).
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

#define PYEXT_INSTANTIATE_LINEAR_BACKWARD(T)                                                             \
  template void pyext::linear_recurrence_backward<pyext::gpu, T>(                                        \
      const pyext::gpu&, const parascan::sequences<const T>&, const parascan::sequences<const T>&,       \
      const parascan::sequences<const T>&, const parascan::sequences<T>&, const parascan::sequences<T>&, \
      const parascan::backward_options<pyext::acc_t<T>>&);
PYEXT_GPU_LINEAR_TYPES(PYEXT_INSTANTIATE_LINEAR_BACKWARD)
