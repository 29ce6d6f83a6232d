// Single pass for channel groups ((B, T, D) and packed (total, D) batches, lane = sequence) when there are
// too few groups of 32 sequences to fill the device and their sequences are split in time (since
// 2026-12-01 only at one group or more for every two multiprocessors, of similar lengths, shorter than
// four tiles of the whole groups of 8 warps: fewer groups run channel_block_lookback.cuh's block tiles,
// which read (1, 65536, 1536) btd at 90% of copy against these tiles' 74%, plan.hpp): every tile of
// a group (channel_tile_stages stages of rows, 16 KiB of inputs) is a one-warp block. The warp stages its
// whole tile into shared memory at once, each lane folds its sequence's rows into the tile's aggregate,
// the warp publishes the 32 aggregates, looks back over its group's earlier tiles for the state before
// the tile, publishes the 32 inclusive prefixes and scans its rows from there, writing every step.
// Inputs are read once (reduce-then-scan reads them twice): (1 / 2, 65536, 1536) btd fp32 recurrence
// 54 / 55 -> 71.5 / 74.6% of copy (H100).
//
// A tile's 32 states are published as plain values, a warp barrier, then a level for the tile that
// look-backs poll (1: aggregates out, 2: inclusive prefixes out), stored with release semantics. A block
// publishes before it stores any output, so the release waits only for the states. (Flagged words
// instead, as lookback.cuh's, need every value zeroed before the launch and twice the bytes: 66.7 /
// 72.4%. Without fences, unsafe: 77.8 / 81.5%, the fences' cost; without the look-back, wrong: 89.8 /
// 90.4%, its cost.)
// Deterministic: each lane folds aggregates strictly left to right from the nearest inclusive prefix, so
// every prefix is the sequential fold of the start state and the tiles' aggregates (lookback.cuh).
//
// Not used for batches of uneven lengths: tiles of whole groups measured no faster than a warp a group
// there (packed (total, 64), 256 sequences of 1..8192 rows: 69% either way; 4 of 2^18 among 4000 of 1..64
// rows: 36-41% against reduce-then-scan's 39-42%, its look-backs 63 tiles deep on average; that skewed
// batch runs block tiles of 8 warps since, channel_block_lookback.cuh). The tile structure's own cost shows
// on balanced batches: (8, 4096, 1536) runs at 72.6% this way, 91% pipelined.
#pragma once

#include <cuda/atomic>

#include <cstdio>
#include <cstring>
#include <limits>

#include "channel.cuh"

namespace parascan::engine {

/// Stages of rows a channel look-back tile holds (channel_rows: 4 KiB of inputs a stage). Two measured
/// 59 / 65% on the shapes above, eight 28%.
constexpr int channel_tile_stages = 4;

/// States move to and from the status arrays word by word through L2 (a launch writes each slot once and
/// reads it only after its tile's level says it is out).
template <class S>
__device__ __forceinline__ void store_state(S* slot, const S& value) {
  unsigned words[sizeof(S) / 4];
  std::memcpy(words, &value, sizeof(S));
#pragma unroll
  for (int i = 0; i < int(sizeof(S) / 4); ++i) __stcg(reinterpret_cast<unsigned*>(slot) + i, words[i]);
}
template <class S>
__device__ __forceinline__ S load_state(const S* slot) {
  unsigned words[sizeof(S) / 4];
#pragma unroll
  for (int i = 0; i < int(sizeof(S) / 4); ++i) words[i] = __ldcg(reinterpret_cast<const unsigned*>(slot) + i);
  S value;
  std::memcpy(&value, words, sizeof(S));
  return value;
}

/// Status of a launch's tiles: tile t's level (zeroed before the launch), and its 32 lanes' aggregates
/// and inclusive prefixes, lane l's at t * 32 + l.
template <class S>
struct channel_tile_status {
  unsigned* level;
  S* aggregate;
  S* inclusive;

  static std::size_t level_bytes(index_t tiles) { return (std::size_t(tiles) * sizeof(unsigned) + 15) / 16 * 16; }
  static std::size_t bytes(index_t tiles) {
    return level_bytes(tiles) + 2 * std::size_t(tiles) * warp_threads * sizeof(S);
  }
  static channel_tile_status in(void* memory, index_t tiles) {
    S* states = reinterpret_cast<S*>(static_cast<unsigned char*>(memory) + level_bytes(tiles));
    return {static_cast<unsigned*>(memory), states, states + std::size_t(tiles) * warp_threads};
  }

