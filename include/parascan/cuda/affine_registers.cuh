// The affine walk at N = 4, fp32, column-major W, from registers (included by affine.cuh, whose run_affine
// dispatches here). The walk of affine.cuh stages each step's W and b through shared memory by cp.async, a
// wait a stage; at N = 4 it read 69-73% of copy at (4096, 1024) (H200), while the same traffic with plain
// loads and no recurrence streams at 93-97% (bench/affine_traffic_probe.cu). Here each lane loads its own
// operands a fixed number of steps ahead into a ring of registers: 4 lanes a sequence, 8 sequences a warp;
// lane i loads column i of W[t] (16 bytes) and b[t]_i, multiplies the column by its x_i, and the sequence's
// 4 lanes sum the products by a reduce-scatter (two rounds of shuffles), leaving row i of W x on lane i.
// Loads go through the read-only path (__ldg: ld.global.nc). H200, same runs: 84-86% a call alone, 88-89%
// back to back, against the staged walk's 69-72 / 71-75% (bench/results/h200-affine-walk-2026-11-30.log).
#pragma once

#include <cstdint>
#include <type_traits>

namespace parascan::engine {

/// The register walk's ring: slots of 8 steps, 4 of them (32 steps loaded ahead: 160 registers of operands
/// a lane). A slot's loads issue together, so each sequence asks for 8 steps of W and b at once (512 and
/// 128 contiguous bytes): H200, (4096, 1024), a call alone 86.5-86.8% of copy with slots of 8 steps,
/// 83.6-84.8% with slots of 4, 84.3-84.5% with 16 (bench/affine_probe.cu, three rounds in one call;
/// bench/results/h200-chain-walk-blocks-2026-11-30.log).
constexpr int affine_register_steps = 8;
constexpr int affine_register_slots = 32 / affine_register_steps;

/// Four floats at c (a stored column of a 4 x 4 fp32 matrix): one 16-byte load through the read-only path
/// when ALIGNED, else four scalar loads. Shared with chain_registers.cuh.
template <bool ALIGNED>
__device__ __forceinline__ float4 load_column(const float* c) {
  if constexpr (ALIGNED)
    return __ldg(reinterpret_cast<const float4*>(c));
  else
    return make_float4(c[0], c[1], c[2], c[3]);
}

/// The ring of a register walk (this file's and chain_registers.cuh's): U slots of G steps, each refilled
/// right after its steps are taken, so every step is loaded G U steps before its use.
///
/// The untested loop, from step t0 while a whole iteration's loads (steps t0 + GU .. t0 + 2GU - 1) lie
/// before `shortest` (no lane's sequence ends there): slot by slot, `steps(t0, u)` takes slot u's G steps
/// (t0 + G u ..), and `reload(t0 + G U, u)` loads the steps G U later into it (one base step an iteration:
/// each slot's addresses are fixed offsets from one pointer). Branches never taken (t0 + 2GU <= shortest
/// <= longest; the compiler cannot tell) around each reload put its loads in a basic block of their own,
/// so ptxas neither sinks them to the iteration's end nor hoists them above the slot's last step (whose
/// registers they overwrite): each load issues G U steps before its use (SASS, cuobjdump). Without them it
/// sank most of the affine walk's b loads, a few steps ahead: 72% of copy against 84-85% (H200, (4096,
/// 1024)). `loaded` advances with t0; returns the step where the loop stopped.
template <int G, int U, class Steps, class Reload>
__device__ __forceinline__ int untested_ring(int t0, int shortest, int longest, int& loaded, const Steps& steps,
                                             const Reload& reload) {
  for (; t0 + 2 * G * U <= shortest; t0 += G * U, loaded += G * U) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      steps(t0, u);
      if (t0 + G * U + G * u + 1 >= longest) break;
      reload(t0 + G * U, u);
      if (t0 + G * U + G * u >= longest) break;
    }
  }
  return t0;
}

/// One tested iteration of a ring from step t0 (t0 < longest): slot by slot, `step(u, j, t)` for its steps
/// before the warp's `longest`, then `load(u)` (the slot's next steps, each tested against its sequence).
template <int G, int U, class Step, class Load>
__device__ __forceinline__ void tested_ring(int t0, int longest, const Step& step, const Load& load) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int t = t0 + G * u + j;
      if (t >= longest) break;  // warp-uniform
      step(u, j, t);
    }
    load(u);
  }
}

/// Whether the register walk takes an affine form: 4 x 4 fp32, W column-major.
template <class Form, bool W_ROWS>
constexpr bool affine_registers_fit() {
  return Form::size == 4 && std::is_same<typename Form::scalar, float>::value && !W_ROWS;
}

