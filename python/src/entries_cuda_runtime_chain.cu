// The GPU instantiations of the runtime-size matrix chains (cuBLAS; prefix, reduce and backward, both
// orders, float and double; entries_gpu.hpp).
#include <parascan/cuda_matrices.cuh>

#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

PYEXT_RUNTIME_CHAIN(, float)
PYEXT_RUNTIME_CHAIN(, double)
