// Single-pass scan of few long sequences: a decoupled look-back (Merrill and Garland; CUB's
// TilePrefixCallbackOp), inputs read once, results deterministic.
//
// Each sequence is cut into block tiles. Resident blocks take tiles in order from a counter (so a tile
// only ever waits on tiles already taken by running blocks: no assumption on the order blocks start) and
// keep a ring of STAGES tiles: the inputs of the next STAGES - 1 tiles load into shared memory (cp.async,
// each warp its chunk) while the block scans the current one. A taken tile's aggregate (its own total) is
// published as soon as its inputs land, one tile ahead of its scan, so the tiles a look-back waits on
// never wait on a look-back themselves; and the block's loads stay in flight while it looks back (a block
// a tile, which this kernel replaced, left its multiprocessor's memory idle meanwhile: 57.7 / 73.6% of the
// copy floor for one sequence of 2^28 fp32 sums / recurrence steps, H200).
//
// The look-back works on windows of 32 tiles of a sequence, a lane a tile. The state before window w,
// P(w), is defined as P(w - 1) folded with the total of window w - 1's 32 aggregates, that total taken by
// one fixed warp scan (P(0): the start state). Tile t in window w (lane i) scans from P(w) folded with the
// warp scan of the window's aggregates before it; the window's last tile publishes P(w + 1). A tile that
// finds P(w) not out yet computes it from the windows before (their aggregates, all out or coming, back
// to a published P), folding forward window by window, and publishes what it computed. Every path gives
// the same bits, so results depend on the shape and the policy only, never on timing; and the fold is a
// tree within a window (5 steps) rather than a 31-step chain.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cuda/atomic>

#include "sequence.cuh"

namespace parascan::engine {

/// A published state: each 32-bit word of it travels with a flag in a 64-bit word, stored and loaded
/// as one (relaxed atomics at device scope, which 64-bit words are). A reader that sees every flag set
/// has the whole value, so neither publishing nor reading needs a fence (a device-scope fence waits for
/// the thread's outstanding memory operations: an earlier, persistent form of this kernel, whose blocks
/// had output stores in flight when they published, spent microseconds a tile in them).
template <class S>
struct flagged {
  static_assert(sizeof(S) % 4 == 0, "look-back states are published word by word");
  static constexpr int words = int(sizeof(S) / 4);
  unsigned long long word[words];
};

template <class S>
__device__ __forceinline__ void publish(flagged<S>* slot, const S& value) {
  unsigned bits[flagged<S>::words];
  std::memcpy(bits, &value, sizeof(S));
#pragma unroll
  for (int i = 0; i < flagged<S>::words; ++i)
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(slot->word[i])
        .store((1ull << 32) | bits[i], cuda::memory_order_relaxed);
}

/// Whether the value at `slot` is out (then in `value`).
template <class S>
__device__ __forceinline__ bool read_published(flagged<S>* slot, S& value) {
  unsigned bits[flagged<S>::words];
  bool out = true;
#pragma unroll
  for (int i = 0; i < flagged<S>::words; ++i) {
    const unsigned long long w =
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(slot->word[i]).load(cuda::memory_order_relaxed);
    out &= (w >> 32) != 0;
    bits[i] = unsigned(w);
  }
  std::memcpy(&value, bits, sizeof(S));
  return out;
}

/// Status of the batch's tiles (device memory, zeroed before the launch).
template <class S>
struct tile_status {
  static constexpr int window = warp_threads;  // tiles a look-back window
  flagged<S>* aggregate;                       // tile t's own total, at t
  flagged<S>* window_prefix;                   // P(w) of window w of sequence s, at s * windows_per_sequence + w
  unsigned* next_tile;                         // the counter blocks take tiles from
  index_t tiles_per_sequence, windows_per_sequence;

