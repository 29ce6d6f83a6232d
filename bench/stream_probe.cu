// What a scan's memory traffic can reach, without the scan: plain copies with the linear recurrence's
// traffic (two fp32 inputs read, one output written: out = a + b) over 12288 sequences of T steps, each as
// a fraction of cudaMemcpyAsync in the same run. Not a test and not the benchmark: the measurements
// behind the README's "what limits it" (H200, 2026-11-21).
//   1. Who streams a sequence: G warps interleaved tile by tile (G = 1 is parascan's warp per sequence,
//      each warp 512 bytes an input a step, three cp.async stages), against a grid-stride copy and a
//      block of 1024 threads a sequence loading directly (accelerated-scan's shape).
//   2. Where sequences start: as laid out (T * 4 bytes apart), padded to 512 bytes, or 32 bytes off.
//   parascan_stream_probe
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "event_timer.cuh"

namespace {

__device__ __forceinline__ float4 add(float4 x, float4 y) { return {x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w}; }

__global__ void grid_stride(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ o,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    o[i] = add(a[i], b[i]);
}

/// G warps on one sequence (WARPS a block), tile t of warp w at float4s [(t G + w) 32, +32), STAGES
/// cp.async stages a warp; sequences `stride` float4s apart, T4 float4s each.
template <int G, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
    grouped(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ o, std::size_t T4,
            std::size_t sequences, std::size_t stride) {
  __shared__ float4 stage[WARPS][STAGES][2][32];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::size_t seq = (blockIdx.x * std::size_t(WARPS) + w) / G;
  const int part = w % G;
  if (seq >= sequences) return;
  const float4 *pa = a + seq * stride, *pb = b + seq * stride;
  float4* po = o + seq * stride;
  const auto issue = [&](std::size_t t, int s) {
    const std::size_t i = (t * G + part) * 32 + lane;
    if (i < T4) {
      __pipeline_memcpy_async(&stage[w][s][0][lane], pa + i, 16);
      __pipeline_memcpy_async(&stage[w][s][1][lane], pb + i, 16);
    }
  };
  const std::size_t tiles = (T4 + G * 32 - 1) / (G * 32);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) issue(s, s), __pipeline_commit();
  int current = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    __syncwarp();
    issue(t + STAGES - 1, (current + STAGES - 1) % STAGES);
    __pipeline_commit();
    __pipeline_wait_prior(STAGES - 1);
    const std::size_t i = (t * G + part) * 32 + lane;
    if (i < T4) po[i] = add(stage[w][current][0][lane], stage[w][current][1][lane]);
    current = (current + 1) % STAGES;
  }
}

/// A block of 1024 threads on one sequence, 16 KiB of each input a step, a barrier between steps.
__global__ void __launch_bounds__(1024) whole_block(const float4* __restrict__ a, const float4* __restrict__ b,
                                                   float4* __restrict__ o, std::size_t T4) {
  const std::size_t base = blockIdx.x * T4;
  for (std::size_t c = 0; c < T4; c += 1024) {
    if (c) __syncthreads();
    const std::size_t i = base + c + threadIdx.x;
    if (c + threadIdx.x < T4) o[i] = add(a[i], b[i]);
  }
}

}  // namespace

