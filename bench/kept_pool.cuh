// CUDA's default stream-ordered memory pool kept across synchronisations, as a framework's caching
// allocator keeps its memory, and parascan's temporaries drawn from it: for the benches of calls whose
// workspace passes the 256 MiB that parascan's own pool keeps (runtime-size chains: a TF32 prefix at
// N = 512 mapped its gigabyte again every call, 0.9 ms of 3.1 on an H200).
#pragma once

#include <cuda_runtime.h>

#include <new>

#include <parascan/cuda.cuh>

namespace bench {

/// Keeps the current device's default pool's freed memory (its release threshold at the maximum).
inline cudaError_t keep_default_pool() {
  int device = 0;
  cudaMemPool_t pool;
  unsigned long long keep = ~0ull;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, device);
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  return e;
}

/// parascan's temporaries from the default pool (std::bad_alloc where it has no more; the error is cleared).
struct kept_pool_allocator final : parascan::temp_allocator {
  void* allocate(std::size_t bytes, cudaStream_t stream) override {
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, stream) != cudaSuccess) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    return p;
  }
};

}  // namespace bench
