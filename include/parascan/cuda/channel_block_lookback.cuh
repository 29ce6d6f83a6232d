// Channel batches split ragged, in one pass (plan.hpp's ragged plan): a skewed packed (total, D) batch
// whose few long sequences hold most of its rows among many short ones, a batch of uneven lengths whose
// groups do not fill the device, and one of fewer groups than half the multiprocessors (since 2026-12-01:
// (1, 65536, 1536) btd fp32 74 -> 90% of copy, 4 of 2^18 rows among 40 short 8 -> 80%; plan_scan has the
// figures). The first is what this file was written for. Reduce-then-scan over ragged segments read the
// inputs twice in three passes (fold, carry, rescan); one-warp tiles with a look-back (channel_lookback.cuh)
// measured no faster (36-41% of copy, their look-backs 63 tiles deep). Here a tile is a block of K warps
// over K x STAGES stages of rows of one group (32 sequences, lane = sequence): each warp stages and folds
// its rows, the K totals meet in shared memory, warp 0 looks back over the group's earlier tiles
// (channel_look_back) and the warps scan their rows from the carry before the tile and the totals of the
// warps before them. The groups of one tile (the short sequences) run whole, a warp each, K to a block.
//
// Measured (H200, 2026-11-29, fp32 linear recurrence, 4 sequences of 2^18 rows among 4000 of 1..64, D = 64,
// 906 MB moved, copy floor 0.222 ms; a probe alternating the two paths in separate processes): the kernel
// 286 us (ncu: 3.1 TB/s, 80 registers, three blocks a multiprocessor) where the three passes took 178 + 14
// + 276 us; calls back to back 0.318 against 0.472 ms a call (70 / 47% of copy); a call alone, timed from
// an event recorded before it, 0.53 against 0.60 ms (its host side, the tile list built and copied from
// pageable memory, which waits for the stream, is not hidden there). K x STAGES of 8 x 2 (64 KiB) and 16 x
// 2 read alike, 4 x 2 and 4 x 4 slower; back to back, 8 x 3 (two blocks a multiprocessor) and 12 x 2 read
// 0.300-0.305 ms a call where 8 x 2 read 0.312-0.318 and 6 x 2 (four blocks) 0.381-0.385 (one process
// each, two rounds). Since 2026-11-30 the tiles are 8 x 3 (three rounds, one process each, alternated:
// 0.296-0.300 against 8 x 2's 0.308-0.310 ms a call, 74 against 72% of copy; 12 x 2 0.294-0.297; at D = 128
// 80.7 / 80.0 / 79.3%; bench/results/h200-skewed-channels-2026-11-30.log). A block of K warps for each of
// the 8000 short groups too (one warp of rows each) read 0.73-0.86 ms against the three passes' 0.63-0.65.
//
// The look-back is most of what the kernel costs beyond its bytes: without it (wrong results) calls back to
// back read 0.237 against 0.287 ms (93 against 77% of copy; H200, probe, two rounds; an earlier reading of
// calls alone, 0.50-0.63 against 0.55-0.67 ms, had put it at a tenth). Warp K - 1 publishes the tile's
// aggregate while warp 0 looks back, one wait for the L2 off warp 0's path (0.287-0.288 -> 0.280-0.282 ms,
// three rounds alternated). A ninth warp that looks back alone and publishes the inclusive prefix after the
// block's barrier, while the eight scan, read within a point of that (0.277-0.282 ms at 80 registers, 12
// bytes spilled to keep two blocks a multiprocessor; at its own 110 registers, one block: 0.36 ms).
//
// What holds the bench's skewed batch near 80% of copy (H200, 2026-11-30, 16 rows held a warp; probe
// and timings in bench/results/h200-skewed-limits-2026-11-30.log): a tile's block reads its rows, then
// waits on its look-back, then scans and writes, and only the first phase keeps loads in flight. Per
// tile (globaltimer, one call): reading and folding 7.6 us (median), the look-back 3.5, scanning and
// writing 2.3; without the look-back (wrong results) the batch reads 82.0 against 78.8%. Tried and not
// kept: 24 or 32 rows held (78.9-79.5%); prefetching into L2 the tile of the block that will likely take
// this slot, from the lanes or as bulk prefetches (58-71%: the prefetches compete with the tiles' own
// loads); persistent blocks (one a multiprocessor, two tiles of shared memory, the next tile's rows
// loading while the block looks back and scans: 21-28%, since a tile's aggregate goes out only when its
// block reaches it, and look-backs then wait on whole tiles of other blocks); the aggregates loaded by all
// eight warps into shared memory and folded by warp 0 (77.6-78.4 against 79.3-79.8%: two more barriers);
// persistent blocks as a warp-specialized pipeline (2026-12-01, bench/results/
// h200-skewed-pipeline-2026-12-01.log): one block a multiprocessor, each scanning warp holding three tiles
// (loading, folding, scanning), a look-back warp finding tile k's carry while the scanning warps fold
// tile k + 1, a planner warp claiming tiles from a counter and reading their groups and lengths ahead, a
// publisher warp sending the aggregates out: 79.2-79.5% for these tiles against 60.1-60.6% (8 scanning
// warps x 2 stages) and 63.9-65.3% (16 x 1); without the look-back (wrong results) 70.3-71.8%. Each
// iteration meets at two barriers, and a block of 8 or 16 scanning warps moves less than two blocks of
// these tiles with their loads in flight.
//
// Launch order: round by round, tile j of every long group before any tile j + 1 (the resident tiles spread
// over the long groups), longer groups first within a round, then the blocks of short groups: they fill
// the multiprocessors that the last round leaves idle (at the end of round 0 they read 79.2-79.4% of copy,
// at the end 79.4-80.0%: H200, the bench's skewed batch, the packed probe as the bench, five rounds in two
// calls; first 79.0-79.3%). The host lists only the long groups (plan.hpp's channel_block_tables, from one
// pass over the sequences); the short blocks take every group in order, 8 to a block, and a warp whose
// group has a sequence longer than a tile leaves. Listing all 8008 groups of the bench's batch took the host 43 us a
// call and a 170 KiB pageable copy that made it wait for the stream; now 11 us and 44 KiB (H200, probe,
// three rounds alternated: a call alone 0.362-0.367 -> 0.323-0.325 ms, 60-61 -> 68% of copy; back to back
// 0.296-0.300 -> 0.287-0.289 ms, 74 -> 77%; the host 0.257 -> 0.046 ms a call to return).
//
// Deterministic: every fold runs in a fixed order (the K totals left to right, the look-back as
// channel_look_back), so results depend on the shape only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <vector>

