// Block layer and the "group" abstraction the sequence layer runs on. A group is the set of threads that
// scans one segment of one sequence together:
//   block_group<T>  : a whole block of T threads (warp scans, then warp totals through shared memory);
//   warp_group<T>   : each warp of a T-thread block on its own sequence (short sequences);
//   thread_group<T> : each thread on its own segment, sequentially (large states, where parallel
//                     combining costs more than it saves).
//   channel_group<T>: a warp on 32 sequences at once, lane = sequence, each lane sequentially in time
//                     (strided layouts whose adjacent sequences are adjacent in memory, (B, T, D)).
// A group's exclusive_scan(op, thread_total, prefix) (all but the channel group, which runs its own loop)
// returns each thread's prefix within the sequence. `prefix` is the prefix callback (CUB's prefix callback
// operator): every thread of the group calls it with the group's total over the tile and gets the state
// before the tile. The tile loop's running carry is one (running_prefix below), the single-pass look-back
// another (lookback.cuh).
// sequence_lane() says which of the group's sequences_per_group sequences a thread works on, and
// loop_end(p1) the bound every thread of the group loops to (its sequences may differ in length).
#pragma once

#include "../plan.hpp"
#include "warp.cuh"

namespace parascan::engine {

/// The running carry of a tile loop as a prefix callback: a tile's prefix is the carry so far, which then
/// advances past the tile (every thread of a sequence holds the same carry).
template <class Op>
struct running_prefix {
  const Op& op;
  state_t<Op>& carry;
  __device__ __forceinline__ state_t<Op> operator()(const state_t<Op>& total) const {
    const state_t<Op> before = carry;
    carry = op(carry, total);
    return before;
  }
};

/// The WARPS totals of a group's warps folded left to right: the group's total and, for warp > 0, the fold
/// of the totals before `warp` (warp 0's is left as totals[0]).
template <int WARPS, class Op, class S>
__device__ __forceinline__ void fold_warp_totals(const Op& op, const S* totals, int warp, S& total, S& before_warp) {
  total = before_warp = totals[0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) {
    if (w == warp) before_warp = total;
    total = op(total, totals[w]);
  }
}

/// FIRST_WARP > 0: the group is warps [FIRST_WARP, FIRST_WARP + THREADS / 32) of a larger block, whose other
/// warps do something else (the look-ahead warp of lookahead.cuh); they sync by named barrier 1 rather
/// than __syncthreads.
template <int THREADS, int FIRST_WARP = 0>
struct block_group {
  static constexpr group_kind kind = group_kind::block;
  static constexpr int block_threads = THREADS;
  static constexpr int sequences_per_group = 1;
  __device__ int sequence_lane() const { return 0; }
  __device__ index_t loop_end(index_t p1) const { return p1; }
  static constexpr bool warp_contiguous = true;  // a warp's lanes hold consecutive positions of one sequence
  static constexpr int warps = THREADS / warp_threads;
  static constexpr int groups_per_block = 1;
  static constexpr int threads = THREADS;

  template <class S>
  struct temp_storage {
    S warp_total[2][warps];  // double-buffered by tile parity: one barrier per tile, not two
    warp_scan_storage<S> warp[warps];
  };

  __device__ int rank() const { return int(threadIdx.x) - FIRST_WARP * warp_threads; }
  __device__ int group_in_block() const { return 0; }
  /// Waits for the group's threads (all of them call it).
  __device__ __forceinline__ static void sync() {
    if constexpr (FIRST_WARP == 0)
      __syncthreads();
    else
      asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory");
  }

  template <class Op, class Prefix>
  __device__ __forceinline__ state_t<Op> exclusive_scan(const Op& op, const state_t<Op>& thread_total, Prefix& prefix,
                                                        temp_storage<state_t<Op>>& temp) {
    using S = state_t<Op>;
    const int warp = rank() / warp_threads, lane = int(threadIdx.x) % warp_threads;
    const auto in_warp = warp_scan(op, thread_total, temp.warp[warp]);
    S* totals = temp.warp_total[parity_];
    parity_ ^= 1;
    if (lane == warp_threads - 1) totals[warp] = in_warp.total;
    sync();
    // Every warp scans the warp totals itself: no second barrier, and every thread knows the block total
    // (the running carry then needs no broadcast; the look-back's callback broadcasts its prefix). A few
    // totals are folded in turn; from 8, across the lanes (log2 combines a thread, not warps - 1).
    S block_total = totals[0], before_warp = totals[0];  // before_warp: warps > 0 only
    if constexpr (warps >= 8 && shuffles_state<S>) {
      S v = lane < warps ? totals[lane] : op.identity();
#pragma unroll
      for (int d = 1; d < warps; d *= 2) {
        const S earlier = shuffle_up(v, d);
        if (lane >= d) v = op(earlier, v);
      }
      block_total = shuffle_from(v, warps - 1);
      before_warp = shuffle_from(v, warp == 0 ? 0 : warp - 1);
    } else {
      fold_warp_totals<warps>(op, totals, warp, block_total, before_warp);
    }
    const S before_tile = prefix(block_total);
    return op(warp == 0 ? before_tile : op(before_tile, before_warp), in_warp.exclusive);
  }

