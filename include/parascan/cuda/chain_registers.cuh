// The chain walk at N = 4, fp32, from registers (included by chain_walk.cuh, whose run_chain_walk
// dispatches here): cumulative and whole products of 4 x 4 matrices over many chains, as the affine walk
// at N = 4 (affine_registers.cuh). The chain walk stages each step's factors through shared memory by
// cp.async, a wait a step; at 4 x 4 it read 67% of copy over (4096, 1024) chains on an H200. Here each
// lane loads its own stored column of the factor 32 steps ahead into a ring of registers (4 lanes a chain,
// 8 chains a warp), and a step gathers the factor's 4 columns from the chain's lanes by shuffles. The
// shuffles depend only on the factor, loaded long before; what carries from step to step is the lane's
// line of the running product (its stored row when later factors multiply on the right, P M, else its
// stored column, M P), updated by 16 FMAs in 4 independent sums of 4; P M prefixes keep the whole product
// in every lane instead (chain_register_kernel). H200, (4096, 1024) chains (bench/chain_walk_probe.cu,
// bench/results/h200-affine-walk-2026-11-30.log): the product alone 62-66% of a copy of its reads against
// the staged walk's 52-54%; M P (a 16-byte store a lane a step) 77-78% a call alone against 69-70%; P M
// 72-74% against 69%.
#pragma once

#include <cstdint>
#include <type_traits>

#include "affine_registers.cuh"  // load_column

