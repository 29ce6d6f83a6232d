// Single-pass scan of few long sequences by look-ahead, the design of CCCL's newer scan (a description of
// it, no code taken: bench/results/cccl-lookahead-scan-study-2026-11-29.md; the probe it was tried in:
// bench/lookahead_probe.cu), for few long sequences with many tiles a resident block.
//
// - Persistent blocks of 1 + WARPS warps take tiles (WARPS x 32 x ITEMS steps) in increasing order from a
//   global counter, so a tile only ever waits on tiles already taken by running blocks.
// - The compute warps keep STAGES tiles in a ring of shared-memory stages (warp_io.cuh's stage_inputs): at
//   their tile k they issue the loads of tile k + STAGES - 1, scan tile k + AHEAD across each warp and
//   publish its aggregate at once, then scan tile k from the prefix the look-ahead warp hands them (each
//   thread's prefix in its warp and the warp totals kept from the tile's reduction: the scan itself only
//   rescans the thread's steps) and write it. Aggregates never wait on a prefix: no tile's aggregate
//   waits on another block's scan, and nothing but aggregates is published.
// - The look-ahead warp keeps a cursor over its sequence's tiles from the first and P, the fold of every
//   aggregate before it, in aligned windows of 32 tiles (each window's total by one order-keeping warp
//   tree, windows folded left to right); a tile's prefix is P folded with the same tree over its window's
//   aggregates before it (identity-padded). The bracketing depends on the tile's index only, so results
//   are bit-identical from run to run (deterministic for a shape and policy).
// - The two roles hand tile indices and prefixes over through shared memory with block-scope release /
//   acquire counters; the compute warps sync among themselves with a named barrier (block_group<T, 1>).
//
// Dispatch (device.cuh's lookahead_tiles) takes it by default for fp32 cumsum and the fp32 recurrence
// (4-byte states from one 4-byte input, 8-byte states from two), from 64 tiles a multiprocessor; for other
// states through a policy's look_ahead_tiles (policy.hpp). One sequence of 2^28 on an H200, same run
// (bench/results/h200-lookahead-engine-2026-11-29.log, run 16): the recurrence at 79.5-79.8% of copy (the
// look-back 57.8%, the probe's lean kernel, bench/lookahead_probe.cu, 76.8%), the sum at 82.2% (CUB
// InclusiveSum 73.5%, the probe 84.9%); on another H200 (run 17) 82.4% and 89.5%; with the tiles of
// fbdf8e8 (8 x 20 / 8 x 28 steps) parascan_bench_cuda reads 94.4% and 91.6% (run 22). The compute warps,
// 8 or 9 a multiprocessor, are bound by their instructions' latency (ncu: stalls on fixed latencies and
// shared memory, 0.35 instructions a cycle a scheduler), so what moved it was instructions taken out:
// - the scan of a tile from its reduction's lane prefixes (each thread's prefix in its warp, kept in
//   shared memory: the scan does no fold, shuffle or warp scan of its own) and a sequence's tile range
//   kept (no division a call): recurrence 76.5 -> 79.8%, (1, 16, 2^24) 68.4 -> 75.4%, sum 75.0 -> 82.2%;
// - the tile's scan reuses the warp totals its reduction left in shared memory (reduced_block_group: no
//   barrier, no exchange of its own): recurrence 58.7 -> 70.3%, sum 56.5 -> 62.2% (8 x 16, 16 x 16);
// - the direction a template parameter (run_lookahead_in), so that the staging's reverse-or-not choices
//   fold at compile time: 71.8 -> 76.7%, sum (15 x 16) 66.5 -> 75.0%;
// - a sequence's binding kept from tile to tile (lookahead_tiles_of), outputs out through the stage as
//   coalesced stores (store_items COALESCE), the tile division in 32 bits (earlier, 35.8 -> 58.2%).
#pragma once

#include <cuda/atomic>

#include "lookback.cuh"