 private:
  int parity_ = 0;
};

template <int THREADS>
struct warp_group {
  static constexpr group_kind kind = group_kind::warp;
  static constexpr int block_threads = THREADS;
  static constexpr int sequences_per_group = 1;
  __device__ int sequence_lane() const { return 0; }
  __device__ index_t loop_end(index_t p1) const { return p1; }
  static constexpr bool warp_contiguous = true;
  static constexpr int groups_per_block = THREADS / warp_threads;
  static constexpr int threads = warp_threads;

  template <class S>
  struct temp_storage {
    warp_scan_storage<S> warp[groups_per_block];
  };

  __device__ int rank() const { return int(threadIdx.x) % warp_threads; }
  __device__ int group_in_block() const { return int(threadIdx.x) / warp_threads; }

  template <class Op, class Prefix>
  __device__ __forceinline__ state_t<Op> exclusive_scan(const Op& op, const state_t<Op>& thread_total, Prefix& prefix,
                                                        temp_storage<state_t<Op>>& temp) {
    const auto in_warp = warp_scan(op, thread_total, temp.warp[group_in_block()]);
    return op(prefix(in_warp.total), in_warp.exclusive);
  }
};

template <int THREADS>
struct thread_group {
  static constexpr group_kind kind = group_kind::thread;
  static constexpr int block_threads = THREADS;
  static constexpr int sequences_per_group = 1;
  __device__ int sequence_lane() const { return 0; }
  __device__ index_t loop_end(index_t p1) const { return p1; }
  static constexpr bool warp_contiguous = false;
  static constexpr int groups_per_block = THREADS;
  static constexpr int threads = 1;

  template <class S>
  struct temp_storage {};

  __device__ int rank() const { return 0; }
  __device__ int group_in_block() const { return int(threadIdx.x); }

  template <class Op, class Prefix>
  __device__ __forceinline__ state_t<Op> exclusive_scan(const Op&, const state_t<Op>& thread_total, Prefix& prefix,
                                                        temp_storage<state_t<Op>>&) {
    return prefix(thread_total);
  }
};

/// Lanes across 32 sequences whose elements at a step are adjacent, each lane scanning its own sequence
/// step by step (channel.cuh). One warp a block whatever the policy's block size: a batch of 12288
/// channels is only 384 groups, and one-warp blocks spread them over every multiprocessor. RUNS: kernels
/// of their own for batches of fewer than 32 channels a sequence, whose rows move in runs of adjacent
/// lanes where they can (channel.cuh's channel_lane_run; in every kernel, the code slowed the wide
/// batches' block tiles, which sit at their register cap).
template <int THREADS, bool RUNS = false>
struct channel_group {
  static constexpr group_kind kind = group_kind::channel;
  static constexpr bool runs = RUNS;
  static constexpr int block_threads = warp_threads;
  static constexpr bool warp_contiguous = false;
  static constexpr int groups_per_block = 1;
  static constexpr int threads = 1;  // threads per sequence
  static constexpr int sequences_per_group = warp_threads;

  template <class S>
  struct temp_storage {};

  __device__ int rank() const { return 0; }
  __device__ int group_in_block() const { return 0; }
  __device__ int sequence_lane() const { return int(threadIdx.x) % warp_threads; }
  /// The longest of the 32 sequences' bounds (uniform across the warp).
  __device__ index_t loop_end(index_t p1) const {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
      const index_t other = __shfl_xor_sync(full_mask, p1, d);
      p1 = other > p1 ? other : p1;
    }
    return p1;
  }
};

}  // namespace parascan::engine
