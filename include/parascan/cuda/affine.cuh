// Affine strategy: x[t] = W[t] x[t-1] + b[t] (an operator with an affine_form, affine_form.hpp) walked in
// time from x[-1], N^2 multiply-adds a step instead of the N^3 of composing two maps, when the batch has
// enough sequences to keep the device streaming (else the parallel scan composes maps and splits the
// sequences). N lanes a sequence, 32 / N sequences a warp: lane i owns x_i and computes row i of W x + b,
// the other entries of x coming by shuffles within the sequence's lanes. W[t] and b[t] of the warp's
// sequences are staged into shared memory by cp.async, several steps ahead: about 10-12 kB of inputs in
// flight a warp, since at B N = 16384 a multiprocessor holds only four warps; a stage holds as many steps
// as make each sequence's request at least 256 bytes of W (4 steps of 4x4 fp32). With one warp a scheduler,
// each instruction of the step loop costs its latency: the loop keeps its strides in registers, fixes the
// inputs' alignment and the exclusive option outside it, and tests lengths only past the warp's shortest
// sequence (N = 4: 121 -> 48 instructions a step; H100, (4096, 1024): 48.8 -> 69.2% of copy, N = 8 72.7 ->
// 88.8%, N = 16 87.9 -> 92.9% with the 12 kB; what stalls N = 4 now is its cp.async waits, 53% of its
// cycles, which 24 kB in flight does not move).
#pragma once

#include <cuda_pipeline.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>

#include "../affine_form.hpp"
#include "device.cuh"  // segment_args, per-device caches (it includes this file at its end)
#include "matrix.cuh"  // lane_vector loads, allow_dynamic_shared

