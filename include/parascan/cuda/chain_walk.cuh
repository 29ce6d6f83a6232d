// Chain walk strategy: cumulative and whole products of N x N matrices (an operator with a matrix_form,
// N = 4, 8, 16 or 32) walked in time, one product a step, when the batch has enough chains to keep the
// device streaming (a parallel scan does about two products a step and, for states of 64 or 128 bytes,
// moves them through shuffles and shared memory: 4x4 prefixes over (4096, 1024) chains at 23% of the copy
// floor, walked at 53%, H100). 2x2 states (16 bytes) scan faster (73% against 57% walked). A lane an
// entry instead of a line (16 lanes a 4x4 chain, four times the warps) walked at the same 52%: what limits
// the walk is not the warps in flight. N lanes a chain, 32 / N chains a warp: each lane keeps
// one line of the running product P in registers, in the stored (column-major) sense its row when later
// factors multiply on the right (row i of P M is row i of P times M) and its column when they multiply on
// the left (column j of M P is M times column j of P). Both read the factor column by column from shared
// memory (16-byte vectors, the same address for a chain's lanes), where cp.async stages the warp's
// factors several steps ahead, as the affine strategy (affine.cuh) stages W and b.
#pragma once

#include <cuda_pipeline.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "../matrix_form.hpp"
#include "affine.cuh"  // is_dense_of, walk_ahead, walk_instantiated, launch_walk
#include "device.cuh"  // segment_args, multiprocessors, allow_dynamic_shared
#include "matrix.cuh"  // lane_vector loads, widest_vector

