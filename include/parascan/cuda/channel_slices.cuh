// Channel groups of K warps that split time. One warp walks a channel group (channel.cuh) only so fast:
// alone on an H200 about 30 ns a row of fp32 pairs (17 instructions a row at 3.5 cycles each, fixed-latency
// dependencies, not memory: ncu). A batch whose lengths differ (packed, 1..8192 rows) ends on its longest
// groups walking alone, and a batch of too few groups leaves the device idle. Here a block of K warps takes
// one group of 32 sequences (lane = sequence, as channel.cuh): tile by tile, warp w stages and folds rows
// [w * ROWS, (w + 1) * ROWS) of the tile, the K warps' totals meet in shared memory (one block barrier a
// tile), and each warp rescans its rows from the carry before the tile and the totals of the warps before
// it. A group alone then walks about 10 ns a row (K = 8), for about twice the instructions a row.
//
// Groups of mixed lengths (whole, longest first) run a block a multiprocessor where a block alone moves its
// multiprocessor's share of the bytes (channel_slices_alone_pays): the launch asks for just over half a
// multiprocessor's shared memory (device.cuh's lone_block_shared). Timed block by block (an instrumented copy
// of this kernel; H200, the bench's packed batch of 1..8192 rows, D = 64), multiprocessors move rows at
// different rates, and at two blocks a multiprocessor the longest groups, each beside another block for
// most of its life, ended last, the multiprocessors idle 6-8 us of the kernel's 221 on average at the end.
// Numbers and the variants tried: README.md (mixed-length channel groups) and
// bench/results/h200-channel-slices-alone-2026-11-30.log.
//
// Deterministic: every warp folds the carry and the K totals in the same order (left to right), so the
// carry is the same in every warp, bit for bit, and results depend on the shape and K only.
#pragma once

#include <cuda_pipeline_primitives.h>

#include <atomic>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "channel.cuh"

