// The GPU instantiations of the linear recurrence's backward pass (entries_gpu.hpp).
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

#define PYEXT_INSTANTIATE_LINEAR_BACKWARD(T) PYEXT_LINEAR_BACKWARD(, T)
PYEXT_GPU_LINEAR_TYPES(PYEXT_INSTANTIATE_LINEAR_BACKWARD)