  static index_t windows_for(index_t tiles_per_sequence) { return (tiles_per_sequence + window - 1) / window; }
  static std::size_t bytes(index_t tiles_per_sequence, index_t count) {
    return std::size_t(tiles_per_sequence + windows_for(tiles_per_sequence)) * std::size_t(count) * sizeof(flagged<S>) +
           sizeof(unsigned long long);
  }
  static tile_status in(void* memory, index_t tiles_per_sequence, index_t count) {
    auto* values = static_cast<flagged<S>*>(memory);
    const index_t windows = windows_for(tiles_per_sequence);
    return {values, values + tiles_per_sequence * count,
            reinterpret_cast<unsigned*>(values + (tiles_per_sequence + windows) * count), tiles_per_sequence, windows};
  }
};

/// Warp-wide: polls lanes' slots (`wanted` lanes) until every one is out, into `value` (others untouched).
template <class S>
__device__ __forceinline__ void await_published(flagged<S>* slot, bool wanted, S& value) {
  for (;;) {
    const bool out = !wanted || read_published(slot, value);
    if (__all_sync(full_mask, out)) return;
    __nanosleep(32);
  }
}

/// Warp-wide, for tile k of sequence s (its own total `total` already published): the state before the
/// tile, and in `window_end` the state after its window when the tile is its window's last (P(w + 1)).
/// One round trip reads the window's aggregates before the tile, P(w), and the `batch` windows before w
/// (their aggregates and the states before them), so that a P not out yet is computed from the nearest
/// one that is, `batch` windows a round trip.
template <class Op>
__device__ state_t<Op> window_look_back(const Op& op, const tile_status<state_t<Op>>& st, index_t s, index_t k,
                                        const state_t<Op>& total, const state_t<Op>& start,
                                        state_t<Op>& window_end) {
  using S = state_t<Op>;
  constexpr int W = tile_status<S>::window, batch = 4;
  const int lane = int(threadIdx.x) % warp_threads;
  const index_t first = s * st.tiles_per_sequence, w = k / W, slots = s * st.windows_per_sequence;
  const int position = int(k - w * W);
  warp_scan_storage<S> none;
  // Windows j - 1 - v (v < batch): the lane's aggregate in each; lane v <= batch: P(j - v) (P(0) is the
  // start state, never published).
  S older[batch], p = start;
  bool older_out[batch], p_out = false;
  const auto read_batch = [&](index_t j) {
#pragma unroll
    for (int v = 0; v < batch; ++v)
      older_out[v] = j - 1 - v >= 0 && read_published(st.aggregate + first + (j - 1 - v) * W + lane, older[v]);
    p_out = lane <= batch && j - lane >= 0 &&
            (j - lane == 0 ? (p = start, true) : read_published(st.window_prefix + slots + j - lane, p));
  };
  if (w > 0) read_batch(w);
  // The window's aggregates before the tile; lanes above hold the identity, which no lane at or below
  // `position` sees in the scan.
  S mine = lane == position ? total : op.identity();
  await_published(st.aggregate + first + w * W + lane, lane < position, mine);
  S before = start;  // P(w)
  if (w > 0) {
    S totals = op.identity();  // window w - 1 - m's total in lane m, for the windows walked
    index_t j = w;             // P(j) wanted
    int walked = 0;            // = w - j
    // Each window's total from its aggregates (awaited where not all out), into lane `walked + v`.
    const auto take_totals = [&](index_t j, int windows) {
#pragma unroll
      for (int v = 0; v < batch; ++v)
        if (v < windows) {
          if (!__all_sync(full_mask, older_out[v]))
            await_published(st.aggregate + first + (j - 1 - v) * W + lane, true, older[v]);
          const S window_total = warp_scan(op, older[v], none).total;
          if (lane == walked + v) totals = window_total;
        }
      walked += windows;
    };
    for (;;) {
      const unsigned found = __ballot_sync(full_mask, p_out);
      int nearest = found != 0 ? __ffs(found) - 1 : batch + 1;  // P(j - nearest) is out
      if (walked + nearest > W) {  // the lanes hold 32 totals: wait for P(j) rather than walk further
        await_published(st.window_prefix + slots + j, lane == 0, p);
        nearest = 0;
      } else if (found == 0) {
        take_totals(j, batch);
        j -= batch;
        read_batch(j);
        continue;
      }
      take_totals(j, nearest);
      before = shuffle_from(p, nearest);
      break;
    }
    for (int m = walked - 1; m >= 0; --m) {  // forward to P(w), publishing each P on the way
      before = op(before, shuffle_from(totals, m));
      if (lane == 0) publish(st.window_prefix + slots + (w - m), before);
    }
  }
  const auto scanned = warp_scan(op, mine, none);
  window_end = op(before, scanned.total);
  const S inside = shuffle_from(scanned.exclusive, position);
  return position == 0 ? before : op(before, inside);
}

/// The look-back as a prefix callback (block.cuh) for the scan of tile k of sequence s, whose aggregate is
/// out: called by every thread of the block with the tile's total; warp 0 looks back, thread 0 publishes
/// the window's end (the window's last tile), hands a taken tile's index to the block (`taken`, read
/// after this barrier) and the prefix through shared memory. The sequence's last tile writes its final
/// state.
template <class Op>
struct window_prefix_callback {
  using S = state_t<Op>;
  const Op& op;
  const tile_status<S>& status;
  index_t s, k;
  S start;  // the sequence's start state
  S* shared;
  output_t<Op>* final;
  S* final_state;
  unsigned* taken;
  unsigned taken_value;