namespace parascan::engine {

/// Stages of each warp's ring in a time-splitting channel group (device.cuh's channel_slice_warps warps):
/// K warps of 3 stages keep two tiles of a group's bytes in flight (a block of 8 warps holds 100 KiB for
/// fp32 pairs: two blocks a multiprocessor on Hopper unless the launch asks for one, one on an A100's 164
/// KiB; where a block does not fit, the one-warp groups run). Measured on an H200 (lengths 1..8192, D =
/// 64): 8 warps of 2 stages 73-76% of copy, 6 of 2 69-75%, 4 of 3 69-71%, 4 of 2 65-69%, one-warp groups
/// 69-70%. 3 stages against 2 (H200,
/// 2026-11-30, two rounds alternated, bench/results/h200-channel-slices-stages-2026-11-30.log): (2, 65536,
/// 1536) btd 82.1 -> 95.7% (96 groups: a block a multiprocessor, whose bytes in flight doubled), the packed
/// 1..8192 batch 84.8-85.1 -> 85.1-85.4%, (1, 65536, 1536) 74.8 -> 74.7% (48 blocks), the rest within noise.
constexpr int channel_slice_stages = 3;

/// Dynamic shared memory of a time-splitting channel group: each warp's ring of STAGES stages, then the
/// warps' totals of two tiles (double-buffered: one barrier a tile).
template <int K, int STAGES, class Op, class Pack>
struct channel_slices_layout {
  using staging = channel_staging<STAGES, Op, Pack>;
  static constexpr std::size_t staging_bytes = staging::per_warp * K;
  static constexpr std::size_t bytes = staging_bytes + std::size_t(2 * K * warp_threads) * sizeof(state_t<Op>);
};

/// Walks this warp's rows of the tiles of its block's group (32 sequences: this lane's has n steps, the
/// longest loop_end) from `carry` and returns the carry after them, writing emit() of each step when
/// WRITE. `shared`: the block's channel_slices_layout. Every thread of the block calls it.
template <int K, int STAGES, bool WRITE, bool RUNS, class Op, class... T, class Outs>
__device__ state_t<Op> walk_channel_slices(unsigned char* shared, const Op& op, const cursor_pack<T...>& in,
                                           const Outs& out, index_t n, index_t loop_end, bool reverse,
                                           bool exclusive, state_t<Op> carry) {
  using S = state_t<Op>;
  using layout = channel_slices_layout<K, STAGES, Op, input_pack<T...>>;
  using plan = typename layout::staging;
  constexpr int ROWS = plan::rows;
  constexpr index_t tile_rows = index_t(K) * ROWS;
  using raw_t = item_values<1, T...>;
  const int warp = int(threadIdx.x) / warp_threads, lane = int(threadIdx.x) % warp_threads;
  unsigned char* const ring = shared + warp * plan::per_warp;
  S* const totals = reinterpret_cast<S*>(shared + layout::staging_bytes);  // [2][K][32]

  row_pieces<T...> pieces;
  find_row_pieces<0, RUNS>(in, pieces, n);
  const bool one_length = __all_sync(full_mask, n == __shfl_sync(full_mask, n, 0));
  const auto stage = [&](int k) { return ring + k * plan::stage_bytes; };
  const auto stage_at = [&](index_t first, int k) {  // this warp's rows from `first`, into stage k
    const bool whole = one_length && __all_sync(full_mask, first + ROWS <= n);
    stage_all_rows<ROWS, 0, RUNS>(in, pieces, row_block{n, first, 0, n, reverse, whole}, stage(k));
  };
#pragma unroll
  for (int k = 0; k < STAGES - 1; ++k) {  // prologue: this warp's rows of the first STAGES - 1 tiles
    const index_t first = k * tile_rows + warp * ROWS;
    if (first < loop_end) stage_at(first, k);
    __pipeline_commit();
  }

  const auto walk = [&](auto exclusive_tag) {
    [[maybe_unused]] constexpr bool X = decltype(exclusive_tag)::value;  // prefix scans only
    int current = 0, parity = 0;
    for (index_t base = 0; base < loop_end; base += tile_rows, parity ^= 1) {
      __syncwarp();  // every lane is past its reads of the stage refilled now (the previous tile's)
      const index_t ahead = base + (STAGES - 1) * tile_rows + warp * ROWS;
      if (ahead < loop_end) stage_at(ahead, current == 0 ? STAGES - 1 : current - 1);
      __pipeline_commit();
      __pipeline_wait_prior(STAGES - 1);
      __syncwarp();
      const unsigned char* rows = stage(current);
      current = current == STAGES - 1 ? 0 : current + 1;
      const index_t first = base + warp * ROWS;
      const int valid = first >= n ? 0 : n - first >= ROWS ? ROWS : int(n - first);

      S total = op.identity();
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (r >= valid) break;
        raw_t v;
        read_row<ROWS>(rows, r, v);
        total = op(total, lift_item(op, v, 0));
      }
      S* const tile_totals = totals + parity * K * warp_threads;
      tile_totals[warp * warp_threads + lane] = total;
      // One barrier a tile: a warp writes these totals again two tiles on, after the next tile's barrier,
      // which every warp reaches only once it has read them.
      __syncthreads();
      S before = carry;  // the carry before this warp's rows; `carry` becomes the one after the tile
#pragma unroll
      for (int w = 0; w < K; ++w) {
        if (w == warp) before = carry;
        carry = op(carry, tile_totals[w * warp_threads + lane]);
      }
      if constexpr (WRITE) {
        Outs at = rows_from(out, first, n, reverse);
#pragma unroll
        for (int r = 0; r < ROWS; ++r, next_row(at)) {
          if (r >= valid) break;
          raw_t v;
          read_row<ROWS>(rows, r, v);
          scan_step<true, X>(op, v, at, 0, before);
        }
      }
    }
  };
  if (exclusive)
    walk(std::true_type{});
  else
    walk(std::false_type{});
  return carry;
}

/// One channel group (32 sequences) a block of K warps, whole sequences: a prefix scan (WRITE) or a
/// reduction.
template <int K, int STAGES, bool WRITE, bool RUNS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(K * warp_threads) channel_slices_kernel(const segment_args<Op, Pack, Outs> a) {
  extern __shared__ __align__(16) unsigned char slices_shared[];
  const index_t g = a.group_order != nullptr ? a.group_order[blockIdx.x] : index_t(blockIdx.x);
  const index_t s = g * warp_threads + int(threadIdx.x) % warp_threads;
  const bool active = s < a.count;  // lanes past the last sequence only pad
  const index_t n = active ? a.in.head.length_of(s) : 0;
  const index_t loop_end = channel_group<warp_threads>{}.loop_end(n);  // the same in every warp
  decltype(bind_outputs(a.out, 0)) out{};
  if (WRITE && active) out = bind_outputs(a.out, s);
  const state_t<Op> carry = walk_channel_slices<K, STAGES, WRITE, RUNS>(
      slices_shared, a.op, active ? bind(a.in, s) : bind(a.in, 0), out, n, loop_end, a.reverse, a.exclusive,
      active ? start_state(a.op, a.initial, s) : a.op.identity());
  if (active && threadIdx.x < warp_threads) a.write_final(s, carry);
}

