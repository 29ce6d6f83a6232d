// The GPU instantiations of the linear recurrence (entries_gpu.hpp), and the device helpers.
#include "entries_cuda.cuh"
#include "entries_gpu.hpp"

namespace pyext {

int current_device() {
  int device = 0;
  parascan::detail::cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

void set_device(int device) { parascan::detail::cuda_check(cudaSetDevice(device), "cudaSetDevice"); }

void restore_device(int device) noexcept {
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess && current != device) (void)cudaSetDevice(device);
}

}  // namespace pyext

#define PYEXT_INSTANTIATE_LINEAR(T) PYEXT_LINEAR_FORWARD(, T)
PYEXT_GPU_LINEAR_TYPES(PYEXT_INSTANTIATE_LINEAR)