namespace parascan::engine {

/// Whether the chain walk takes this operator, its input and outputs (one N x N matrix each).
template <class Op, class Pack, class Outs, class = void>
struct chain_walk_fits : std::false_type {};
template <class Op, class M, class... O>
struct chain_walk_fits<Op, input_pack<M>, output_pack<O...>, std::enable_if_t<matrix_form<Op>::available>> {
  using form = matrix_form<Op>;
  using S = typename form::scalar;
  static constexpr int N = form::size;
  static constexpr bool value = N >= 4 && N <= warp_threads && warp_threads % N == 0 &&
                                std::is_same<std::remove_const_t<M>, state_t<Op>>::value &&
                                is_dense_of<std::remove_const_t<M>, S, N, N>::value &&
                                (sizeof...(O) == 0 || (sizeof...(O) == 1 && (std::is_same<O, state_t<Op>>::value && ...)));
};

/// A warp's stages: per stage, each chain's factor (N * N scalars, column-major as stored).
template <class Form>
struct chain_walk_layout {
  using S = typename Form::scalar;
  static constexpr int N = Form::size;
  static constexpr int V = 16 / int(sizeof(S));   // scalars in 16 bytes
  static constexpr int VC = widest_vector(N, V);  // scalars a read of a factor's column takes
  static constexpr int matrix = N * N;
  static constexpr int lanes = N;                        // lanes a chain
  static constexpr int per_warp = warp_threads / lanes;  // chains a warp
  static constexpr int chain_scalars = (matrix + V - 1) / V * V;
  static constexpr int stage_scalars = per_warp * chain_scalars;
  static constexpr int stage_bytes = stage_scalars * int(sizeof(S));
  static constexpr int ahead = walk_ahead(stage_bytes);  // about 7 kB of factors in flight a warp
  static constexpr int stages = ahead + 2;  // the steps in flight, the one read, and the one read before
  static constexpr int warp_scalars = stages * stage_scalars;
};

/// Lane `rank` of a chain's N lanes: entry k of its line of the N x N column-major matrix at p (its row
/// `rank` when ROWS, else its column `rank`).
template <bool ROWS, int N, class T>
__device__ __forceinline__ T& line_entry(T* p, int rank, int k) {
  return ROWS ? p[rank + k * N] : p[rank * N + k];
}

/// The whole-chain pass (scan, or a reduction when WRITE is false) of the chain walk.
template <class Form, bool WRITE, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(128) chain_walk_kernel(const segment_args<Op, Pack, Outs> a) {
  using X = chain_walk_layout<Form>;
  using S = typename X::S;
  constexpr int N = X::N;
  constexpr bool ROWS = Form::later_on_right;  // P M: rows; M P: columns
  const int lane = int(threadIdx.x) % warp_threads, warp = int(threadIdx.x) / warp_threads;
  const int r = lane % X::lanes, g = lane / X::lanes;  // line r of chain g of the warp
  const index_t s = walk_warp() * X::per_warp + g;
  const bool active = s < a.count;
  const index_t n = active ? a.in.head.length_of(s) : 0;
  // The warp loops to its longest chain (its lanes pass the same barriers); steps before its shortest
  // one's end need no test. 32-bit step counts: run_chain_walk takes chains of fewer than 2^31 factors.
  int longest, shortest;  // lanes past the batch count as empty
  warp_length_range(int(n), longest, shortest);
  if (longest == 0 && !active) return;  // a whole warp past the batch
  const int length = int(n);

  const auto in = bind(a.in, active ? s : 0);
  const index_t first = n > 0 ? time_index(0, n, a.reverse) : 0, dir = a.reverse ? -1 : 1;
  const S* m_next = reinterpret_cast<const S*>(&in.head[first]);
  index_t m_step = dir * in.head.stride * X::matrix;
  asm("" : "+l"(m_step));  // kept in a register, not recomputed from the parameters each step (affine.cuh)
  // Factors are N * N scalars, a multiple of 16 bytes: aligned pieces whenever the first one is aligned.
  const bool pieces = X::matrix % X::V == 0 && reinterpret_cast<std::uintptr_t>(m_next) % 16 == 0;
  extern __shared__ __align__(16) unsigned char parascan_chain_walk_shared[];
  S* const slots = reinterpret_cast<S*>(parascan_chain_walk_shared) + warp * X::warp_scalars + g * X::chain_scalars;
  const auto slot = [&](int k) { return slots + k * X::stage_scalars; };

  S line[N];
  const bool from_initial = active && a.initial != nullptr;
#pragma unroll
  for (int k = 0; k < N; ++k)
    line[k] = from_initial ? line_entry<ROWS, N>(reinterpret_cast<const S*>(&a.initial[s]), r, k) : S(k == r ? 1 : 0);
  S* out = nullptr;  // this step's output, advanced like the factors
  index_t out_step = 0;
  if constexpr (WRITE) {
    if (active && n > 0) {
      const auto o = bind_outputs(a.out, s);
      out = reinterpret_cast<S*>(&o.head[first]);
      out_step = dir * o.head.stride * X::matrix;
    }
  }
  const auto write = [&](S* p) {
#pragma unroll
    for (int k = 0; k < N; ++k) line_entry<ROWS, N>(p, r, k) = line[k];
  };
  // The walk, with the factors' alignment and the exclusive option fixed, as the affine walk's: step 0
  // (where a chain without an initial matrix takes its first factor as it is: I M would turn inf into
  // NaN), the steps every lane has, untested, then the rest.
  const auto walk = [&](auto aligned, auto exclusive) {
    constexpr bool ALIGNED = decltype(aligned)::value, EXCLUSIVE = decltype(exclusive)::value;
    int staged = 0;  // steps staged so far
    const auto stage = [&](int k, auto tested) {
      if (decltype(tested)::value && staged >= length) return;
      ++staged;
      S* dst = slot(k);
      if (ALIGNED || pieces) {
        for (int e = r; e < X::matrix / X::V; e += X::lanes)
          __pipeline_memcpy_async(dst + e * X::V, m_next + e * X::V, 16);
      } else {
        for (int e = r; e < X::matrix; e += X::lanes) __pipeline_memcpy_async(dst + e, m_next + e, sizeof(S));
      }
      m_next += m_step;
    };
    // Steps run stages - 2 ahead: the slot refilled at step p was read at step p - 2, which every lane
    // has left by step p - 1's barrier.
#pragma unroll
    for (int k = 0; k < X::stages - 2; ++k) {
      stage(k, std::true_type{});
      __pipeline_commit();
    }
    int current = 0;
    const auto step = [&](int p, auto tested, auto first_step) {
      constexpr bool TESTED = decltype(tested)::value;
      stage(current >= 2 ? current - 2 : current + X::stages - 2, tested);
      __pipeline_commit();
      __pipeline_wait_prior(X::stages - 2);
      __syncwarp();  // every lane's copies of this step have landed, and every lane has left step p - 1
      if (!TESTED || p < length) {
        if (WRITE && EXCLUSIVE) write(out);
        const S* m = slot(current);
        S next[N];
        if (decltype(first_step)::value && !from_initial) {
#pragma unroll
          for (int k = 0; k < N; ++k) next[k] = line_entry<ROWS, N>(m, r, k);
        } else if constexpr (ROWS) {  // row r of P M: entry j is row r of P times column j of M
#pragma unroll
          for (int j = 0; j < N; ++j) {
            S acc = 0;
#pragma unroll
            for (int k = 0; k < N; k += X::VC) {
              const auto c = load_vector<X::VC>(m + j * N + k);
#pragma unroll
              for (int q = 0; q < X::VC; ++q) acc = fma(line[k + q], c.v[q], acc);
            }
            next[j] = acc;
          }
        } else {  // column r of M P: the columns of M weighted by column r of P
#pragma unroll
          for (int i = 0; i < N; ++i) next[i] = 0;
#pragma unroll
          for (int k = 0; k < N; ++k)
#pragma unroll
            for (int i = 0; i < N; i += X::VC) {
              const auto c = load_vector<X::VC>(m + k * N + i);
#pragma unroll
              for (int q = 0; q < X::VC; ++q) next[i + q] = fma(c.v[q], line[k], next[i + q]);
            }
        }
#pragma unroll
        for (int k = 0; k < N; ++k) line[k] = next[k];
        if (WRITE && !EXCLUSIVE) write(out);
        if (WRITE) out += out_step;
      }
      current = current == X::stages - 1 ? 0 : current + 1;
    };
    // Untested while every lane's step p and the step it stages (p + stages - 2) are in its chain.
    const int untested = max(1, shortest - (X::stages - 2));
    step(0, std::true_type{}, std::true_type{});
    int p = 1;
    for (; p < untested; ++p) step(p, std::false_type{}, std::false_type{});
    for (; p < longest; ++p) step(p, std::true_type{}, std::false_type{});
  };
  // Every lane of the warp reaches this point unless all of its sequences are empty (then lanes past the
  // batch have left): nothing to walk, and no warp-wide call with lanes gone.
  if (longest == 0) {
    if (active && a.final != nullptr) write(reinterpret_cast<S*>(&a.final[s]));
    return;
  }
  walk_instantiated(__all_sync(0xffffffffu, pieces), a.exclusive, walk);
  if (active && a.final != nullptr) write(reinterpret_cast<S*>(&a.final[s]));
}

}  // namespace parascan::engine