namespace parascan::engine {

/// The window's 32 states (one a lane) folded in lane order by a fixed tree; every lane returns it.
template <class Op>
__device__ __forceinline__ state_t<Op> window_total(const Op& op, state_t<Op> v) {
  const int lane = int(threadIdx.x) % warp_threads;
#pragma unroll
  for (int d = 1; d < warp_threads; d *= 2) {
    const state_t<Op> right = shuffle_from(v, min(lane + d, warp_threads - 1));
    if ((lane & (2 * d - 1)) == 0) v = op(v, right);
  }
  return shuffle_from(v, 0);
}

/// What the two roles of a look-ahead block hand over in shared memory.
template <class S, int WARPS, int STAGES>
struct lookahead_control {
  static constexpr int ring = STAGES + 2;
  S warp_totals[STAGES][WARPS];  // of the tile reduced from stage j, at j % STAGES
  S prefix[2];                   // the prefix of the block's tile j at j % 2
  unsigned claimed[ring];        // the block's tile j at j % ring
  int claims_out;                // claimed[j] readable for j < claims_out
  int prefix_out;                // prefix of tile j out for j < prefix_out
  int prefix_used;               // the compute warps are done with the prefixes j < prefix_used
};

template <class T>
__device__ __forceinline__ T acquire(T& v) {
  return cuda::atomic_ref<T, cuda::thread_scope_block>(v).load(cuda::memory_order_acquire);
}
template <class T>
__device__ __forceinline__ void release(T& v, T value) {
  cuda::atomic_ref<T, cuda::thread_scope_block>(v).store(value, cuda::memory_order_release);
}

/// The look-ahead warp: prefixes for the block's tiles, in the order the block took them.
template <class Shape, class Op, class Pack, class Outs>
__device__ __forceinline__ void look_ahead(const segment_args<Op, Pack, Outs>& a,
                                           lookahead_control<state_t<Op>, Shape::warps, Shape::stages>& ctl,
                                           flagged<state_t<Op>>* aggregates, index_t tiles_per_sequence,
                                           unsigned tiles) {
  using S = state_t<Op>;
  constexpr int W = Shape::windows, ring = lookahead_control<S, Shape::warps, Shape::stages>::ring;
  const int lane = int(threadIdx.x) % warp_threads;
  index_t sequence = -1, cursor = 0;  // P folds the aggregates of the sequence's tiles before the cursor
  S P = a.op.identity();
  for (int k = 0;; ++k) {
    while (acquire(ctl.claims_out) <= k) __nanosleep(20);
    const unsigned t = ctl.claimed[k % ring];
    if (t >= tiles) return;
    const index_t s = index_t(t) < tiles_per_sequence ? 0 : index_t(t / unsigned(tiles_per_sequence));
    if (s != sequence) {
      sequence = s;
      cursor = s * tiles_per_sequence;
      P = start_state(a.op, a.initial, s);
    }
    // One round trip reads the aggregates of up to W windows from the cursor, those below t: whole windows
    // fold into P (the cursor moves past them), the window holding t gives t's prefix.
    S prefix = P;
    for (;;) {
      S v[W];
      bool out[W];
#pragma unroll
      for (int b = 0; b < W; ++b) {
        v[b] = a.op.identity();
        out[b] = cursor + 32 * b + lane >= index_t(t);  // not needed
      }
      for (;;) {
        bool all = true;
#pragma unroll
        for (int b = 0; b < W; ++b) {
          if (!out[b]) out[b] = read_published(aggregates + cursor + 32 * b + lane, v[b]);
          all = all && out[b];
        }
        if (__all_sync(full_mask, all)) break;
        __nanosleep(32);
      }
      S total[W];  // independent trees, side by side
#pragma unroll
      for (int b = 0; b < W; ++b) total[b] = window_total(a.op, v[b]);
      bool done = false;
#pragma unroll
      for (int b = 0; b < W; ++b) {
        if (done) continue;
        if (cursor + 32 <= index_t(t)) {
          P = a.op(P, total[b]);
          cursor += 32;
        } else {
          prefix = cursor == index_t(t) ? P : a.op(P, total[b]);
          done = true;
        }
      }
      if (done) break;
    }
    while (acquire(ctl.prefix_used) < k - 1) __nanosleep(20);  // prefix[k % 2] is free
    if (lane == 0) {
      ctl.prefix[k % 2] = prefix;
      release(ctl.prefix_out, k + 1);
    }
    __syncwarp();
  }
}

/// Tile t of the batch: its sequence s, its index k in it, where its chunk grid starts (`base`), the
/// sequence's inputs and the chunk of the warp `warp_offset` steps into the tile.
template <int ITEMS, class In>
struct lookahead_tile {
  index_t s, k, base;
  In in;
  warp_chunk<ITEMS> chunk;
};

/// Where the tiles of a batch's sequences lie, the latest sequence's binding kept: binding a sequence (its
/// cursors, length and aligned chunk grid) costs about a hundred instructions of address arithmetic, and
/// each tile is asked for three times (its loads, its reduction, its scan), in increasing order at each.
template <int ITEMS, index_t TILE, bool REVERSE, class Op, class Pack, class Outs>
struct lookahead_tiles_of {
  using In = decltype(bind(std::declval<const Pack&>(), index_t(0)));
  using Out = decltype(bind_outputs(std::declval<const Outs&>(), index_t(0)));
  const segment_args<Op, Pack, Outs>& a;
  index_t tiles_per_sequence, warp_offset;
  index_t s = 0, n, origin;  // the bound sequence
  unsigned first_tile = 0;   // its first tile
  In in;
  index_t out_s = 0;  // the sequence `out` is bound to
  Out out;