/// The whole-sequence pass (scan, or a reduction when WRITE is false) of the register walk: 8 sequences a
/// warp (launch_walk's blocks). ALIGNED: every sequence's W on 16 bytes (column loads of 16 bytes, else 4
/// of 4).
template <bool WRITE, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(128) affine_register_kernel(const segment_args<Op, Pack, Outs> a) {
  constexpr int G = affine_register_steps, U = affine_register_slots;
  const int lane = int(threadIdx.x) % warp_threads;
  const int i = lane % 4, g = lane / 4;  // row / column i of sequence g of the warp
  const index_t s = walk_warp() * 8 + g;
  const bool active = s < a.count;
  const index_t n = active ? a.in.head.length_of(s) : 0;
  int longest, shortest;  // 32-bit steps: run_affine takes sequences of fewer than 2^31 steps
  warp_length_range(int(n), longest, shortest);
  float x = active && a.initial != nullptr ? reinterpret_cast<const float*>(&a.initial[s])[i] : 0.0f;
  if (longest == 0) {  // the whole warp (no shuffle below)
    if (active && a.final != nullptr) reinterpret_cast<float*>(&a.final[s])[i] = x;
    return;
  }
  const int length = int(n);
  const auto in = bind(a.in, active ? s : 0);
  // Each lane's operands and output, as addresses advanced by fixed strides (reverse: from the end).
  const index_t first = n > 0 ? time_index(0, n, a.reverse) : 0, dir = a.reverse ? -1 : 1;
  const float* w = reinterpret_cast<const float*>(&in.head[first]) + 4 * i;  // column i: 4 floats
  const float* b = reinterpret_cast<const float*>(&in.tail.head[first]) + i;
  const index_t w_step = dir * in.head.stride * 16, b_step = dir * in.tail.head.stride * 4;
  float* x_out = nullptr;
  index_t x_step = 0;
  if constexpr (WRITE) {
    if (active && n > 0) {
      const auto out = bind_outputs(a.out, s);
      x_out = reinterpret_cast<float*>(&out.head[first]) + i;
      x_step = dir * out.head.stride * 4;
    }
  }
  const bool aligned = __all_sync(0xffffffffu, reinterpret_cast<std::uintptr_t>(w) % 16 == 0);
  // Steps before the warp's shortest sequence's end need no test; where every lane's W, b and x are
  // contiguous in time (forward), their addresses are fixed offsets from one pointer an iteration.
  const bool contiguous = __all_sync(0xffffffffu, aligned && w_step == 16 && b_step == 4 && (!WRITE || x_step == 4));
  const auto walk = [&](auto aligned_tag, auto exclusive_tag) {
    constexpr bool ALIGNED = decltype(aligned_tag)::value, EXCLUSIVE = decltype(exclusive_tag)::value;
    float4 column[U][G];
    float bias[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < G; ++j) column[u][j] = make_float4(0, 0, 0, 0), bias[u][j] = 0;
    int loaded = 0;                // steps loaded (the lane's own sequence)
    const auto load = [&](int u) {  // the next G steps into slot u, tested
#pragma unroll
      for (int j = 0; j < G; ++j, ++loaded)
        if (loaded < length) {
          column[u][j] = load_column<ALIGNED>(w + index_t(loaded) * w_step);
          bias[u][j] = __ldg(b + index_t(loaded) * b_step);
        }
    };
    // Step t from slot u, j: W[t] x + b[t] (W[r][i] x_i for the rows r, summed over the sequence's lanes:
    // pairs of rows across lanes i ^ 2, then rows across i ^ 1; lane i keeps row i), x written at `at`
    // where `live`.
    const auto step = [&](int u, int j, bool live, float* at) {
      const float4 c = column[u][j];
      const float p0 = c.x * x, p1 = c.y * x, p2 = c.z * x, p3 = c.w * x;
      const bool high = i & 2, odd = i & 1;
      float a0 = high ? p2 : p0, a1 = high ? p3 : p1;
      a0 += __shfl_xor_sync(0xffffffffu, high ? p0 : p2, 2);
      a1 += __shfl_xor_sync(0xffffffffu, high ? p1 : p3, 2);
      float row = odd ? a1 : a0;
      row += __shfl_xor_sync(0xffffffffu, odd ? a0 : a1, 1);
      if (live) {  // the same in the sequence's 4 lanes
        if (WRITE && EXCLUSIVE) *at = x;
        x = row + bias[u][j];
        if (WRITE && !EXCLUSIVE) *at = x;
      }
    };
#pragma unroll
    for (int u = 0; u < U; ++u) load(u);
    int t0 = 0;
    if (ALIGNED && contiguous)  // contiguous: step t's operands and output at fixed offsets
      t0 = untested_ring<G, U>(
          t0, shortest, longest, loaded,
          [&](int t, int u) {
            float* const xq = x_out + index_t(t) * 4;
#pragma unroll
            for (int j = 0; j < G; ++j) step(u, j, true, xq + (G * u + j) * 4);
          },
          [&](int t, int u) {
            const float *const wq = w + index_t(t) * 16, *const bq = b + index_t(t) * 4;
#pragma unroll
            for (int j = 0; j < G; ++j) {
              column[u][j] = load_column<true>(wq + (G * u + j) * 16);
              bias[u][j] = __ldg(bq + (G * u + j) * 4);
            }
          });
    const auto tested_step = [&](int u, int j, int t) { step(u, j, t < length, x_out + index_t(t) * x_step); };
    for (; t0 < longest; t0 += G * U) tested_ring<G, U>(t0, longest, tested_step, load);
  };
  walk_instantiated(aligned, a.exclusive, walk);
  if (active && a.final != nullptr) reinterpret_cast<float*>(&a.final[s])[i] = x;
}

}  // namespace parascan::engine
