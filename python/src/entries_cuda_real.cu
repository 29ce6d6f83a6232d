// The GPU instantiations of the real one-input scans, logcumsumexp's backward and the log-space
// recurrences, positive and signed (entries_gpu.hpp).
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

#define PYEXT_INSTANTIATE_REAL(T) PYEXT_REAL(, T)
PYEXT_GPU_REAL_TYPES(PYEXT_INSTANTIATE_REAL)