  __device__ S operator()(const S& total) const {
    if (threadIdx.x < warp_threads) {
      S window_end;
      const S prefix = window_look_back(op, status, s, k, total, start, window_end);
      if (threadIdx.x == 0) {
        const index_t w = k / tile_status<S>::window;
        if (k - w * tile_status<S>::window == tile_status<S>::window - 1 && k + 1 < status.tiles_per_sequence)
          publish(status.window_prefix + s * status.windows_per_sequence + w + 1, window_end);
        *shared = prefix;
        *taken = taken_value;
        if (final != nullptr || final_state != nullptr) {
          const S inclusive = op(prefix, total);
          if (final != nullptr) *final = project(op, inclusive);
          if (final_state != nullptr) *final_state = inclusive;
        }
      }
    }
    __syncthreads();
    return *shared;
  }
};

/// A tile's total, published as its aggregate (every thread calls it with the block's total).
template <class Op>
struct publish_aggregate {
  flagged<state_t<Op>>* slot;
  __device__ state_t<Op> operator()(const state_t<Op>& total) const {
    if (threadIdx.x == 0) publish(slot, total);
    return total;
  }
};

extern __shared__ __align__(16) unsigned char parascan_lookback_stages[];

/// Resident blocks taking tiles t = 0, 1, ... of the batch in order (tile k = t % tiles_per_sequence of
/// sequence s = t / tiles_per_sequence, laid on the first input's aligned chunk grid as in scan_segment),
/// STAGES tiles a block in a ring of shared-memory stages (each warp its chunk's stage, staging_plan's
/// size, in each).
template <int THREADS, int ITEMS, int MIN_BLOCKS, int STAGES, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    lookback_kernel(const segment_args<Op, Pack, Outs> a, const tile_status<state_t<Op>> status, const unsigned tiles) {
  static_assert(STAGES >= 2, "the look-back reduces a tile ahead of the one it scans");
  using S = state_t<Op>;
  using Group = block_group<THREADS>;
  using temp_t = typename Group::template temp_storage<S>;
  constexpr int stage_bytes = staging_plan<Group, ITEMS, 1, Op, Pack>::stage_bytes;
  constexpr int warps = THREADS / warp_threads, ring = STAGES + 1;
  constexpr index_t tile = index_t(THREADS) * ITEMS;
  __shared__ alignas(16) unsigned char temp_bytes[sizeof(temp_t)];
  __shared__ alignas(16) unsigned char prefix_bytes[sizeof(S)];
  __shared__ unsigned taken[ring];  // tile j of this block's sequence of tiles at j % ring
  temp_t& temp = *reinterpret_cast<temp_t*>(temp_bytes);
  const auto stage = [&](int j) {
    return parascan_lookback_stages + ((j % STAGES) * warps + int(threadIdx.x) / warp_threads) * stage_bytes;
  };
  Group group;
  const index_t offset = index_t(group.rank()) * ITEMS;
  const index_t warp_offset = offset - index_t(threadIdx.x % warp_threads) * ITEMS;
  // Where tile t lies: its sequence, and the base of its chunk grid's tile.
  struct where {
    index_t s, k, n, base;
  };
  const auto locate = [&](unsigned t) {
    const index_t s = index_t(t) / status.tiles_per_sequence, k = index_t(t) - s * status.tiles_per_sequence;
    const index_t n = a.in.head.length_of(s);
    return where{s, k, n, aligned_origin<ITEMS>(bind(a.in, s).head, n, 0, n, a.reverse) + k * tile};
  };
  const auto chunk = [&](const where& at) {
    return warp_chunk<ITEMS>{at.n, at.base + warp_offset, 0, at.n, a.reverse};
  };
  const auto load = [&](unsigned t, int j) {
    if (t < tiles) {
      const where at = locate(t);
      stage_inputs<ITEMS>(bind(a.in, at.s), chunk(at), stage(j));
    }
    __pipeline_commit();
  };
  const auto reduce = [&](unsigned t, int j) {  // publishes tile t's aggregate from stage j
    if (t >= tiles) return;
    const where at = locate(t);
    S items[ITEMS];
    lift_staged<ITEMS>(a.op, bind(a.in, at.s), chunk(at), at.base + offset, stage(j), items);
    const publish_aggregate<Op> out{status.aggregate + t};
    group.exclusive_scan(a.op, thread_fold<ITEMS>(a.op, items), out, temp);
  };

  if (threadIdx.x == 0)
    for (int j = 0; j < STAGES; ++j) taken[j] = atomicAdd(status.next_tile, 1u);
  __syncthreads();
  for (int j = 0; j < STAGES - 1; ++j) load(taken[j], j);
  __pipeline_wait_prior(STAGES - 2);
  __syncwarp();
  reduce(taken[0], 0);
  for (int j = 0;; ++j) {
    const unsigned t = taken[j % ring];
    if (t >= tiles) break;
    // Tile j + STAGES - 1 into the stage tile j - 1 left (every lane of the warp is past reading it).
    __syncwarp();
    load(taken[(j + STAGES - 1) % ring], j + STAGES - 1);
    const unsigned next = threadIdx.x == 0 ? atomicAdd(status.next_tile, 1u) : 0u;  // tile j + STAGES
    __pipeline_wait_prior(STAGES - 2);  // tile j + 1's copies have landed
    __syncwarp();
    reduce(taken[(j + 1) % ring], j + 1);
    const where at = locate(t);
    const bool last = at.k == status.tiles_per_sequence - 1;
    window_prefix_callback<Op> prefix{a.op,
                                      status,
                                      at.s,
                                      at.k,
                                      start_state(a.op, a.initial, at.s),
                                      reinterpret_cast<S*>(prefix_bytes),
                                      last && a.final != nullptr ? a.final + at.s : nullptr,
                                      last && a.final_states != nullptr ? a.final_states + at.s : nullptr,
                                      &taken[(j + STAGES) % ring],
                                      next};
    scan_tile<ITEMS, true>(group, temp, a.op, bind(a.in, at.s), bind_outputs(a.out, at.s), chunk(at),
                           at.base + offset, stage(j), stage_bytes, a.exclusive, prefix);
  }
}

/// Blocks of `kernel` a multiprocessor holds with `shared` bytes of dynamic shared memory (at least 1),
/// per device (`cache`: the kernel's own).
template <class Kernel>
int resident_lookback_blocks(std::atomic<int> (&cache)[64], Kernel kernel, int threads, int shared) {
  return cached_per_device(cache, [&](int) {
    int blocks = 0;
    detail::cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, std::size_t(shared)),
                       "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(blocks, 1);
  });
}