  /// Warp-wide: stores each lane's `value` in `slots` of tile t, then lane 0 raises t's level to `to` with
  /// a release store, after a warp barrier that orders every lane's store before it (release is cumulative).
  __device__ void publish(S* slots, index_t t, const S& value, unsigned to) const {
    store_state(slots + t * warp_threads + threadIdx.x % warp_threads, value);
    __syncwarp();
    if (threadIdx.x % warp_threads == 0) {
      // Raised, never lowered: a block tile's aggregate may go out after its inclusive prefix (two warps).
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> l(level[t]);
      if (to == 1)
        l.fetch_max(to, cuda::memory_order_release);
      else
        l.store(to, cuda::memory_order_release);
    }
  }
  __device__ unsigned level_of(index_t t) const {
    return cuda::atomic_ref<unsigned, cuda::thread_scope_device>(level[t]).load(cuda::memory_order_relaxed);
  }
};

/// Warp-wide, for tile t > first (its group's tile 0 is `first`): each lane's state before tile t. Polls
/// the levels of 32 tiles at a time (lane i, tile end - 32 + i) until the nearest tile with its inclusive
/// prefixes out is found and every tile after it has its aggregates out; then each lane folds, left to
/// right, that tile's inclusive prefix and the aggregates after it, 16 loads in flight at a time (8 for
/// states over 8 bytes).
template <class Op>
__device__ state_t<Op> channel_look_back(const Op& op, const channel_tile_status<state_t<Op>>& st, index_t first,
                                         index_t t) {
  using S = state_t<Op>;
  const int lane = int(threadIdx.x) % warp_threads;
  index_t end = t, from = -1;
  for (;;) {
    const index_t mine = end - warp_threads + lane;
    const unsigned level = mine >= first ? st.level_of(mine) : 1;  // tiles of other groups never count
    const unsigned inclusive = __ballot_sync(full_mask, level == 2), out = __ballot_sync(full_mask, level != 0);
    if (inclusive != 0) {
      const int k = warp_threads - 1 - __clz(inclusive);
      const unsigned after = k == warp_threads - 1 ? 0u : ~0u << (k + 1);
      if ((out & after) == after) {
        from = end - warp_threads + k;
        break;
      }
    } else if (out == full_mask) {
      end -= warp_threads;  // all aggregates: the nearest inclusive prefix is further back
      continue;
    }
    __nanosleep(32);
  }
  // The states behind the levels seen are read after them: each lane's acquire fence follows its own
  // level loads, and the warp barrier orders them before every lane's state loads (a lane reads states of
  // tiles whose levels other lanes saw).
  cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  __syncwarp();
  S prefix = load_state(st.inclusive + from * warp_threads + lane);
  constexpr int batch = sizeof(S) <= 8 ? 16 : 8;
  for (index_t m = from + 1; m < t; m += batch) {
    S next[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i)
      if (m + i < t) next[i] = load_state(st.aggregate + (m + i) * warp_threads + lane);
#pragma unroll
    for (int i = 0; i < batch; ++i)
      if (m + i < t) prefix = op(prefix, next[i]);
  }
  return prefix;
}

/// One lane's part of a tile (positions [first, p1) of its sequence of n steps, the warp to loop_end):
/// holds the first HELD rows in registers (each lane loads its own elements) and stages the rest, folds
/// them into `total`, asks `carry_of(total)` for the state before them (the look-back: a prefix callback,
/// as CUB's TilePrefixCallbackOp) and scans them from it, writing every step. The held rows are bytes in
/// flight beyond shared memory (channel_block_lookback.cuh).
template <int TILE_STAGES, int HELD = 0, bool RUNS = false, class Op, class... T, class Outs, class CarryOf>
__device__ void scan_channel_tile(unsigned char* tile, const Op& op, const cursor_pack<T...>& in, const Outs& out,
                                  index_t n, index_t first, index_t p1, index_t loop_end, bool reverse,
                                  bool exclusive, const CarryOf& carry_of) {
  using S = state_t<Op>;
  using staging_t = channel_staging<TILE_STAGES, Op, input_pack<T...>>;
  constexpr int ROWS = staging_t::rows;
  using raw_t = item_values<1, T...>;
  const auto stage = [&](int k) { return tile + k * staging_t::stage_bytes; };
  raw_t held[HELD > 0 ? HELD : 1];
#pragma unroll
  for (int r = 0; r < HELD; ++r)
    if (first + r < p1) read_elements(in, time_index(first + r, n, reverse), held[r]);
  const index_t p0 = first + HELD;  // the staged rows

  row_pieces<T...> pieces;
  find_row_pieces<0, RUNS>(in, pieces, n);
  const bool one_length = __all_sync(full_mask, n == __shfl_sync(full_mask, n, 0));
#pragma unroll
  for (int k = 0; k < TILE_STAGES; ++k) {
    const index_t row = p0 + index_t(k) * ROWS;
    if (row < loop_end) {
      const bool whole = one_length && __all_sync(full_mask, row + ROWS <= p1);
      stage_all_rows<ROWS, 0, RUNS>(in, pieces, row_block{n, row, p0, p1, reverse, whole}, stage(k));
    }
    __pipeline_commit();
  }
  // Each lane's rows of stage k, in order, as (raw elements, the outputs at the row: rows_from).
  const auto rows_of = [&](int k, auto&& step) {
    const unsigned char* rows = stage(k);
    const index_t row = p0 + index_t(k) * ROWS;
    Outs outputs = rows_from(out, row, n, reverse);
    if (row + ROWS <= p1) {
#pragma unroll
      for (int r = 0; r < ROWS; ++r, next_row(outputs)) {
        raw_t v;
        read_row<ROWS>(rows, r, v);
        step(v, outputs);
      }
    } else {
      for (int r = 0; r < ROWS && row + r < p1; ++r, next_row(outputs)) {
        raw_t v;
        read_row<ROWS>(rows, r, v);
        step(v, outputs);
      }
    }
  };
  S total = op.identity();
  const auto fold = [&](const raw_t& v, const Outs&) { total = op(total, lift_item(op, v, 0)); };
#pragma unroll
  for (int r = 0; r < HELD; ++r)
    if (first + r < p1) total = op(total, lift_item(op, held[r], 0));
#pragma unroll
  for (int k = 0; k < TILE_STAGES; ++k) {  // folds each stage as it lands
    __pipeline_wait_prior(TILE_STAGES - 1 - k);
    __syncwarp();
    rows_of(k, fold);
  }

  S carry = carry_of(total);
  const auto scan = [&](auto exclusive_tag) {
    constexpr bool X = decltype(exclusive_tag)::value;
    if constexpr (HELD > 0) {
      Outs outputs = rows_from(out, first, n, reverse);
#pragma unroll
      for (int r = 0; r < HELD; ++r, next_row(outputs))
        if (first + r < p1) scan_step<true, X>(op, held[r], outputs, 0, carry);
    }
#pragma unroll
    for (int k = 0; k < TILE_STAGES; ++k)
      rows_of(k, [&](const raw_t& v, const Outs& at) { scan_step<true, X>(op, v, at, 0, carry); });
  };
  if (exclusive)
    scan(std::true_type{});
  else
    scan(std::false_type{});
}

/// The prefix callback of tile `item` of a group whose tile 0 is `first` (a warp's lanes, one sequence
/// each): publishes the tile's aggregate, looks back, publishes its inclusive prefix (a group's last tile
/// has no successor: it publishes nothing and writes the final output and state where asked) and returns
/// the state before the tile (`start` for tile 0). Its three steps may run in different warps (block
/// tiles, channel_block_lookback.cuh: each publication waits for its stores to reach the L2).
template <class Op>
struct channel_lookback_prefix {
  using S = state_t<Op>;
  const Op& op;
  const channel_tile_status<S>& status;
  index_t item, first;
  bool last;
  S start;
  output_t<Op>* final;
  S* final_state;