namespace parascan::engine {

/// The register chain walk's ring: slots of 8 steps, 4 of them (32 steps loaded ahead: 128 registers a
/// lane), as the affine walk's (affine_registers.cuh). H200, (4096, 1024), three rounds alternated: P M
/// prefixes 75.8-76.4% of copy a call alone (slots of 4: 73.9-76.4), the product 64.9-66.4% (62.3-64.6);
/// M P alike (bench/results/h200-ec925df-run.log).
constexpr int chain_register_steps = 8;
constexpr int chain_register_slots = 32 / chain_register_steps;

/// Whether the register chain walk takes a matrix form: 4 x 4 fp32.
template <class Form>
constexpr bool chain_registers_fit() {
  return Form::size == 4 && std::is_same<typename Form::scalar, float>::value;
}

/// The whole-chain pass (scan, or a reduction when WRITE is false) of the register chain walk: 8 chains a
/// warp (launch_walk's blocks). ROWS: later factors multiply on the right (P M).
template <bool WRITE, bool ROWS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(128) chain_register_kernel(const segment_args<Op, Pack, Outs> a) {
  constexpr int G = chain_register_steps, U = chain_register_slots;
  // How a lane keeps P. Its line: its stored column r of P (M P; P M prefixes), or its stored row r (P M
  // products). P M prefixes also keep the whole of P in every lane (WHOLE): lane r multiplies it by its own
  // column r of the factor, stores that column of P M by one 16-byte store, and the chain's lanes then
  // share their columns by 16 shuffles. Gathering the factor instead (the shuffles off the step-to-step
  // chain, a row of P M a lane) wrote a row by 4 scalar stores and read 67-68% of copy where this reads
  // 72-74% (H200, (4096, 1024), bench/chain_walk_probe.cu); the P M product, with no stores, keeps the
  // rows (62% against 58-59% whole).
  constexpr bool WHOLE = ROWS && WRITE, LINE_IS_ROW = ROWS && !WRITE;
  const int lane = int(threadIdx.x) % warp_threads;
  const int r = lane % 4, g = lane / 4;  // line r of chain g of the warp
  const index_t s = walk_warp() * 8 + g;
  const bool active = s < a.count;
  const index_t n = active ? a.in.head.length_of(s) : 0;
  int longest, shortest;  // 32-bit steps: run_chain_walk takes chains of fewer than 2^31
  warp_length_range(int(n), longest, shortest);
  // Entry k of this lane's line of the column-major 4 x 4 matrix at p.
  const auto entry = [r](auto* p, int k) -> auto& { return LINE_IS_ROW ? p[r + 4 * k] : p[4 * r + k]; };
  const bool from_initial = active && a.initial != nullptr;
  const float* initial = from_initial ? reinterpret_cast<const float*>(&a.initial[s]) : nullptr;
  float line[4], whole[4][4];  // whole[k][c]: row k, column c of P (WHOLE only)
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    line[k] = from_initial ? entry(initial, k) : float(k == r);
#pragma unroll
    for (int c = 0; c < 4; ++c) whole[k][c] = !WHOLE ? 0.0f : from_initial ? initial[k + 4 * c] : float(k == c);
  }
  const auto write = [&](float* p) {
#pragma unroll
    for (int k = 0; k < 4; ++k) entry(p, k) = line[k];
  };
  if (longest == 0) {  // the whole warp (no shuffle below)
    if (active && a.final != nullptr) write(reinterpret_cast<float*>(&a.final[s]));
    return;
  }
  const int length = int(n);
  const auto in = bind(a.in, active ? s : 0);
  const index_t first = n > 0 ? time_index(0, n, a.reverse) : 0, dir = a.reverse ? -1 : 1;
  const float* m = reinterpret_cast<const float*>(&in.head[first]) + 4 * r;  // stored column r
  const index_t m_step = dir * in.head.stride * 16;
  float* out = nullptr;
  index_t out_step = 0;
  if constexpr (WRITE) {
    if (active && n > 0) {
      const auto o = bind_outputs(a.out, s);
      out = reinterpret_cast<float*>(&o.head[first]);
      out_step = dir * o.head.stride * 16;
    }
  }
  const bool aligned = __all_sync(0xffffffffu, reinterpret_cast<std::uintptr_t>(m) % 16 == 0);
  // Forward and contiguous in time (factors and outputs 16 floats apart): the steps before the warp's
  // shortest chain's end run untested, their addresses fixed offsets from one pointer an iteration.
  const bool contiguous = __all_sync(
      0xffffffffu, aligned && m_step == 16 &&
                       (!WRITE || (out_step == 16 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0)));
  const auto walk = [&](auto aligned_tag, auto exclusive_tag) {
    constexpr bool ALIGNED = decltype(aligned_tag)::value, EXCLUSIVE = decltype(exclusive_tag)::value;
    float4 column[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < G; ++j) column[u][j] = make_float4(0, 0, 0, 0);
    int loaded = 0;                // steps loaded (the lane's own chain)
    const auto load = [&](int u) {  // the next G steps into slot u, tested
#pragma unroll
      for (int j = 0; j < G; ++j, ++loaded)
        if (loaded < length) column[u][j] = load_column<ALIGNED>(m + index_t(loaded) * m_step);
    };
    // The line written at p: a stored column by one 16-byte store when VECTOR (p aligned).
    const auto put = [&](float* p, bool vector) {
      if (LINE_IS_ROW || !vector) return write(p);
      *reinterpret_cast<float4*>(p + 4 * r) = make_float4(line[0], line[1], line[2], line[3]);
    };
    // Step t from slot u, j: the chain's 4 lanes' columns gathered (col[c]: stored column c of the
    // factor), the line multiplied, written at `at` where `live`. TAKE: the chain's first factor as it is
    // (no initial matrix: I M would turn inf into NaN). VECTOR: the main loop's aligned outputs.
    const auto step = [&](int u, int j, bool live, float* at, bool take, bool vector = false) {
      if constexpr (WHOLE) {  // a chain's lanes share `live` (one length): a P at rest shuffles to itself
        if (live) {
          if (EXCLUSIVE) put(at, vector);
          const float4 c = column[u][j];  // stored column r of the factor
          if (take) {
            line[0] = c.x, line[1] = c.y, line[2] = c.z, line[3] = c.w;
          } else {  // column r of P M: P times column r of M
#pragma unroll
            for (int k = 0; k < 4; ++k)
              line[k] = fmaf(whole[k][3], c.w, fmaf(whole[k][2], c.z, fmaf(whole[k][1], c.y, whole[k][0] * c.x)));
          }
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
          for (int k = 0; k < 4; ++k) whole[k][q] = __shfl_sync(0xffffffffu, line[k], q, 4);
        if (live && !EXCLUSIVE) put(at, vector);
      } else {  // (an else, not a return: nvcc warned of unreachable code after one where WHOLE)
        float col[4][4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          col[c][0] = __shfl_sync(0xffffffffu, column[u][j].x, c, 4);
          col[c][1] = __shfl_sync(0xffffffffu, column[u][j].y, c, 4);
          col[c][2] = __shfl_sync(0xffffffffu, column[u][j].z, c, 4);
          col[c][3] = __shfl_sync(0xffffffffu, column[u][j].w, c, 4);
        }
        if (!live) return;
        if (WRITE && EXCLUSIVE) put(at, vector);
        float next[4];
        if (take) {  // rows: entry r of each column; else this lane's own column r
          const float4 c = column[u][j];
#pragma unroll
          for (int k = 0; k < 4; ++k)
            next[k] = LINE_IS_ROW ? (r == 0 ? col[k][0] : r == 1 ? col[k][1] : r == 2 ? col[k][2] : col[k][3])
                           : (k == 0 ? c.x : k == 1 ? c.y : k == 2 ? c.z : c.w);
        } else if (LINE_IS_ROW) {  // row r of P M: entry q is row r of P times column q of M
#pragma unroll
          for (int q = 0; q < 4; ++q)
            next[q] = fmaf(line[3], col[q][3], fmaf(line[2], col[q][2], fmaf(line[1], col[q][1], line[0] * col[q][0])));
        } else {  // column r of M P: the columns of M weighted by column r of P
#pragma unroll
          for (int q = 0; q < 4; ++q)
            next[q] = fmaf(col[3][q], line[3], fmaf(col[2][q], line[2], fmaf(col[1][q], line[1], col[0][q] * line[0])));
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) line[k] = next[k];
        if (WRITE && !EXCLUSIVE) put(at, vector);
      }
    };
    // Tested: one iteration of U slots from step t0 (loads of the slots after it, tested); FIRST: the
    // chain's first iteration, whose step 0 takes its first factor as it is (no initial matrix).
    const auto tested = [&](int t0, auto first_tag) {
      tested_ring<G, U>(
          t0, longest,
          [&](int u, int j, int t) {
            const bool take = decltype(first_tag)::value && u == 0 && j == 0 && !from_initial;
            step(u, j, t < length, WRITE ? out + index_t(t) * out_step : nullptr, take);
          },
          load);
    };
#pragma unroll
    for (int u = 0; u < U; ++u) load(u);
    tested(0, std::true_type{});
    int t0 = G * U;
    if (ALIGNED && contiguous)  // contiguous: step t's factor and output at fixed offsets
      t0 = untested_ring<G, U>(
          t0, shortest, longest, loaded,
          [&](int t, int u) {
            float* const oq = WRITE ? out + index_t(t) * 16 : nullptr;
#pragma unroll
            for (int j = 0; j < G; ++j) step(u, j, true, WRITE ? oq + (G * u + j) * 16 : nullptr, false, true);
          },
          [&](int t, int u) {
            const float* const mq = m + index_t(t) * 16;
#pragma unroll
            for (int j = 0; j < G; ++j) column[u][j] = load_column<true>(mq + (G * u + j) * 16);
          });
    for (; t0 < longest; t0 += G * U) tested(t0, std::false_type{});
  };
  walk_instantiated(aligned, a.exclusive, walk);
  if (active && a.final != nullptr) write(reinterpret_cast<float*>(&a.final[s]));
}

}  // namespace parascan::engine
