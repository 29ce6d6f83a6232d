// The affine walk's memory traffic without its walk: (B, T) sequences of N = 4 fp32, each step reading
// W[t] (64 bytes) and b[t] (16 bytes) of its sequence and writing x[t] (16 bytes), as bench/affine_probe.cu's
// (4096, 1024) at N = 4 (column-major W, sequences T steps apart), but with no recurrence: x[t] = b[t] +
// the row sums of W[t], every step independent. Lanes as the walk's (4 a sequence, 8 sequences a warp,
// the warp's 8 sequences in lockstep); each warp keeps U groups of 4 steps loading at once (plain 16-byte
// loads, all issued before any is used). Reports each variant as a fraction of a device-to-device copy of
// the same bytes in the same process: what the traffic itself reaches.
//
// Usage: parascan_affine_traffic_probe [B [T]] (default 4096 1024).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "event_timer.cuh"

namespace {

void check(cudaError_t e, const char* what) { bench::check_or_exit(e, what); }

/// Warp w: sequences 8w .. 8w + 7; lane (g, q): sequence 8w + g, quarter q of each 4-step group.
template <int U>
__global__ void __launch_bounds__(128) traffic(const float4* __restrict__ W, const float4* __restrict__ b,
                                               float4* __restrict__ x, int B, int T) {
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const long s = (long(blockIdx.x) * 4 + threadIdx.x / 32) * 8 + g;
  if (s >= B) return;
  const float4* w = W + s * T * 4;  // 4 float4 a step
  const float4* bb = b + s * T;     // 1 float4 a step
  float4* xx = x + s * T;
  for (int t0 = 0; t0 < T; t0 += 4 * U) {
    float4 wv[U][4], bv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int t = t0 + 4 * u;  // steps t .. t + 3: 16 float4 of W, 4 of b (lane q: b and x of step t + q)
      if (t + q < T) {
#pragma unroll
        for (int c = 0; c < 4; ++c) wv[u][c] = w[t * 4 + c * 4 + q];  // 64 contiguous bytes a load
        bv[u] = bb[t + q];
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int t = t0 + 4 * u;
      if (t + q < T) {
        float4 o = bv[u];
#pragma unroll
        for (int c = 0; c < 4; ++c) o = {o.x + wv[u][c].x, o.y + wv[u][c].y, o.z + wv[u][c].z, o.w + wv[u][c].w};
        xx[t + q] = o;
      }
    }
  }
}

template <int U>
double time_variant(const float4* W, const float4* b, float4* x, int B, int T) {
  const int blocks = (B / 8 + 3) / 4;
  return bench::median_event_ms([&] { traffic<U><<<blocks, 128>>>(W, b, x, B, T); }, 21, 3, [](int) {}, check);
}

}  // namespace

int main(int argc, char** argv) {
  const int B = argc > 1 ? std::atoi(argv[1]) : 4096, T = argc > 2 ? std::atoi(argv[2]) : 1024;
  const std::size_t steps = std::size_t(B) * T;
  float4 *W, *b, *x;
  check(cudaMalloc(&W, steps * 64), "W");
  check(cudaMalloc(&b, steps * 16), "b");
  check(cudaMalloc(&x, steps * 16), "x");
  check(cudaMemset(W, 0, steps * 64), "W");
  check(cudaMemset(b, 0, steps * 16), "b");
  char *src, *dst;
  const std::size_t half = steps * 48;  // a copy reading and writing 96 bytes a step in all
  check(cudaMalloc(&src, half), "copy");
  check(cudaMalloc(&dst, half), "copy");
  const double copy = bench::median_event_ms([&] { cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice); }, 21,
                                             3, [](int) {}, check);
  std::printf("(%d, %d) N = 4: copy of the same bytes %.4f ms\n", B, T, copy);
  const double ms[] = {time_variant<1>(W, b, x, B, T), time_variant<2>(W, b, x, B, T),
                       time_variant<4>(W, b, x, B, T), time_variant<8>(W, b, x, B, T)};
  const int us[] = {1, 2, 4, 8};
  for (int k = 0; k < 4; ++k)
    std::printf("  U = %d (%d bytes of loads in flight a warp): %.4f ms, %.1f%% of copy\n", us[k], us[k] * 32 * 80,
                ms[k], 100 * copy / ms[k]);
  return 0;
}
