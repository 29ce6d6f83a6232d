// Single-pass scan of few long sequences: a decoupled look-back (Merrill and Garland; CUB's
// TilePrefixCallbackOp), inputs read once, results deterministic.
//
// Each sequence is cut into block tiles, one block a tile, in block order: a tile waits only on lower
// blocks, assumed to start first (CUDA does not promise it; CUB's DeviceScan assumes the same). A block
// stages its tile (each warp its chunk) and scans it; thread 0 publishes the tile's aggregate (its own
// total); warp 0 looks back over the tiles before it, 32 at a time, for the nearest one whose inclusive
// prefix is out (every tile after that one having its aggregate out), folds those aggregates onto it and
// publishes the tile's inclusive prefix; the block writes its outputs from the prefix. States are
// published without fences (flagged words below).
//
// Deterministic: the fold runs strictly left to right, one aggregate at a time, so every inclusive prefix
// is the sequential fold of the start state and all aggregates up to its tile, bit for bit, wherever the
// look-back that made it stopped: results depend on the shape and the policy only, never on timing (CUB
// folds whatever window it meets as a tree, which rounds differently from run to run).
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

/// Status of the batch's tiles (device memory, zeroed before the launch): tile t of the batch at t.
template <class S>
struct tile_status {
  flagged<S>* aggregate;  // a tile's own total
  flagged<S>* inclusive;  // everything up to and including the tile, the start state first
  static std::size_t bytes(index_t tiles) { return 2 * std::size_t(tiles) * sizeof(flagged<S>); }
  static tile_status in(void* memory, index_t tiles) {
    auto* values = static_cast<flagged<S>*>(memory);
    return {values, values + tiles};
  }
};

/// Warp-wide, for tile t >= 1 whose sequence's tile 0 is tile `first`: the state before t, in every lane.
template <class Op>
__device__ state_t<Op> look_back(const Op& op, const tile_status<state_t<Op>>& st, index_t first, index_t t) {
  using S = state_t<Op>;
  const int lane = int(threadIdx.x) % warp_threads;
  // Tile t - 1's inclusive prefix, where it is out, is what the fold below would give from it: one load
  // instead of a window's 64 (+3 points of copy, H100, one fp32 recurrence / cumsum of 2^28 steps).
  {
    S before;
    const bool has = lane == 0 && read_published(st.inclusive + t - 1, before);
    if (__shfl_sync(full_mask, has, 0)) return shuffle_from(before, 0);
  }
  // Poll tiles [end - 32, end) until each has its inclusive prefix or aggregate out; stop at the window
  // holding the nearest inclusive prefix (tile `first` always publishes one).
  index_t end = t;
  S inclusive, aggregate;
  int from = 0;  // the lane of that window whose inclusive prefix the fold starts from
  for (;;) {
    const index_t mine = end - warp_threads + lane;
    bool has_inclusive = false, has_aggregate = mine < first;  // tiles before the sequence: never waited on
    for (;;) {
      if (mine >= first) {
        has_inclusive = read_published(st.inclusive + mine, inclusive);
        has_aggregate = read_published(st.aggregate + mine, aggregate);
      }
      if (__all_sync(full_mask, has_inclusive || has_aggregate)) break;
      __nanosleep(32);
    }
    const unsigned found = __ballot_sync(full_mask, has_inclusive);
    if (found != 0) {
      from = warp_threads - 1 - __clz(found);
      break;
    }
    end -= warp_threads;
  }
  S prefix = shuffle_from(inclusive, from);
  // The aggregates after it, in order: the rest of this window, then the windows after it (all out).
  for (int i = 1; i < warp_threads; ++i) {
    const S next = shuffle_from(aggregate, i);
    if (i > from) prefix = op(prefix, next);
  }
  for (end += warp_threads; end <= t; end += warp_threads) {
    read_published(st.aggregate + end - warp_threads + lane, aggregate);
#pragma unroll
    for (int i = 0; i < warp_threads; ++i) prefix = op(prefix, shuffle_from(aggregate, i));
  }
  return prefix;
}

/// The look-back as a prefix callback (block.cuh): called by every thread of the block with the tile's
/// total; publishes the aggregate, looks back (warp 0), publishes the inclusive prefix and hands the
/// prefix to the block through shared memory. The last tile of a sequence writes its final state.
template <class Op>
struct lookback_prefix {
  using S = state_t<Op>;
  const Op& op;
  const tile_status<S>& status;
  index_t first, t;  // the sequence's tile 0, this tile
  S start;           // the sequence's start state
  S* shared;         // the block's slot for the prefix
  output_t<Op>* final;
  S* final_state;

  __device__ S operator()(const S& total) const {
    if (threadIdx.x < warp_threads) {
      S prefix = start;
      if (t > first) {
        if (threadIdx.x == 0) publish(status.aggregate + t, total);
        prefix = look_back(op, status, first, t);
      }
      if (threadIdx.x == 0) {
        const S inclusive = op(prefix, total);
        publish(status.inclusive + t, inclusive);
        *shared = prefix;
        if (final != nullptr) *final = project(op, inclusive);
        if (final_state != nullptr) *final_state = inclusive;
      }
    }
    __syncthreads();
    return *shared;
  }
};

