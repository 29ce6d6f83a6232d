// The GPU instantiations of the matrix chains (prefix, reduce and backward, both orders), double (entries_gpu.hpp):
// one file per family and scalar, so that a parallel build compiles them side by side.
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

#define PYEXT_INSTANTIATE(S, N) PYEXT_MATRIX_CHAIN(, S, N)
PYEXT_GPU_MATRIX_SIZES(PYEXT_INSTANTIATE, double)