/// Steps of a tile of the time-splitting channel groups (every warp's rows of one stage).
template <class Op, class Pack>
constexpr index_t channel_slices_tile() {
  return index_t(channel_slice_warps) * channel_staging<2, Op, Pack>::rows;
}

/// Launches of these groups, and those that asked for a block a multiprocessor, in this process (tests).
inline std::atomic<long long>& channel_slices_launches() {
  static std::atomic<long long> count{0};
  return count;
}
inline std::atomic<long long>& channel_slices_lone_launches() {
  static std::atomic<long long> count{0};
  return count;
}

/// Whether a block of these groups alone on a multiprocessor moves its share of the bytes: inputs of 8
/// bytes a step or more and states of at most 8 bytes (fp32 pairs: the packed batch of 1..8192 rows, D =
/// 64, 84.7-85.1 -> 86.9% of copy, D = 128 85.6-85.9 -> 87.8-87.9). Fewer bytes a row for the same
/// instructions, and a block alone walks too slowly: bf16 pairs 57.6-57.8 -> 42.1%, fp32 logcumsumexp (4
/// bytes in, an exp and a log a step) 76.5-76.8 -> 57.2-57.3% (H200, 2026-11-30, the same batch, two rounds;
/// bench/results/h200-channel-slices-alone-2026-11-30.log).
template <class Op, class Pack>
constexpr bool channel_slices_alone_pays() {
  return detail::input_bytes_per_step<Pack>() >= 8 && sizeof(state_t<Op>) <= 8;
}

/// Runs whole channel groups (32 sequences each) a block of channel_slice_warps warps each: a prefix scan
/// (WRITE) or a reduction; `mixed_lengths` (groups started longest first): a block a multiprocessor where
/// that pays (channel_slices_alone_pays, lone_block_shared). False (nothing run) where the stages do not
/// fit (channel_staging) or a block's shared memory would not fit the device (e.g. sm_75's 64 kB).
template <bool WRITE, bool RUNS, class Op, class Pack, class Outs>
bool run_channel_slices(const segment_args<Op, Pack, Outs>& a, index_t groups, bool mixed_lengths,
                        cudaStream_t stream) {
  constexpr int K = channel_slice_warps;
  constexpr int stages = channel_slice_stages;  // not the policy's: K warps of them
  using layout = channel_slices_layout<K, stages, Op, Pack>;
  if constexpr (!layout::staging::used) {
    return false;
  } else {
    if (groups == 0) return true;
    if (groups > std::numeric_limits<int>::max()) return false;
    const auto kernel = channel_slices_kernel<K, stages, WRITE, RUNS, Op, Pack, Outs>;
    static std::atomic<int> fits[64] = {}, allowed[64] = {};
    static std::atomic<int> lone[64] = {};
    if (!fits_shared_memory(fits, kernel, layout::bytes)) return false;
    const std::size_t padded = lone_block_shared(lone, kernel, layout::bytes);
    const bool alone = mixed_lengths && channel_slices_alone_pays<Op, Pack>();
    const std::size_t bytes = alone ? padded : layout::bytes;
    allow_dynamic_shared(allowed, kernel, int(padded));  // the most either launch asks, once per device
    if (log_plans())
      std::fprintf(stderr, "parascan: channel groups of %d warps splitting time: %lld blocks%s\n", K,
                   static_cast<long long>(groups), alone ? ", one a multiprocessor" : "");
    kernel<<<unsigned(groups), K * warp_threads, bytes, stream>>>(a);
    detail::check_launch("parascan channel_slices_kernel");
    channel_slices_launches().fetch_add(1, std::memory_order_relaxed);
    if (bytes > layout::bytes) channel_slices_lone_launches().fetch_add(1, std::memory_order_relaxed);
    return true;
  }
}

}  // namespace parascan::engine