/// The prefix scan of `shape.count` sequences (at most shape.max_length steps each) in one pass, with
/// block tiles of `Tiles` (threads, items, resident blocks, stages: at least 2); dispatch asks plan.hpp's
/// runs_single_pass first. False (nothing run) where a block's stages would not fit in the device's shared
/// memory or there would be 2^31 tiles or more.
template <class Tiles, class Op, class Pack, class Outs>
bool run_lookback(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                  cudaStream_t stream) {
  using S = state_t<Op>;
  constexpr int threads = Tiles::threads, items = Tiles::items, stages = Tiles::stages < 2 ? 2 : Tiles::stages;
  constexpr index_t tile = index_t(threads) * items, chunk = index_t(warp_threads) * items;
  constexpr int shared =
      staging_plan<block_group<threads>, items, 1, Op, Pack>::stage_bytes * (threads / warp_threads) * stages;
  const auto kernel = lookback_kernel<threads, items, Tiles::min_blocks, stages, Op, Pack, Outs>;
  static std::atomic<int> fits[64] = {}, allowed[64] = {}, resident[64] = {};
  if (!fits_shared_memory(fits, kernel, std::size_t(shared))) return false;  // reduce-then-scan then
  allow_dynamic_shared(allowed, kernel, shared);
  // The aligned chunk grid starts up to a chunk before the sequence.
  const index_t tiles_per_sequence = std::max<index_t>(1, (shape.max_length + chunk - 1 + tile - 1) / tile);
  const index_t tiles = tiles_per_sequence * shape.count;
  if (tiles >= std::numeric_limits<int>::max()) return false;
  const index_t blocks =
      std::min<index_t>(tiles, index_t(resident_lookback_blocks(resident, kernel, threads, shared)) * multiprocessors());
  if (log_plans())
    std::fprintf(stderr, "parascan: single pass (look-back): %lld tiles of %lld steps, %lld blocks of %d stages\n",
                 static_cast<long long>(tiles), static_cast<long long>(tile), static_cast<long long>(blocks), stages);
  const std::size_t bytes = tile_status<S>::bytes(tiles_per_sequence, shape.count);
  detail::temp_buffer memory(alloc, stream, bytes);
  detail::cuda_check(cudaMemsetAsync(memory.as<void>(), 0, bytes, stream), "parascan look-back status");
  kernel<<<unsigned(blocks), threads, shared, stream>>>(
      a, tile_status<S>::in(memory.as<void>(), tiles_per_sequence, shape.count), unsigned(tiles));
  detail::check_launch("parascan lookback_kernel");
  return true;
}

}  // namespace parascan::engine