  __device__ lookahead_tiles_of(const segment_args<Op, Pack, Outs>& args, index_t per_sequence, index_t offset)
      : a(args), tiles_per_sequence(per_sequence), warp_offset(offset), in(bind(args.in, 0)),
        out(bind_outputs(args.out, 0)) {
    n = a.in.head.length_of(0);
    origin = aligned_origin<ITEMS>(in.head, n, 0, n, REVERSE);
  }
  __device__ __forceinline__ lookahead_tile<ITEMS, In> operator()(unsigned t) {
    // One unsigned comparison while t stays in the bound sequence (tiles < 2^31); a 32-bit division only
    // where it leaves it (a division a call took (1, 16, 2^24) 11% longer than one sequence of 2^28).
    if (t - first_tile >= unsigned(tiles_per_sequence)) {
      s = index_t(t / unsigned(tiles_per_sequence));
      first_tile = unsigned(s * tiles_per_sequence);
      in = bind(a.in, s);
      n = a.in.head.length_of(s);
      origin = aligned_origin<ITEMS>(in.head, n, 0, n, REVERSE);
    }
    const index_t k = index_t(t - first_tile), base = origin + k * TILE;
    return {s, k, base, in, warp_chunk<ITEMS>{n, base + warp_offset, 0, n, REVERSE}};
  }
  /// The outputs of sequence `to`.
  __device__ __forceinline__ const Out& outputs(index_t to) {
    if (to != out_s) {
      out_s = to;
      out = bind_outputs(a.out, to);
    }
    return out;
  }
};

/// The compute warps as a group whose tile the reduction already scanned: each thread's prefix within its
/// warp and the warp totals (lookahead_control's, and the lane prefixes after the stages) are in shared
/// memory, so its scan needs no fold of its own, no shuffle, no barrier and no exchange. (The thread's
/// total it is given goes unused, and the compiler drops the fold that made it.)
template <int THREADS, class S>
struct reduced_block_group : block_group<THREADS, 1> {
  const S* warp_totals;
  const S* lane_prefixes;
  __device__ reduced_block_group(const S* totals, const S* prefixes) : warp_totals(totals), lane_prefixes(prefixes) {}