extern __shared__ __align__(16) unsigned char parascan_lookback_stages[];

/// Tile t = blockIdx.x of the batch: tile k = t % tiles_per_sequence of sequence s = t / tiles_per_sequence,
/// laid on the first input's aligned chunk grid as in scan_segment. Each warp stages its chunk in its
/// stage of dynamic shared memory (one stage of staging_plan's size a warp).
template <int THREADS, int ITEMS, int MIN_BLOCKS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    lookback_kernel(const segment_args<Op, Pack, Outs> a, const tile_status<state_t<Op>> status,
                    const index_t tiles_per_sequence) {
  using S = state_t<Op>;
  using Group = block_group<THREADS>;
  using temp_t = typename Group::template temp_storage<S>;
  constexpr int stage_bytes = staging_plan<Group, ITEMS, 1, Op, Pack>::stage_bytes;
  __shared__ alignas(16) unsigned char temp_bytes[sizeof(temp_t)];
  __shared__ alignas(16) unsigned char prefix_bytes[sizeof(S)];
  temp_t& temp = *reinterpret_cast<temp_t*>(temp_bytes);
  unsigned char* const stage = parascan_lookback_stages + (threadIdx.x / warp_threads) * stage_bytes;
  Group group;

  const index_t t = blockIdx.x, s = t / tiles_per_sequence, k = t - s * tiles_per_sequence;
  const index_t n = a.in.head.length_of(s);
  const auto in = bind(a.in, s);
  const index_t offset = index_t(group.rank()) * ITEMS;
  const index_t warp_offset = offset - index_t(threadIdx.x % warp_threads) * ITEMS;
  const index_t base = aligned_origin<ITEMS>(in.head, n, 0, n, a.reverse) + k * index_t(THREADS) * ITEMS;
  const warp_chunk<ITEMS> chunk{n, base + warp_offset, 0, n, a.reverse};
  stage_inputs<ITEMS>(in, chunk, stage);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncwarp();
  const bool last = k == tiles_per_sequence - 1;
  lookback_prefix<Op> prefix{a.op,
                             status,
                             s * tiles_per_sequence,
                             t,
                             start_state(a.op, a.initial, s),
                             reinterpret_cast<S*>(prefix_bytes),
                             last && a.final != nullptr ? a.final + s : nullptr,
                             last && a.final_states != nullptr ? a.final_states + s : nullptr};
  scan_tile<ITEMS, true>(group, temp, a.op, in, bind_outputs(a.out, s), chunk, base + offset, stage, stage_bytes,
                         a.exclusive, prefix);
}

/// The prefix scan of `shape.count` sequences (at most shape.max_length steps each) in one pass, with
/// block tiles of `Tiles` (threads, items, resident blocks); dispatch asks plan.hpp's runs_single_pass
/// first. False (nothing run) where a block's stages would not fit in the device's shared memory or there
/// would be 2^31 tiles or more.
template <class Tiles, class Op, class Pack, class Outs>
bool run_lookback(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                  cudaStream_t stream) {
  using S = state_t<Op>;
  constexpr int threads = Tiles::threads, items = Tiles::items;
  constexpr index_t tile = index_t(threads) * items, chunk = index_t(warp_threads) * items;
  constexpr int shared = staging_plan<block_group<threads>, items, 1, Op, Pack>::stage_bytes * (threads / warp_threads);
  const auto kernel = lookback_kernel<threads, items, Tiles::min_blocks, Op, Pack, Outs>;
  static std::atomic<int> fits[64] = {}, allowed[64] = {};
  if (!fits_shared_memory(fits, kernel, std::size_t(shared))) return false;  // reduce-then-scan then
  allow_dynamic_shared(allowed, kernel, shared);
  const index_t tiles_per_sequence = single_pass_tile_count(shape.max_length, chunk, tile);
  const index_t tiles = tiles_per_sequence * shape.count;
  if (tiles > std::numeric_limits<int>::max()) return false;
  if (log_plans())
    std::fprintf(stderr, "parascan: single pass (look-back): %lld tiles of %lld steps\n", static_cast<long long>(tiles),
                 static_cast<long long>(tile));
  detail::temp_buffer memory(alloc, stream, tile_status<S>::bytes(tiles));
  detail::cuda_check(cudaMemsetAsync(memory.as<void>(), 0, tile_status<S>::bytes(tiles), stream),
                     "parascan look-back status");
  kernel<<<unsigned(tiles), threads, shared, stream>>>(a, tile_status<S>::in(memory.as<void>(), tiles),
                                                       tiles_per_sequence);
  detail::check_launch("parascan lookback_kernel");
  return true;
}

}  // namespace parascan::engine