  __device__ void publish_aggregate(const S& total) const {
    if (item > first && !last) status.publish(status.aggregate, item, total, 1);
  }
  __device__ S carry_before() const { return item > first ? channel_look_back(op, status, first, item) : start; }
  __device__ void finish(const S& carry, const S& total) const {
    const S inclusive = op(carry, total);
    if (!last) status.publish(status.inclusive, item, inclusive, 2);
    if (last) {
      if (final != nullptr) *final = project(op, inclusive);
      if (final_state != nullptr) *final_state = inclusive;
    }
  }
  __device__ S operator()(const S& total) const {
    publish_aggregate(total);
    const S carry = carry_before();
    finish(carry, total);
    return carry;
  }
};

/// A tile waits only on lower blocks (its group's earlier tiles), assumed to start first: CUDA does not
/// promise it; CUB's DeviceScan and lookback.cuh assume the same.
/// Tile j of group g, from `blockIdx.x` round by round (tile j of every group before any tile j + 1: the
/// device's resident tiles spread over all groups; group by group, they crowded into one group's and its
/// look-backs ran hundreds of tiles deep: 32% of copy). Tile j covers positions [j * a.segment, (j + 1) *
/// a.segment) of the group's 32 sequences; its states sit at slot g * a.splits + j.
template <int TILE_STAGES, bool RUNS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(warp_threads)
    channel_lookback_kernel(const segment_args<Op, Pack, Outs> a, const channel_tile_status<state_t<Op>> status) {
  using staging_t = channel_staging<TILE_STAGES, Op, Pack>;
  __shared__ alignas(16) unsigned char tile[staging_t::per_warp];
  const index_t groups = (a.count + warp_threads - 1) / warp_threads;
  const index_t j = index_t(blockIdx.x) / groups, g = index_t(blockIdx.x) - j * groups;
  const index_t first = g * a.splits;
  const index_t s = g * warp_threads + int(threadIdx.x) % warp_threads;
  const bool active = s < a.count;  // lanes past the last sequence only pad
  const index_t n = active ? a.in.head.length_of(s) : 0;
  const index_t p0 = j * a.segment, p1 = max(p0, min(n, p0 + a.segment));
  const index_t loop_end = channel_group<warp_threads>{}.loop_end(p1);
  decltype(bind_outputs(a.out, 0)) out{};
  if (active) out = bind_outputs(a.out, s);
  const channel_lookback_prefix<Op> prefix{a.op,
                                           status,
                                           first + j,
                                           first,
                                           j == a.splits - 1,
                                           active ? start_state(a.op, a.initial, s) : a.op.identity(),
                                           active && a.final != nullptr ? a.final + s : nullptr,
                                           active && a.final_states != nullptr ? a.final_states + s : nullptr};
  scan_channel_tile<TILE_STAGES, 0, RUNS>(tile, a.op, active ? bind(a.in, s) : bind(a.in, 0), out, n, p0, p1,
                                          loop_end, a.reverse, a.exclusive, prefix);
}

/// Whether channel groups of this operator and inputs can run the look-back: states in 4-byte words, a
/// tile's stages in static shared memory.
template <class Op, class Pack>
constexpr bool channel_lookback_fits() {
  return sizeof(state_t<Op>) % 4 == 0 && channel_staging<channel_tile_stages, Op, Pack>::used;
}

/// Steps of a channel look-back tile.
template <class Op, class Pack>
constexpr index_t channel_tile_steps() {
  return index_t(channel_tile_stages) * channel_staging<channel_tile_stages, Op, Pack>::rows;
}

/// The prefix scan of a channel-group batch in one pass, every group the tiles of its longest sequence
/// (dispatch asks plan.hpp's runs_channel_tiles first). False (nothing run) where there would be 2^31
/// tiles or more.
template <bool RUNS, class Op, class Pack, class Outs>
bool run_channel_lookback(segment_args<Op, Pack, Outs> a, const batch_shape& shape, temp_allocator& alloc,
                          cudaStream_t stream) {
  using S = state_t<Op>;
  const index_t tile = channel_tile_steps<Op, Pack>();
  const index_t groups = (a.count + warp_threads - 1) / warp_threads;
  a.segment = tile;
  a.splits = std::max<index_t>(1, (shape.max_length + tile - 1) / tile);
  const index_t tiles = groups * a.splits;
  if (tiles > std::numeric_limits<int>::max()) return false;
  if (log_plans())
    std::fprintf(stderr, "parascan: channel single pass (look-back): %lld tiles of %lld steps\n",
                 static_cast<long long>(tiles), static_cast<long long>(tile));
  using status_t = channel_tile_status<S>;
  detail::temp_buffer memory(alloc, stream, status_t::bytes(tiles));
  detail::cuda_check(cudaMemsetAsync(memory.as<void>(), 0, status_t::level_bytes(tiles), stream),
                     "parascan look-back status");
  channel_lookback_kernel<channel_tile_stages, RUNS>
      <<<unsigned(tiles), warp_threads, 0, stream>>>(a, status_t::in(memory.as<void>(), tiles));
  detail::check_launch("parascan channel_lookback_kernel");
  return true;
}

}  // namespace parascan::engine
