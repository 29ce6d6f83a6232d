// The rate of the TF32 wgmma the panel chains use (m64n128k8, A from registers, B by descriptor from a
// 128-byte-swizzled shared-memory panel), with nothing else in the loop: how far tf32_panel_chain.cuh's
// passes are from what its instruction mix allows. One block of 256 threads a multiprocessor (200 KiB of
// shared memory), each warpgroup issuing batches of MMAs into two 64 x 128 accumulators and waiting for
// each batch; variants: one or two warpgroups, batches of 4 / 8 / 16 MMAs, waiting for all or all but
// one batch, and the A fragments reloaded from shared memory before each batch (32 scalar loads, rounded,
// as the kernel's row-major stage). Needs an sm_90a build (the default architectures).
// Usage: parascan_wgmma_rate_probe
#include <cuda_runtime.h>

#include <cstdio>

#include "parascan/cuda/tf32_panel_chain.cuh"  // (tf32_rounded, wgmma.cuh)

namespace wgmma = parascan::detail::wgmma;
using parascan::detail::tf32_rounded;

template <int WARPGROUPS, int K_STEPS, int IN_FLIGHT, bool RELOAD>
__global__ void __launch_bounds__(256, 1) mma_loop(int batches, float* out, int* ran) {
#if defined(PARASCAN_WGMMA)
  extern __shared__ float4 shared_words[];
  const unsigned misaligned = unsigned(__cvta_generic_to_shared(shared_words)) % 1024u;
  float* panel = reinterpret_cast<float*>(shared_words) + (misaligned ? (1024u - misaligned) / 4 : 0);
  constexpr int panel_floats = 128 * 256;  // 8 chunks of 128 rows x 32 columns, as the kernel's panel
  for (int e = int(threadIdx.x); e < panel_floats; e += blockDim.x)
    panel[e] = __uint_as_float(tf32_rounded(0.001f * float(e % 97)));
  wgmma::shared_writes_to_async_proxy();
  __syncthreads();
  if (int(threadIdx.x) >= 128 * WARPGROUPS) return;
  float acc[2][64] = {};
  unsigned a[K_STEPS][2][4];
  for (int s = 0; s < K_STEPS; ++s)
    for (int i = 0; i < 2; ++i)
      for (int v = 0; v < 4; ++v) a[s][i][v] = tf32_rounded(0.01f * float(threadIdx.x % 7 + v + s));
  const unsigned base = unsigned(__cvta_generic_to_shared(panel));
  for (int b = 0; b < batches; ++b) {
    const unsigned chunk = base + unsigned(b % 8) * 16384u;
    if (RELOAD) {
#pragma unroll
      for (int s = 0; s < K_STEPS; ++s)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int v = 0; v < 4; ++v)
            a[s][i][v] = tf32_rounded(panel[((b * 7 + s * 131 + i * 17 + v * 33) * 4 + int(threadIdx.x)) % panel_floats]);
    }
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < K_STEPS; ++s)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wgmma::mma_m64n128k8(acc[i], a[s][i], wgmma::k_major_swizzled(chunk + 32u * unsigned(s % 4)), true);
    wgmma::commit();
    wgmma::wait<IN_FLIGHT>();
  }
  wgmma::wait<0>();
  float sum = 0;
  for (int i = 0; i < 2; ++i)
    for (int v = 0; v < 64; ++v) sum += acc[i][v];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
  if (threadIdx.x == 0) *ran = 1;
#endif
}

template <int WARPGROUPS, int K_STEPS, int IN_FLIGHT, bool RELOAD>
bool measure(const char* name, int multiprocessors, float* out, int* ran) {
  const int shared = 200 * 1024, batches = 4000;
  const auto kernel = mma_loop<WARPGROUPS, K_STEPS, IN_FLIGHT, RELOAD>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) != cudaSuccess) return false;
  cudaMemset(ran, 0, sizeof(int));
  kernel<<<multiprocessors, 256, shared>>>(10, out, ran);
  int did = 0;
  cudaMemcpy(&did, ran, sizeof(int), cudaMemcpyDeviceToHost);
  if (!did) return false;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  kernel<<<multiprocessors, 256, shared>>>(batches, out, ran);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  const double flops = 2.0 * multiprocessors * WARPGROUPS * double(batches) * K_STEPS * 2 * 64 * 128 * 8;
  std::printf("%-52s %8.3f ms %7.1f TFLOP/s  %s\n", name, ms, flops / ms / 1e9, cudaGetErrorString(cudaGetLastError()));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return true;
}

int main() {
  int device = 0, multiprocessors = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  float* out = nullptr;
  int* ran = nullptr;
  cudaMalloc(&out, std::size_t(multiprocessors) * 256 * sizeof(float));
  cudaMalloc(&ran, sizeof(int));
  std::printf("TF32 wgmma m64n128k8 (A registers, B shared memory), one block a multiprocessor, %d of them\n",
              multiprocessors);
  if (!measure<2, 4, 0, false>("2 warpgroups, batches of 8, wait for all", multiprocessors, out, ran)) {
    std::printf("no wgmma in this build (needs sm_90a code and a compute capability 9.0 device)\n");
    cudaFree(out);
    cudaFree(ran);
    return 0;
  }
  measure<2, 4, 1, false>("2 warpgroups, batches of 8, all but one in flight", multiprocessors, out, ran);
  measure<1, 4, 0, false>("1 warpgroup, batches of 8, wait for all", multiprocessors, out, ran);
  measure<1, 4, 1, false>("1 warpgroup, batches of 8, all but one in flight", multiprocessors, out, ran);
  measure<2, 8, 0, false>("2 warpgroups, batches of 16, wait for all", multiprocessors, out, ran);
  measure<2, 2, 0, false>("2 warpgroups, batches of 4, wait for all", multiprocessors, out, ran);
  measure<2, 4, 0, true>("2 warpgroups, batches of 8, fragments reloaded", multiprocessors, out, ran);
  measure<1, 4, 0, true>("1 warpgroup, batches of 8, fragments reloaded", multiprocessors, out, ran);
  cudaFree(out);
  cudaFree(ran);
  return 0;
}