namespace parascan::engine {

/// Whether T is an Eigen fixed-size R x C matrix of S, stored as exactly R * C scalars.
template <class T, class S, int R, int C, class = void>
struct is_dense_of : std::false_type {};
template <class T, class S, int R, int C>
struct is_dense_of<T, S, R, C, std::void_t<typename T::Scalar, decltype(T::RowsAtCompileTime)>>
    : std::bool_constant<std::is_same<typename T::Scalar, S>::value && T::RowsAtCompileTime == R &&
                         T::ColsAtCompileTime == C && sizeof(T) == sizeof(S) * R * C> {};

/// Whether the affine strategy takes these inputs (W, b) and outputs (x, or none for a reduction).
template <class Op, class Pack, class Outs>
struct affine_fits : std::false_type {};
template <class Op, class MW, class VB, class... O>
struct affine_fits<Op, input_pack<MW, VB>, output_pack<O...>> {
  using form = affine_form<Op>;
  using S = typename form::scalar;
  static constexpr int N = form::size;
  static constexpr bool value = is_dense_of<MW, S, N, N>::value && is_dense_of<VB, S, N, 1>::value &&
                                (sizeof...(O) == 0 || (sizeof...(O) == 1 && (is_dense_of<O, S, N, 1>::value && ...)));
};

/// Stages a walk keeps ahead: about `in_flight` bytes of inputs a warp, 2 to `most` stages of
/// `stage_bytes` (shared by the affine walk, whose stages may hold several steps, and the chain walk,
/// chain_walk.cuh, one step a stage).
constexpr int walk_ahead(int stage_bytes, int in_flight = 7168, int most = 11) {
  return in_flight / stage_bytes < 2 ? 2 : in_flight / stage_bytes > most ? most : in_flight / stage_bytes;
}

/// The shared-memory layout of a warp's stages: per stage and sequence, W's lines (its columns, or its
/// rows when W is row-major: those padded apart so that lanes reading their own rows hit different banks)
/// and then b.
template <class Form, bool W_ROWS>
struct affine_layout {
  using S = typename Form::scalar;
  static constexpr int N = Form::size;
  static constexpr int V = 16 / int(sizeof(S));      // scalars in 16 bytes
  static constexpr int per_warp = warp_threads / N;  // sequences a warp
  static constexpr int round(int n) { return (n + V - 1) / V * V; }
  static constexpr int line_stride = W_ROWS ? round(N) + V : N;  // between W's lines
  static constexpr int w_scalars = round(N * line_stride);
  static constexpr int sequence_scalars = w_scalars + round(N);
  static constexpr int step_scalars = per_warp * sequence_scalars;  // one step of the warp's sequences
  // Steps a stage: at least 256 bytes of each sequence's W requested together (small W: a 4x4 fp32 step
  // is 64 bytes, and 4096 sequences each asking for 64 bytes a step kept the walk at 69% of the copy
  // floor however many bytes were in flight), within about 3 kB a stage.
  static constexpr int w_bytes = N * N * int(sizeof(S)), step_bytes = step_scalars * int(sizeof(S));
  static constexpr int wanted_steps = w_bytes >= 256 ? 1 : 256 / w_bytes;
  static constexpr int steps_per_stage =
      wanted_steps * step_bytes <= 3072 ? wanted_steps : 3072 / step_bytes > 1 ? 3072 / step_bytes : 1;
  static constexpr int stage_scalars = steps_per_stage * step_scalars;
  static constexpr int stage_bytes = stage_scalars * int(sizeof(S));
  // About 12 kB in flight a warp, up to 32 stages (before the stages of several steps: one step a stage,
  // where N = 4 read as below). H100, (16384 / N, 1024), % of copy
  // with the walk's instructions cut (below): 7 / 12 / 16 / 24 kB: N = 4 69.2 / 69.0 / 69.1 / 69.9, N = 8
  // 87.7 / 88.8 / 88.6 / 88.2, N = 16 91.4 / 92.9 / 93.0 / 92.6. (Before the cut, instruction bound:
  // 8 / 2 steps a stage, each sequence's W then requested 512 bytes at once, were slower, and 14 or 21
  // kB moved nothing.) Capped where a block of 4 warps would pass 60 kB of shared memory (sm_75 allows
  // 64 kB), never below the 7 kB before.
  static constexpr int fitting = 15360 / stage_bytes - 2;
  static constexpr int ahead = walk_ahead(stage_bytes, 12288, 32) < fitting ? walk_ahead(stage_bytes, 12288, 32)
                               : fitting > walk_ahead(stage_bytes)          ? fitting
                                                                            : walk_ahead(stage_bytes);
  static constexpr int stages = ahead + 2;  // the stages in flight, the one read, and the one read before
  static constexpr int warp_scalars = stages * stage_scalars;
  static constexpr int RV = W_ROWS ? widest_vector(N, V) : 1;  // scalars a read of a W row takes
};

/// The walk's warp: its index in the grid (launch_walk's blocks hold walk_block_warps).
__device__ __forceinline__ index_t walk_warp() {
  return index_t(blockIdx.x) * (blockDim.x / warp_threads) + threadIdx.x / warp_threads;
}

/// The longest and shortest of the warp's lengths `n` (every lane calls; lanes past the batch pass 0): a
/// walk loops to its warp's longest sequence, and steps before the shortest one's end need no test.
__device__ __forceinline__ void warp_length_range(int n, int& longest, int& shortest) {
  longest = shortest = n;
  for (int d = 16; d >= 1; d /= 2) {
    longest = max(longest, __shfl_xor_sync(0xffffffffu, longest, d));
    shortest = min(shortest, __shfl_xor_sync(0xffffffffu, shortest, d));
  }
}

/// Runs a walk (a generic callable of two tags) instantiated for the inputs' alignment and the exclusive
/// option (shared by the affine walk and the chain walk, chain_walk.cuh).
template <class Walk>
__device__ __forceinline__ void walk_instantiated(bool aligned, bool exclusive, Walk&& walk) {
  if (aligned && exclusive)
    walk(std::true_type{}, std::true_type{});
  else if (aligned)
    walk(std::true_type{}, std::false_type{});
  else if (exclusive)
    walk(std::false_type{}, std::true_type{});
  else
    walk(std::false_type{}, std::false_type{});
}

/// The N lanes of a sequence (this one `rank`) copy LINES lines of N scalars (`src`: N apart) into shared
/// memory (`dst`: STRIDE apart) without waiting: 16-byte pieces when `pieces`, else scalars.
template <class S, int N, int LINES, int STRIDE>
__device__ __forceinline__ void stage_lines(const S* src, S* dst, bool pieces, int rank) {
  constexpr int V = 16 / int(sizeof(S));
  if (N % V == 0 && pieces) {
    constexpr int per_line = N / V;
#pragma unroll
    for (int r = 0; r < (LINES * per_line + N - 1) / N; ++r) {
      const int e = r * N + rank;
      if (e < LINES * per_line)
        __pipeline_memcpy_async(dst + (e / per_line) * STRIDE + (e % per_line) * V, src + e * V, 16);
    }
  } else {
#pragma unroll
    for (int r = 0; r < LINES; ++r) __pipeline_memcpy_async(dst + r * STRIDE + rank, src + r * N + rank, sizeof(S));
  }
}

/// The whole-sequence pass (scan, or a reduction when WRITE is false) of the affine strategy.
template <class Form, bool W_ROWS, bool WRITE, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(128) affine_kernel(const segment_args<Op, Pack, Outs> a) {
  using X = affine_layout<Form, W_ROWS>;
  using S = typename X::S;
  constexpr int N = X::N;
  const int lane = int(threadIdx.x) % warp_threads, warp = int(threadIdx.x) / warp_threads;
  const int i = lane % N, g = lane / N;  // row i of sequence g of the warp
  const index_t s = walk_warp() * X::per_warp + g;
  const bool active = s < a.count;
  const index_t n = active ? a.in.head.length_of(s) : 0;
  // The warp loops to its longest sequence (shuffles need every lane); steps before its shortest one's
  // end need no test. 32-bit step counts: run_affine takes sequences of fewer than 2^31 steps.
  int longest, shortest;  // lanes past the batch count as empty
  warp_length_range(int(n), longest, shortest);
  if (longest == 0 && !active) return;  // a whole warp past the batch
  const int length = int(n);

  const auto in = bind(a.in, active ? s : 0);
  const bool w_pieces = reinterpret_cast<std::uintptr_t>(in.head.base) % 16 == 0;
  const bool b_pieces = reinterpret_cast<std::uintptr_t>(in.tail.head.base) % 16 == 0 && (N * sizeof(S)) % 16 == 0;
  // The next step to stage, as addresses advanced by a fixed stride (no index arithmetic a step).
  const index_t first = n > 0 ? time_index(0, n, a.reverse) : 0, dir = a.reverse ? -1 : 1;
  const S* w_next = reinterpret_cast<const S*>(&in.head[first]);
  const S* b_next = reinterpret_cast<const S*>(&in.tail.head[first]);
  index_t w_step = dir * in.head.stride * N * N, b_step = dir * in.tail.head.stride * N;
  // Kept in registers: recomputed from the parameters each step, they cost 18 of the loop's 121
  // instructions (N = 4, whose walk issues one instruction about every 4 cycles, 4 warps a multiprocessor).
  asm("" : "+l"(w_step), "+l"(b_step));
  extern __shared__ __align__(16) unsigned char parascan_affine_shared[];
  S* const slots = reinterpret_cast<S*>(parascan_affine_shared) + warp * X::warp_scalars + g * X::sequence_scalars;
  const auto slot = [&](int k) { return slots + k * X::stage_scalars; };

  S x = active && a.initial != nullptr ? reinterpret_cast<const S*>(&a.initial[s])[i] : S(0);
  S* x_out = nullptr;  // this step's output, advanced like the inputs
  index_t x_step = 0;
  if constexpr (WRITE) {
    if (active && n > 0) {
      const auto out = bind_outputs(a.out, s);
      x_out = reinterpret_cast<S*>(&out.head[first]) + i;
      x_step = dir * out.head.stride * N;
    }
  }
  // Stages of several steps whose b and outputs are contiguous and 16-byte aligned in every sequence of the
  // warp (forward, time stride 1) move each sequence's b and x for the whole stage together: one request
  // of K N scalars a sequence instead of K of N (4x4 fp32: 16 bytes a request, and L2-bound, ncu: the L2
  // 84% busy, DRAM 66%). The outputs go through the stage's b slots, each overwritten once read.
  bool together = false;
  if constexpr (X::steps_per_stage > 1 && (N * sizeof(S)) % 16 == 0) {
    const bool mine = b_step == N && (!WRITE || n == 0 ||
                                      (x_step == N && reinterpret_cast<std::uintptr_t>(x_out - i) % 16 == 0));
    together = __all_sync(0xffffffffu, mine);
  }
  // (A vote: lanes past the batch that have left count as agreeing; `together` matters only where no lane
  // has.) The walk, with the inputs' alignment and the exclusive option fixed (aligned W and b: 16-byte
  // pieces), in two loops: the stages every lane has (joint or not), then the rest, tested.
  const auto walk = [&](auto aligned, auto exclusive) {
    constexpr bool ALIGNED = decltype(aligned)::value, EXCLUSIVE = decltype(exclusive)::value;
    constexpr int K = X::steps_per_stage;
    int staged = 0;  // steps staged so far
    const auto stage = [&](int k, auto tested, auto joint) {  // the next K steps into slot k
      constexpr bool JOINT = !decltype(tested)::value && decltype(joint)::value;  // b of the K steps at once
#pragma unroll
      for (int j = 0; j < K; ++j) {
        if (decltype(tested)::value && staged >= length) return;
        ++staged;
        S* const to = slot(k) + j * X::step_scalars;
        stage_lines<S, N, N, X::line_stride>(w_next, to, ALIGNED || w_pieces, i);
        w_next += w_step;
        if constexpr (!JOINT) {
          stage_lines<S, N, 1, N>(b_next, to + X::w_scalars, ALIGNED || b_pieces, i);
          b_next += b_step;
        }
      }
      if constexpr (JOINT) {
        stage_lines<S, N, K, X::step_scalars>(b_next, slot(k) + X::w_scalars, ALIGNED || b_pieces, i);
        b_next += K * b_step;
      }
    };
    // Stages run stages - 2 ahead: the slot refilled at stage q was read at stage q - 2, which every lane
    // has left by stage q - 1's barrier (one barrier a stage, not two).
#pragma unroll
    for (int k = 0; k < X::stages - 2; ++k) {
      stage(k, std::true_type{}, std::false_type{});
      __pipeline_commit();
    }
    int current = 0;
    const auto run_stage = [&](int p0, auto tested, auto joint) {  // steps [p0, p0 + K)
      constexpr bool TESTED = decltype(tested)::value, JOINT = !TESTED && decltype(joint)::value;
      stage(current >= 2 ? current - 2 : current + X::stages - 2, tested, joint);
      __pipeline_commit();
      __pipeline_wait_prior(X::stages - 2);
      __syncwarp();  // every lane's copies of this stage have landed, and every lane has left the last one
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const bool live = !TESTED || p0 + j < length;
        S* const w = slot(current) + j * X::step_scalars;
        if (!JOINT && WRITE && EXCLUSIVE && live) *x_out = x;
        const S before = x;
        S acc = w[X::w_scalars + i];
        if constexpr (W_ROWS) {
#pragma unroll
          for (int k = 0; k < N; k += X::RV) {
            const auto row = load_vector<X::RV>(w + i * X::line_stride + k);
#pragma unroll
            for (int q = 0; q < X::RV; ++q) acc = fma(row.v[q], __shfl_sync(0xffffffffu, x, k + q, N), acc);
          }
        } else {
#pragma unroll
          for (int k = 0; k < N; ++k) acc = fma(w[k * N + i], __shfl_sync(0xffffffffu, x, k, N), acc);
        }
        if (JOINT) {
          x = acc;
          if (WRITE) w[X::w_scalars + i] = EXCLUSIVE ? before : x;  // b_i, read above by this lane only
        } else if (live) {
          x = acc;
          if (WRITE && !EXCLUSIVE) *x_out = x;
          if (WRITE) x_out += x_step;
        }
      }
      if constexpr (JOINT && WRITE) {  // the stage's outputs, 16 bytes a lane, K N scalars a sequence
        constexpr int per_step = N * int(sizeof(S)) / 16, pieces = K * per_step;
        __syncwarp();
#pragma unroll
        for (int r = 0; r < (pieces + N - 1) / N; ++r) {
          const int e = r * N + i;
          if (pieces % N == 0 || e < pieces) {
            const int j = e / per_step, part = e % per_step;
            *reinterpret_cast<uint4*>(x_out - i + j * N + part * X::V) =
                *reinterpret_cast<const uint4*>(slot(current) + j * X::step_scalars + X::w_scalars + part * X::V);
          }
        }
        x_out += K * x_step;
      }
      current = current == X::stages - 1 ? 0 : current + 1;
    };
    // Untested while every lane's steps of stage q and those it stages (stage q + stages - 2) are in its
    // sequence: (q + stages - 1) K <= shortest.
    const int untested = max(0, shortest / K - (X::stages - 2));
    int q = 0;
    if (together)
      for (; q < untested; ++q) run_stage(q * K, std::false_type{}, std::true_type{});
    else
      for (; q < untested; ++q) run_stage(q * K, std::false_type{}, std::false_type{});
    for (; q * K < longest; ++q) run_stage(q * K, std::true_type{}, std::false_type{});
  };
  // Every lane of the warp reaches this point unless all of its sequences are empty (then lanes past the
  // batch have left): nothing to walk, and no warp-wide call with lanes gone.
  if (longest == 0) {
    if (active && a.final != nullptr) reinterpret_cast<S*>(&a.final[s])[i] = x;
    return;
  }
  walk_instantiated(__all_sync(0xffffffffu, w_pieces && b_pieces), a.exclusive, walk);
  if (active && a.final != nullptr) reinterpret_cast<S*>(&a.final[s])[i] = x;
}

}  // namespace parascan::engine