int main() {
  int sms = 0;
  bench::check_or_exit(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
  cudaDeviceProp prop{};
  bench::check_or_exit(cudaGetDeviceProperties(&prop, 0), "properties");
  const std::size_t sequences = 12288, most = sequences * (65536 / 4 + 32);
  float4 *a, *b, *o;
  char* flush;
  bench::check_or_exit(cudaMalloc(&a, most * 16), "cudaMalloc");
  bench::check_or_exit(cudaMalloc(&b, most * 16), "cudaMalloc");
  bench::check_or_exit(cudaMalloc(&o, most * 16), "cudaMalloc");
  bench::check_or_exit(cudaMalloc(&flush, 256 << 20), "cudaMalloc");
  bench::check_or_exit(cudaMemset(a, 0, most * 16), "cudaMemset");
  bench::check_or_exit(cudaMemset(b, 0, most * 16), "cudaMemset");
  const auto median_ms = [&](auto&& run, bool flush_l2) {
    const auto before = [&](int i) {
      if (flush_l2) bench::check_or_exit(cudaMemsetAsync(flush, i, 256 << 20), "flush");
    };
    return bench::median_event_ms(run, 10, 3, before, bench::check_or_exit);
  };
  const double floor =
      2.0 * most * 16 / median_ms([&] { cudaMemcpyAsync(o, a, most * 16, cudaMemcpyDeviceToDevice); }, false) / 1e6;
  std::printf("%s, %d SMs; cudaMemcpyAsync %.1f GB/s (the 100%% below)\n", prop.name, sms, floor);
  const auto report = [&](const char* what, std::size_t n4, auto&& run) {
    const double gbs = 3.0 * n4 * 16 / median_ms(run, true) / 1e6;
    std::printf("  %-46s %7.1f GB/s %6.1f%%\n", what, gbs, 100 * gbs / floor);
  };

  std::printf("1. who streams a sequence\n");
  for (std::size_t T : {std::size_t(1024), std::size_t(4096), std::size_t(65536)}) {
    const std::size_t T4 = T / 4, n = sequences * T4;
    const unsigned per4 = unsigned(sequences);  // blocks of 4 warps, G warps a sequence: sequences * G / 4
    std::printf(" T = %zu\n", T);
    report("grid-stride, 16 blocks of 256 an SM", n, [&] { grid_stride<<<sms * 16, 256>>>(a, b, o, n); });
    report("1 warp a sequence (parascan)", n, [&] { grouped<1, 4, 3><<<per4 / 4, 128>>>(a, b, o, T4, sequences, T4); });
    report("2 warps a sequence, interleaved", n, [&] { grouped<2, 4, 3><<<per4 / 2, 128>>>(a, b, o, T4, sequences, T4); });
    report("4 warps a sequence, interleaved", n, [&] { grouped<4, 4, 3><<<per4, 128>>>(a, b, o, T4, sequences, T4); });
    report("8 warps a sequence, interleaved", n, [&] { grouped<8, 8, 3><<<per4, 256>>>(a, b, o, T4, sequences, T4); });
    report("16 warps a sequence, interleaved", n, [&] { grouped<16, 16, 3><<<per4, 512>>>(a, b, o, T4, sequences, T4); });
    report("1024 threads a sequence, direct (accelerated-scan)", n, [&] { whole_block<<<per4, 1024>>>(a, b, o, T4); });
  }

  std::printf("2. where sequences start (1 warp a sequence)\n");
  for (std::size_t T : {std::size_t(1000), std::size_t(1024), std::size_t(4096), std::size_t(5000), std::size_t(50000)}) {
    const std::size_t T4 = T / 4, n = sequences * T4, padded = (T4 + 31) / 32 * 32;
    const unsigned blocks = unsigned(sequences / 4);
    char what[80];
    std::printf(" T = %zu\n", T);
    std::snprintf(what, sizeof what, "as laid out, %zu bytes apart", T * 4);
    report(what, n, [&] { grouped<1, 4, 3><<<blocks, 128>>>(a, b, o, T4, sequences, T4); });
    std::snprintf(what, sizeof what, "padded to 512 bytes, %zu apart", padded * 16);
    report(what, n, [&] { grouped<1, 4, 3><<<blocks, 128>>>(a, b, o, T4, sequences, padded); });
    std::snprintf(what, sizeof what, "32 bytes off, %zu apart", (T4 + 2) * 16);
    report(what, n, [&] { grouped<1, 4, 3><<<blocks, 128>>>(a, b, o, T4, sequences, T4 + 2); });
  }
  return 0;
}
