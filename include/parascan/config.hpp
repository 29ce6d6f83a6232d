// Portability macros shared by every parascan header.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PARASCAN_HD __host__ __device__
#define PARASCAN_DEVICE_COMPILER 1
#else
#define PARASCAN_HD
#define PARASCAN_DEVICE_COMPILER 0
#endif

#if defined(__CUDA_ARCH__)
#define PARASCAN_INLINE __forceinline__
#else
#define PARASCAN_INLINE inline
#endif

#if defined(__CUDACC__)
#include <cuda/std/limits>
#else
#include <limits>
#endif

namespace parascan {
/// Every extent, stride, length and offset is 64-bit.
using index_t = std::int64_t;

/// numeric_limits that device code may call: libcu++'s under nvcc (std::'s members are host-only
/// constexpr functions, which device code may call only with --expt-relaxed-constexpr), else std::'s.
#if defined(__CUDACC__)
template <class T>
using limits = cuda::std::numeric_limits<T>;
#else
template <class T>
using limits = std::numeric_limits<T>;
#endif
}  // namespace parascan