  template <class Op, class Prefix>
  __device__ __forceinline__ state_t<Op> exclusive_scan(const Op& op, const state_t<Op>&, Prefix& prefix,
                                                        typename block_group<THREADS, 1>::template temp_storage<S>&) {
    const int warp = this->rank() / warp_threads;
    const S in_warp = lane_prefixes[this->rank()];
    S block_total, before_warp;  // before_warp: warps > 0 only
    fold_warp_totals<THREADS / warp_threads>(op, warp_totals, warp, block_total, before_warp);
    const S before_tile = prefix(block_total);
    return op(warp == 0 ? before_tile : op(before_tile, before_warp), in_warp);
  }
};

extern __shared__ __align__(16) unsigned char parascan_lookahead_stages[];

/// The dynamic shared memory of a look-ahead block: STAGES stages of every compute warp's chunk, then each
/// compute thread's prefix within its warp for each stage's tile (left by the reduction for the scan).
template <class Shape, class Op, class Pack>
struct lookahead_layout {
  using S = state_t<Op>;
  static constexpr int threads = Shape::warps * warp_threads;  // compute threads
  static constexpr int stage_bytes = staging_plan<block_group<threads, 1>, Shape::items, 1, Op, Pack>::stage_bytes;
  static constexpr std::size_t prefixes_at = std::size_t(stage_bytes) * Shape::warps * Shape::stages;
  static_assert(prefixes_at % alignof(S) == 0, "the lane prefixes follow the stages, aligned");
  static constexpr std::size_t bytes = prefixes_at + sizeof(S) * threads * Shape::stages;
  /// The lane prefixes of the tile in stage j.
  __device__ static S* lane_prefixes(int j) {
    return reinterpret_cast<S*>(parascan_lookahead_stages + prefixes_at) + (j % Shape::stages) * threads;
  }
};

/// Blocks of 1 + Shape::warps warps over `tiles` tiles of the batch (tile t: tile t % tiles_per_sequence of
/// sequence t / tiles_per_sequence, on the first input's aligned chunk grid as in lookback.cuh), taken
/// from `next_tile`; `aggregates` (tiles of them) and `next_tile` zeroed before the launch.
template <class Shape, bool REVERSE, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(Shape::threads, 1)
    lookahead_kernel(const segment_args<Op, Pack, Outs> a, flagged<state_t<Op>>* aggregates, unsigned* next_tile,
                     const index_t tiles_per_sequence, const unsigned tiles) {
  using S = state_t<Op>;
  constexpr int WARPS = Shape::warps, ITEMS = Shape::items, STAGES = Shape::stages, AHEAD = Shape::ahead;
  using Group = block_group<WARPS * warp_threads, 1>;
  using Control = lookahead_control<S, WARPS, STAGES>;
  using temp_t = typename Group::template temp_storage<S>;
  constexpr int ring = Control::ring;
  using Layout = lookahead_layout<Shape, Op, Pack>;
  constexpr int stage_bytes = Layout::stage_bytes;
  __shared__ alignas(16) unsigned char control_bytes[sizeof(Control)];
  __shared__ alignas(16) unsigned char temp_bytes[sizeof(temp_t)];
  Control& ctl = *reinterpret_cast<Control*>(control_bytes);
  if (threadIdx.x == 0) ctl.claims_out = ctl.prefix_out = ctl.prefix_used = 0;
  __syncthreads();  // the only barrier of the whole block
  if (threadIdx.x < warp_threads) return look_ahead<Shape>(a, ctl, aggregates, tiles_per_sequence, tiles);

  temp_t& temp = *reinterpret_cast<temp_t*>(temp_bytes);
  Group group;
  const int w = group.rank() / warp_threads, lane = int(threadIdx.x) % warp_threads;
  const bool leader = group.rank() == 0;
  const index_t offset = index_t(group.rank()) * ITEMS, warp_offset = offset - index_t(lane) * ITEMS;
  const auto stage = [&](int j) { return parascan_lookahead_stages + ((j % STAGES) * WARPS + w) * stage_bytes; };
  lookahead_tiles_of<ITEMS, Shape::tile, REVERSE, Op, Pack, Outs> at(a, tiles_per_sequence, warp_offset);
  const auto load = [&](unsigned t, int j) {  // this warp's chunk of tile t into stage j (one commit always)
    if (t < tiles) {
      const auto x = at(t);
      stage_inputs<ITEMS>(x.in, x.chunk, stage(j));
    }
    __pipeline_commit();
  };
  // Scans tile t across each warp from stage j (each thread's prefix in its warp and the warp totals kept
  // for the tile's scan) and publishes its aggregate.
  const auto reduce = [&](unsigned t, int j) {
    if (t >= tiles) return;
    const auto x = at(t);
    S items[ITEMS];
    lift_staged<ITEMS>(a.op, x.in, x.chunk, x.base + offset, stage(j), items);
    const auto in_warp = warp_scan(a.op, thread_fold<ITEMS>(a.op, items), temp.warp[w]);
    Layout::lane_prefixes(j)[group.rank()] = in_warp.exclusive;
    if (lane == 0) ctl.warp_totals[j % STAGES][w] = in_warp.total;
    Group::sync();
    if (leader) {
      S aggregate, unused;
      fold_warp_totals<WARPS>(a.op, ctl.warp_totals[j % STAGES], 0, aggregate, unused);
      publish(aggregates + t, aggregate);
    }
  };

  if (leader) {
    for (int j = 0; j < STAGES; ++j) ctl.claimed[j] = atomicAdd(next_tile, 1u);
    release(ctl.claims_out, STAGES);
  }
  Group::sync();
  for (int j = 0; j < STAGES - 1; ++j) load(ctl.claimed[j], j);
  __pipeline_wait_prior(STAGES - 1 - AHEAD);
  __syncwarp();
  for (int j = 0; j < AHEAD; ++j) reduce(ctl.claimed[j], j);
  for (int k = 0;; ++k) {
    const unsigned t = ctl.claimed[k % ring];
    if (t >= tiles) return;
    const unsigned next = leader ? atomicAdd(next_tile, 1u) : 0u;  // the block's tile k + STAGES
    load(ctl.claimed[(k + STAGES - 1) % ring], k + STAGES - 1);
    __pipeline_wait_prior(STAGES - 1 - AHEAD);  // tiles up to k + AHEAD have landed (this thread's pieces)
    __syncwarp();                               // and the warp's
    reduce(ctl.claimed[(k + AHEAD) % ring], k + AHEAD);
    const auto x = at(t);
    const bool last = x.k == tiles_per_sequence - 1;
    const auto prefix = [&](const S& total) {  // from the look-ahead warp
      while (acquire(ctl.prefix_out) <= k) __nanosleep(20);
      const S before = ctl.prefix[k % 2];
      if (last && leader) a.write_final(x.s, a.op(before, total));
      return before;
    };
    reduced_block_group<WARPS * warp_threads, S> reduced(ctl.warp_totals[k % STAGES], Layout::lane_prefixes(k));
    scan_tile<ITEMS, true, true>(reduced, temp, a.op, x.in, at.outputs(x.s), x.chunk, x.base + offset, stage(k),
                                 stage_bytes, a.exclusive, prefix);
    if (leader) {
      ctl.claimed[(k + STAGES) % ring] = next;
      release(ctl.claims_out, k + STAGES + 1);
    }
    Group::sync();  // claimed[k + STAGES] is out; every compute thread has its prefix k
    if (leader) release(ctl.prefix_used, k + 1);
  }
}

/// run_lookahead for one direction (REVERSE: the kernel's chunks fold `reverse ? ... : ...` at compile
/// time; a select an element of every staged read otherwise). Each direction keeps its own caches.
template <class Shape, bool REVERSE, class Op, class Pack, class Outs>
bool run_lookahead_in(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                      cudaStream_t stream) {
  using S = state_t<Op>;
  constexpr index_t chunk = index_t(warp_threads) * Shape::items;
  constexpr int shared = int(lookahead_layout<Shape, Op, Pack>::bytes);
  const auto kernel = lookahead_kernel<Shape, REVERSE, Op, Pack, Outs>;
  static std::atomic<int> fits[64] = {}, allowed[64] = {}, resident[64] = {};
  if (!fits_shared_memory(fits, kernel, std::size_t(shared))) return false;
  allow_dynamic_shared(allowed, kernel, shared);
  const int per_multiprocessor = cached_per_device(resident, [&](int) {
    int blocks = 0;
    detail::cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, Shape::threads, shared),
                       "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(blocks, 1);
  });
  const index_t tiles_per_sequence = single_pass_tile_count(shape.max_length, chunk, Shape::tile);
  const index_t tiles = tiles_per_sequence * shape.count;
  if (tiles > std::numeric_limits<int>::max()) return false;
  if (tiles == 0) return true;  // (no sequences: nothing to write)
  const index_t blocks = std::min<index_t>(tiles, index_t(per_multiprocessor) * multiprocessors());
  if (log_plans())
    std::fprintf(stderr, "parascan: single pass (look-ahead): %lld tiles of %lld steps over %lld blocks\n",
                 static_cast<long long>(tiles), static_cast<long long>(Shape::tile), static_cast<long long>(blocks));
  const std::size_t status_bytes = std::size_t(tiles) * sizeof(flagged<S>) + 16;  // then the tile counter
  detail::temp_buffer memory(alloc, stream, status_bytes);
  detail::cuda_check(cudaMemsetAsync(memory.as<void>(), 0, status_bytes, stream), "parascan look-ahead status");
  auto* aggregates = memory.as<flagged<S>>();
  auto* next_tile = reinterpret_cast<unsigned*>(memory.as<unsigned char>() + status_bytes - 16);
  kernel<<<unsigned(blocks), Shape::threads, shared, stream>>>(a, aggregates, next_tile, tiles_per_sequence,
                                                                unsigned(tiles));
  detail::check_launch("parascan lookahead_kernel");
  return true;
}

/// The prefix scan of `shape.count` sequences (at most shape.max_length steps each) in one pass by
/// look-ahead over tiles of `Shape` (device.cuh's lookahead_tiles); dispatch asks plan.hpp's
/// runs_look_ahead first. False (nothing run) where a block's stages would not fit the device's shared
/// memory or there would be 2^31 tiles or more.
template <class Shape, class Op, class Pack, class Outs>
bool run_lookahead(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                   cudaStream_t stream) {
  return a.reverse ? run_lookahead_in<Shape, true>(a, shape, alloc, stream)
                   : run_lookahead_in<Shape, false>(a, shape, alloc, stream);
}

}  // namespace parascan::engine