#include "chain_registers.cuh"  // 4 x 4 fp32 from registers (uses walk_instantiated)

namespace parascan::engine {

/// Runs the chain walk when it applies (a matrix_form operator of N dividing 32 over one input of its
/// state, no whole final states asked for, at least two warps of chains a multiprocessor, 1.75 for 8 x 8
/// prefixes under warp_product); returns whether it ran.
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
bool run_chain_walk(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, cudaStream_t stream) {
  constexpr bool warp_product = Policy::combine == combine_variant::warp_product;
  if constexpr (!chain_walk_fits<Op, Pack, Outs>::value) {
    return false;
  } else if constexpr (warp_product && !(WRITE && matrix_form<Op>::size == 8)) {
    // Under warp_product (the default from 6 x 6 up) only 8 x 8 prefixes walk, from 1.75 warps a
    // multiprocessor (plan.hpp's walk_quarter_warps_8x8_prefix). H200, bench/chain_walk_probe.cu, (B, 1024)
    // chains: at B = 1024 (256 warps, 1.9 a multiprocessor) the walk read 54% of copy where the matrix
    // strategy's segments (fold, carry, rescan: the factors read twice) read 45%; the products walked 26%
    // against 53%. Larger sizes were not measured walked.
    return false;
  } else {
    using form = matrix_form<Op>;
    using X = chain_walk_layout<form>;
    const index_t warps = (shape.count + X::per_warp - 1) / X::per_warp;
    const int quarter_warps = warp_product ? walk_quarter_warps_8x8_prefix : walk_quarter_warps;
    if (a.final_states != nullptr || !runs_walk(shape, warps, multiprocessors(), quarter_warps)) return false;
    if constexpr (chain_registers_fit<form>()) {
      launch_walk<chain_register_kernel<WRITE, form::later_on_right, Op, Pack, Outs>>(
          0, warps, a, stream, "parascan chain_register_kernel");
      if (log_plans())
        log_walk(WRITE, shape, "chains",
                 "chain walk from registers, 4 lanes a chain, " +
                     std::to_string(chain_register_steps * chain_register_slots) + " steps ahead");
    } else {
      launch_walk<chain_walk_kernel<form, WRITE, Op, Pack, Outs>>(
          X::warp_scalars * int(sizeof(typename form::scalar)), warps, a, stream, "parascan chain_walk_kernel");
      if (log_plans())
        log_walk(WRITE, shape, "chains",
                 "chain walk, " + std::to_string(form::size) + " lanes a chain, " + std::to_string(X::stages) +
                     " stages");
    }
    return true;
  }
}

}  // namespace parascan::engine