#include "affine_registers.cuh"  // N = 4 fp32 from registers (uses walk_instantiated)

namespace parascan::engine {

/// PARASCAN_LOG's line for a walk in time: the call, the batch (`items`: sequences, chains) and `how`.
inline void log_walk(bool write, const batch_shape& shape, const char* items, const std::string& how) {
  std::fprintf(stderr, "parascan: %s %lld %s, longest %lld: %s\n", write ? "prefix_scan" : "reduce_scan",
               static_cast<long long>(shape.count), items, static_cast<long long>(shape.max_length), how.c_str());
}

/// Warps a block of a walk: one. A walk runs few warps, a multiprocessor's share of them walking alone
/// (one sequence a lane group to its end), so blocks of 4 warps left whole multiprocessors idle: (4096,
/// 1024) 4 x 4 chains or sequences are 512 warps, 128 blocks of 4 on 132 multiprocessors, and 8 x 8
/// chains (1024, 1024) 256 warps, 64 blocks. Blocks of one warp spread them over every multiprocessor.
constexpr int walk_block_warps = 1;

/// Launches a walk's kernel (the affine walk, the chain walk) over `warps` warps, walk_block_warps a
/// block, each warp with `warp_bytes` of dynamic shared memory.
template <auto Kernel, class Args>
void launch_walk(int warp_bytes, index_t warps, const Args& a, cudaStream_t stream, const char* name) {
  const int bytes = walk_block_warps * warp_bytes;
  if (bytes > 48 * 1024) {  // above 48 kB a kernel must ask, once per device
    static std::atomic<int> cache[64] = {};  // per kernel (one instantiation each)
    allow_dynamic_shared(cache, Kernel, bytes);
  }
  const index_t blocks = (warps + walk_block_warps - 1) / walk_block_warps;
  detail::require(blocks <= std::numeric_limits<int>::max(), "inputs", "fewer than 2^31 blocks of work");
  Kernel<<<unsigned(blocks), walk_block_warps * warp_threads, bytes, stream>>>(a);
  detail::check_launch(name);
}

/// Runs the affine strategy when it applies (an affine_form operator over W and b, no whole final maps
/// asked for, at least two warps of sequences a multiprocessor); returns whether it ran.
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
bool run_affine(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, cudaStream_t stream) {
  if constexpr (!affine_form<Op>::available) {
    return false;
  } else if constexpr (!affine_fits<Op, Pack, Outs>::value) {
    return false;
  } else {
    using form = affine_form<Op>;
    constexpr bool w_rows = std::remove_const_t<typename std::decay_t<decltype(a.in.head)>::element_type>::IsRowMajor;
    using X = affine_layout<form, w_rows>;
    const index_t warps = (shape.count + X::per_warp - 1) / X::per_warp;
    if (a.final_states != nullptr || !runs_walk(shape, warps, multiprocessors())) return false;
    if constexpr (affine_registers_fit<form, w_rows>()) {
      launch_walk<affine_register_kernel<WRITE, Op, Pack, Outs>>(0, warps, a, stream,
                                                                 "parascan affine_register_kernel");
      if (log_plans())
        log_walk(WRITE, shape, "sequences",
                 "affine in time from registers, 4 lanes a sequence, " +
                     std::to_string(affine_register_steps * affine_register_slots) + " steps ahead");
    } else {
      launch_walk<affine_kernel<form, w_rows, WRITE, Op, Pack, Outs>>(
          X::warp_scalars * int(sizeof(typename form::scalar)), warps, a, stream, "parascan affine_kernel");
      if (log_plans())
        log_walk(WRITE, shape, "sequences",
                 "affine in time, " + std::to_string(form::size) + " lanes a sequence, " + std::to_string(X::stages) +
                     " stages");
    }
    return true;
  }
}

}  // namespace parascan::engine
