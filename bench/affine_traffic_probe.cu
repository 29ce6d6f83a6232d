// The affine walk's memory traffic without its walk: (B, T) sequences of N = 4 fp32, each step reading
// W[t] (64 bytes) and b[t] (16 bytes) of its sequence and writing x[t] (16 bytes), as bench/affine_probe.cu's
// (4096, 1024) at N = 4 (column-major W, sequences T steps apart), but with no recurrence: x[t] = b[t] +
// the row sums of W[t], every step independent. Lanes as the walk's (4 a sequence, 8 sequences a warp,
// the warp's 8 sequences in lockstep); each warp keeps U groups of 4 steps loading at once (plain 16-byte
// loads, all issued before any is used). Reports each variant as a fraction of a device-to-device copy of
// the same bytes in the same process: what the traffic itself reaches. Then the walk itself from registers
// (register_walk: the recurrence, U groups of 4 steps loaded ahead), sequence 0 checked against fp64.
//
// Usage: parascan_affine_traffic_probe [B [T]] (default 4096 1024); PROBE_ZEROS=1: the walk's operands
// random in sequence 0 only (the others zero).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <algorithm>

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

/// The walk itself from registers: x[t] = W[t] x[t-1] + b[t] (x[-1] = 0), lane (g, i) holding x_i of
/// sequence g. Lane i loads column i of each W[t] (16 bytes) and b_i, U groups of 4 steps ahead in a ring
/// of registers (plain loads, no shared memory); each step multiplies its column by x_i and sums the
/// products over the sequence's 4 lanes by a reduce-scatter (two rounds of shuffles), so that lane i ends
/// with row i of W x.
template <int U>
__global__ void __launch_bounds__(128) register_walk(const float4* __restrict__ W, const float* __restrict__ b,
                                                     float* __restrict__ x, int B, int T) {
  const int lane = threadIdx.x % 32, g = lane / 4, i = lane % 4;
  const long s = (long(blockIdx.x) * 4 + threadIdx.x / 32) * 8 + g;
  if (s >= B) return;  // whole warps only (B a multiple of 8)
  const float4* w = W + s * T * 4 + i;  // column i of step t: w[4 t]
  const float* bb = b + s * T * 4 + i;
  float* xx = x + s * T * 4 + i;
  float4 wc[U][4];
  float bv[U][4];
  const auto load = [&](int u, int t) {  // steps t .. t + 3 into slot u
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (t + j < T) wc[u][j] = w[4 * (t + j)], bv[u][j] = bb[4 * (t + j)];
  };
#pragma unroll
  for (int u = 0; u < U; ++u) load(u, 4 * u);
  float xi = 0;
  for (int t0 = 0; t0 < T; t0 += 4 * U) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int t = t0 + 4 * u;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (t + j >= T) break;
        const float4 c = wc[u][j];
        const float p0 = c.x * xi, p1 = c.y * xi, p2 = c.z * xi, p3 = c.w * xi;  // W[r][i] x_i, r = 0..3
        const bool high = i & 2;
        float a0 = high ? p2 : p0, a1 = high ? p3 : p1;
        a0 += __shfl_xor_sync(0xffffffffu, high ? p0 : p2, 2);
        a1 += __shfl_xor_sync(0xffffffffu, high ? p1 : p3, 2);
        const bool odd = i & 1;
        float k = odd ? a1 : a0;
        k += __shfl_xor_sync(0xffffffffu, odd ? a0 : a1, 1);
        xi = k + bv[u][j];
        xx[4 * (t + j)] = xi;
      }
      load(u, t + 4 * U);
    }
  }
}

template <int U>
double time_walk(const float4* W, const float* b, float* x, int B, int T) {
  const int blocks = (B / 8 + 3) / 4;
  return bench::median_event_ms([&] { register_walk<U><<<blocks, 128>>>(W, b, x, B, T); }, 21, 3, [](int) {},
                                check);
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
  // The walk from registers, on inputs scaled so that products stay bounded, sequence 0 checked in fp64.
  {
    std::vector<float> hW(steps * 16), hb(steps * 4);
    unsigned state = 12345;
    const auto uniform = [&] {
      state = state * 1664525u + 1013904223u;
      return float(state >> 8) / float(1 << 24) * 2 - 1;
    };
    // Every sequence's operands random (PROBE_ZEROS=1: sequence 0's only, the others zero).
    const bool zeros = std::getenv("PROBE_ZEROS") != nullptr;
    const std::size_t filled = zeros ? std::size_t(T) : steps;
    for (std::size_t k = 0; k < filled * 16; ++k) hW[k] = uniform() * 0.43f;
    for (std::size_t k = 0; k < filled * 4; ++k) hb[k] = uniform();
    check(cudaMemcpy(W, hW.data(), steps * 64, cudaMemcpyHostToDevice), "W");
    check(cudaMemcpy(b, hb.data(), steps * 16, cudaMemcpyHostToDevice), "b");
    std::printf("  operands: %s\n", zeros ? "sequence 0 random, the others zero" : "random");
    const double wms[] = {time_walk<2>(W, reinterpret_cast<const float*>(b), reinterpret_cast<float*>(x), B, T),
                          time_walk<4>(W, reinterpret_cast<const float*>(b), reinterpret_cast<float*>(x), B, T),
                          time_walk<8>(W, reinterpret_cast<const float*>(b), reinterpret_cast<float*>(x), B, T)};
    std::vector<float> hx(std::size_t(T) * 4);
    check(cudaMemcpy(hx.data(), x, std::size_t(T) * 16, cudaMemcpyDeviceToHost), "x");
    double ref[4] = {0, 0, 0, 0}, worst = 0;
    for (int t = 0; t < T; ++t) {
      double next[4];
      for (int r = 0; r < 4; ++r) {
        next[r] = hb[std::size_t(t) * 4 + r];
        for (int c = 0; c < 4; ++c) next[r] += double(hW[std::size_t(t) * 16 + c * 4 + r]) * ref[c];
      }
      for (int r = 0; r < 4; ++r) {
        ref[r] = next[r];
        worst = std::max(worst, std::abs(ref[r] - double(hx[std::size_t(t) * 4 + r])) / (1 + std::abs(ref[r])));
      }
    }
    const int us[] = {2, 4, 8};
    for (int k = 0; k < 3; ++k)
      std::printf("  walk from registers, U = %d (%d steps ahead): %.4f ms, %.1f%% of copy\n", us[k], 4 * us[k], wms[k],
                  100 * copy / wms[k]);
    std::printf("  sequence 0 against fp64: worst relative error %.2e%s\n", worst, worst < 1e-5 ? " (ok)" : " (WRONG)");
  }
  return 0;
}