#include "channel_lookback.cuh"

namespace parascan::engine {

/// Warps of a skewed batch's block tile, and stages of rows a warp (384 staged rows of fp32 pairs, 96 KiB:
/// two blocks a multiprocessor; with the 128 held in registers, channel_block_held, 512 rows a tile).
constexpr int channel_block_warps = 8;
constexpr int channel_block_stages = 3;

/// Rows each warp of a block tile holds in registers before its staged rows: 16 where the inputs move at
/// most 8 bytes a step in elements of 4 bytes or more (32 registers a thread for fp32 pairs; two blocks a
/// multiprocessor still fit at 128 registers), else none. A tile waits on its look-back holding its rows,
/// and shared memory bounds the bytes a multiprocessor has in flight: rows held in registers add to them.
/// Measured (H200, 2026-11-30, the bench's skewed batch, timed as the bench; bench/results/
/// h200-channel-held-rows-2026-11-30.log and h200-skewed-limits-2026-11-30.log): fp32 linear recurrence
/// 75.4-76.5 -> 79.3-79.6% of copy (8 rows 77.9%, 24 or 32 no better), fp32 logcumsumexp 53.4-53.6 ->
/// 57.5-58.6%; bf16 pairs 41.0-41.6 -> 38.5-39.0% (a register for each 2-byte element), so they hold none.
template <class Pack>
PARASCAN_HD constexpr int channel_block_held() {
  return detail::input_bytes_per_step<Pack>() <= 8 && detail::narrowest_input_bytes<Pack>() >= 4 ? 16 : 0;
}

/// Dynamic shared memory of a block tile: each warp's stages, then the K warps' totals and the carry
/// before the tile (32 lanes each). A warp's rows: the held ones, then its stages'.
template <int K, int STAGES, class Op, class Pack>
struct channel_block_layout {
  using staging = channel_staging<STAGES, Op, Pack>;
  static constexpr index_t warp_rows = index_t(STAGES) * staging::rows + channel_block_held<Pack>();
  static constexpr index_t tile_rows = K * warp_rows;
  static constexpr std::size_t staging_bytes = staging::per_warp * K;
  static constexpr std::size_t bytes = staging_bytes + std::size_t((K + 1) * warp_threads) * sizeof(state_t<Op>);
};

/// Calls that ran this single pass, in this process (for tests and diagnostics).
inline std::atomic<long long>& channel_block_launches() {
  static std::atomic<long long> count{0};
  return count;
}

/// Where the blocks of a launch work (plan.hpp's channel_block_tables, on the device).
/// Blocks [0, long_tiles) take order[b]; the rest (the tables' short_blocks) K consecutive groups each
/// (block long_tiles + k: groups k * K .. k * K + K - 1).
struct channel_block_launch {
  const index_t* first;             // long group i's look-back slots first[i] .. first[i + 1] - 1
  const int* groups;                // long group i's group
  const channel_block_tile* order;  // the long tiles in launch order
  int long_tiles;
  index_t tile_rows;  // a group with a longer sequence is a long one
};

/// Block b's work: a tile of a long group (rows [j * tile_rows, (j + 1) * tile_rows) of its 32 sequences,
/// warp w the w-th warp_rows of them; its states at slot first[i] + j of `status`), or K consecutive
/// groups run whole, a warp each, where they have no sequence longer than a tile.
template <int K, int STAGES, bool RUNS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(K * warp_threads, channel_block_held<Pack>() > 0 ? 2 : 1)
    channel_block_lookback_kernel(const segment_args<Op, Pack, Outs> a, const channel_tile_status<state_t<Op>> status,
                                  const channel_block_launch launch) {
  using S = state_t<Op>;
  using layout = channel_block_layout<K, STAGES, Op, Pack>;
  extern __shared__ __align__(16) unsigned char channel_block_shared[];
  S* const totals = reinterpret_cast<S*>(channel_block_shared + layout::staging_bytes);  // [K][32]
  S* const carries = totals + K * warp_threads;                                           // [32]
  const int warp = int(threadIdx.x) / warp_threads, lane = int(threadIdx.x) % warp_threads;
  unsigned char* const staging = channel_block_shared + warp * layout::staging::per_warp;
  const int b = int(blockIdx.x), shorts = b - launch.long_tiles;
  if (shorts >= 0) {  // block-uniform: no barrier below is reached
    const index_t s = (index_t(shorts) * K + warp) * warp_threads + lane;
    const bool active = s < a.count;
    const index_t n = active ? a.in.head.length_of(s) : 0;
    // A group past the batch, or a long one (its tiles are other blocks'), leaves; the host listed the
    // long groups by the same test.
    if (__all_sync(full_mask, !active) || __any_sync(full_mask, n > launch.tile_rows)) return;
    decltype(bind_outputs(a.out, 0)) out{};
    if (active) out = bind_outputs(a.out, s);
    const S total = scan_channels<STAGES, true, RUNS>(
        staging, a.op, active ? bind(a.in, s) : bind(a.in, 0), out, n, 0, n, channel_group<warp_threads>{}.loop_end(n),
        a.reverse, a.exclusive, active ? start_state(a.op, a.initial, s) : a.op.identity());
    if (active) a.write_final(s, total);
    return;
  }
  const channel_block_tile here = launch.order[b];
  const index_t g = launch.groups[here.long_group], j = here.tile;
  const index_t first = launch.first[here.long_group];
  const bool last = first + j == launch.first[here.long_group + 1] - 1;
  const index_t s = g * warp_threads + lane;
  const bool active = s < a.count;  // lanes past the last sequence only pad
  const index_t n = active ? a.in.head.length_of(s) : 0;
  const index_t p0 = j * layout::tile_rows + warp * layout::warp_rows;
  const index_t p1 = max(p0, min(n, p0 + layout::warp_rows));
  const index_t loop_end = channel_group<warp_threads>{}.loop_end(p1);
  decltype(bind_outputs(a.out, 0)) out{};
  if (active) out = bind_outputs(a.out, s);
  const Op& op = a.op;
  const channel_lookback_prefix<Op> look_back{op,
                                              status,
                                              first + j,
                                              first,
                                              last,
                                              active ? start_state(op, a.initial, s) : op.identity(),
                                              active && a.final != nullptr ? a.final + s : nullptr,
                                              active && a.final_states != nullptr ? a.final_states + s : nullptr};
  // The block's prefix callback: the tile's total from the warps' (left to right; warp K - 1 publishes it
  // while warp 0 looks back), then each warp's carry: the one before the tile and the totals of the warps
  // before it. Warp 0 publishes the inclusive prefix after the block's barrier, while the other warps scan:
  // its release store waits for the L2 off their path (H200, probe timed as the bench, two rounds: skewed
  // batch 79.3-79.4 -> 79.8-79.9% of copy, its long sequences alone 81.4-81.7 -> 82.4-82.5, one sequence
  // of 65536 rows at D = 1024 86.1 -> 86.9; bench/results/h200-skewed-flagged-late-2026-12-02.log).
  const auto tile_total = [&] {  // the K warps' totals, left to right (the same in every warp)
    S total = totals[lane];
#pragma unroll
    for (int w = 1; w < K; ++w) total = op(total, totals[w * warp_threads + lane]);
    return total;
  };
  const auto carry_of = [&](const S& total) {
    totals[warp * warp_threads + lane] = total;
    __syncthreads();
    if (warp == 0)
      carries[lane] = look_back.carry_before();
    else if (warp == K - 1)
      look_back.publish_aggregate(tile_total());  // while warp 0 looks back
    __syncthreads();
    S before = carries[lane];
    if (warp == 0) look_back.finish(before, tile_total());
#pragma unroll
    for (int w = 0; w < K - 1; ++w)
      if (w < warp) before = op(before, totals[w * warp_threads + lane]);
    return before;
  };
  scan_channel_tile<STAGES, channel_block_held<Pack>(), RUNS>(staging, op, active ? bind(a.in, s) : bind(a.in, 0), out,
                                                              n, p0, p1, loop_end, a.reverse, a.exclusive, carry_of);
}

/// The prefix scan of a channel batch split ragged (dispatch asks plan.hpp's runs_channel_block_tiles first) in
/// one pass. `lengths`: the batch's view with host offsets, whose groups of 32 longer than a tile the host
/// lists (layout.hpp's groups_longer_than). False (nothing run) where the stages do not fit the device's
/// shared memory or there would be 2^31 tiles or more.
template <bool RUNS, class Op, class Pack, class Outs, class Lengths>
bool run_channel_block_lookback(segment_args<Op, Pack, Outs> a, index_t groups, const Lengths& lengths,
                                temp_allocator& alloc, cudaStream_t stream) {
  using S = state_t<Op>;
  constexpr int K = channel_block_warps, STAGES = channel_block_stages;
  using layout = channel_block_layout<K, STAGES, Op, Pack>;
  if constexpr (!layout::staging::used || sizeof(S) % 4 != 0) {
    return false;
  } else {
    const auto kernel = channel_block_lookback_kernel<K, STAGES, RUNS, Op, Pack, Outs>;
    static std::atomic<int> fits[64] = {}, allowed[64] = {};
    if (groups == 0 || groups >= std::numeric_limits<int>::max() || !fits_shared_memory(fits, kernel, layout::bytes))
      return false;
    // The host's tables, kept from call to call by this thread (their memory reused): the long groups
    // only, found in one pass over the sequences.
    thread_local channel_block_tables tables;
    thread_local std::vector<unsigned char> table_bytes;
    tables.build(groups, layout::tile_rows, K, [&](index_t threshold, auto&& visit) {
      groups_longer_than(lengths, warp_threads, threshold, visit);
    });
    const index_t slots = tables.first.back(), blocks = tables.blocks();
    if (slots >= std::numeric_limits<int>::max() || blocks >= std::numeric_limits<int>::max()) return false;
    // One copy of the three tables (pageable memory: the call returns once they are copied out).
    tables.bytes_into(table_bytes);
    detail::temp_buffer device_tables(alloc, stream, table_bytes.size());
    detail::cuda_check(cudaMemcpyAsync(device_tables.as<void>(), table_bytes.data(), table_bytes.size(),
                                       cudaMemcpyHostToDevice, stream),
                       "parascan channel tile list");
    using status_t = channel_tile_status<S>;
    detail::temp_buffer memory(alloc, stream, status_t::bytes(slots));
    if (slots > 0)  // none where no group is longer than a tile
      detail::cuda_check(cudaMemsetAsync(memory.as<void>(), 0, status_t::level_bytes(slots), stream),
                         "parascan look-back status");
    allow_dynamic_shared(allowed, kernel, int(layout::bytes));
    if (log_plans())
      std::fprintf(stderr,
                   "parascan: channel block tiles in one pass (ragged split): %lld blocks of %d warps (%lld "
                   "groups longer than a tile of %lld steps, %lld tiles; %lld blocks of whole groups, a warp each)\n",
                   static_cast<long long>(blocks), K, static_cast<long long>(tables.groups.size()),
                   static_cast<long long>(layout::tile_rows), static_cast<long long>(slots),
                   static_cast<long long>(tables.short_blocks));
    unsigned char* const base = device_tables.as<unsigned char>();
    const channel_block_launch launch{reinterpret_cast<const index_t*>(base),
                                      reinterpret_cast<const int*>(base + tables.groups_offset()),
                                      reinterpret_cast<const channel_block_tile*>(base + tables.order_offset()),
                                      int(tables.order.size()),
                                      layout::tile_rows};
    kernel<<<unsigned(blocks), K * warp_threads, layout::bytes, stream>>>(a, status_t::in(memory.as<void>(), slots),
                                                                          launch);
    detail::check_launch("parascan channel_block_lookback_kernel");
    channel_block_launches().fetch_add(1, std::memory_order_relaxed);
    return true;
  }
}

}  // namespace parascan::engine
