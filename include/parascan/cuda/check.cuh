// CUDA errors surface as parascan::error carrying CUDA's own message.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "../error.hpp"

namespace parascan::detail {

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw error(std::string("parascan: ") + what + ": " + cudaGetErrorName(status) + ": " +
                cudaGetErrorString(status));
}

/// After every launch: launch-configuration errors show here (not execution errors, which are
/// asynchronous and surface at the caller's next synchronising call).
inline void check_launch(const char* kernel) { cuda_check(cudaPeekAtLastError(), kernel); }

}  // namespace parascan::detail
