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

namespace parascan {
/// Every extent, stride, length and offset is 64-bit.
using index_t = std::int64_t;
}  // namespace parascan
