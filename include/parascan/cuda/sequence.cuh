// Sequence layer: a group walks a segment [p0, p1) of one sequence (scan positions) tile by tile,
// carrying the running state from tile to tile, optionally writing every step.
#pragma once

#include "block.cuh"
#include "thread.cuh"
#include "warp_io.cuh"

namespace parascan::engine {

/// One tile of a group: lifts the thread's ITEMS steps from `first` (from the warp's completed `stage` of
/// chunk w, or loaded directly when `stage` is null), scans them across the group from the state the
/// prefix callback gives for the tile (block.cuh) and, when WRITE, writes emit() of each step (project() by default) to `out`. Once read,
/// the stage (stage_bytes) regroups the outputs that cannot leave as aligned vectors (warp_io.cuh), and
/// with COALESCE all of them (store_items).
template <int ITEMS, bool WRITE, bool COALESCE = false, class Group, class Op, class Cursors, class Outs, class Prefix>
__device__ __forceinline__ void scan_tile(Group& group, typename Group::template temp_storage<state_t<Op>>& temp,
                                          const Op& op, const Cursors& in, const Outs& out, const warp_chunk<ITEMS>& w,
                                          index_t first, unsigned char* stage, int stage_bytes, bool exclusive,
                                          Prefix& prefix) {
  using S = state_t<Op>;
  S items[ITEMS];
  typename raw_items<ITEMS, Op, Cursors>::type raw;  // the steps' elements, for emit() (else empty)
  // Groups whose warps hold consecutive positions read their elements into registers first, from the stage
  // or (not staged: the stream, or no two stages fit) as vector loads; the others lift each step in place.
  constexpr bool kept = Group::warp_contiguous;
  if (stage != nullptr) {
    if constexpr (emits_for<Op, Cursors>::value)
      lift_staged<ITEMS>(op, in, w, first, stage, items, raw);
    else
      lift_staged<ITEMS>(op, in, w, first, stage, items);
  } else if constexpr (kept) {
    if constexpr (emits_for<Op, Cursors>::value) {
      lift_direct<ITEMS>(op, in, w, first, items, raw);
    } else {
      typename pack_items<ITEMS, Cursors>::type v;
      lift_direct<ITEMS>(op, in, w, first, items, v);
    }
  } else {
    load_states<ITEMS>(op, in, w.n, first, w.end, w.reverse, items);
  }
  S running = group.exclusive_scan(op, thread_fold<ITEMS>(op, items), prefix, temp);
  if constexpr (WRITE) {
    // What step i writes from its state: project(), or emit() with the step's elements (kept in registers
    // where the group loaded them so, else read again, never at a padding position).
    typename output_items_for<ITEMS, Outs>::type values;
    const auto put = [&](const S& state, int i) {
      if constexpr (emits_for<Op, Cursors>::value) {
        if constexpr (kept) {
          set_item(values, i, emit_item(op, state, raw, i));
        } else {
          const index_t p = first + i;
          if (p < w.begin || p >= w.end) return clear_item(values, i);
          set_item(values, i, emit_at(op, state, in, time_index(p, w.n, w.reverse)));
        }
      } else {
        set_item(values, i, project(op, state));
      }
    };
    if (exclusive) {  // uniform: two loops rather than a test per step
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        put(running, i);
        running = op(running, items[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        running = op(running, items[i]);
        put(running, i);
      }
    }
    if constexpr (Group::warp_contiguous)
      store_outputs<ITEMS, COALESCE>(out, w, first, values, stage, stage_bytes);
    else
      store_all_values<ITEMS>(out, w.n, first, w.begin, w.end, w.reverse, values);
  }
}

/// Scans positions [p0, p1) of a sequence of n steps from `carry`; returns the carry after them. Writes
/// the outputs `out` (output_cursors) when WRITE. Every thread of the group loops to the same `loop_end`
/// (>= p1; past p1 a thread only pads with the identity). `staging` (this warp's STAGES stages of
/// stage_bytes each, or null) pipelines contiguous inputs through shared memory (warp_io.cuh); only groups
/// whose warps hold consecutive positions of one sequence may pass it. Without it, each thread loads its
/// own steps directly. Outputs of such groups leave as vectors, or regrouped through the consumed stage
/// (warp_io.cuh's store_items).
template <int ITEMS, int STAGES, bool WRITE, class Group, class Op, class Cursors, class Outs>
__device__ state_t<Op> scan_segment(Group& group, typename Group::template temp_storage<state_t<Op>>& temp,
                                    unsigned char* staging, int stage_bytes, const Op& op, const Cursors& in,
                                    const Outs& out, index_t n, index_t p0, index_t p1, index_t loop_end, bool reverse,
                                    bool exclusive, state_t<Op> carry) {
  const index_t tile = index_t(Group::threads) * ITEMS;
  const index_t offset = index_t(group.rank()) * ITEMS;  // of the thread's first step in a tile
  const index_t warp_offset = offset - index_t(threadIdx.x % warp_threads) * ITEMS;
  const auto chunk = [&](index_t base) { return warp_chunk<ITEMS>{n, base + warp_offset, p0, p1, reverse}; };
  const auto stage = [&](int s) { return staging + s * stage_bytes; };
  // Staged tiles start where the first input's chunks are aligned in memory (the first tile may begin
  // before p0: its earlier positions pad).
  const index_t origin = staging != nullptr ? aligned_origin<ITEMS>(in.head, n, p0, p1, reverse) : p0;

  if (staging != nullptr) {  // prologue: the first STAGES - 1 tiles in flight
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      const index_t base = origin + s * tile;
      if (base < loop_end) stage_inputs<ITEMS>(in, chunk(base), stage(s));
      __pipeline_commit();
    }
  }
  running_prefix<Op> prefix{op, carry};
  int current = 0;
  for (index_t base = origin; base < loop_end; base += tile) {
    unsigned char* ready = nullptr;
    if (staging != nullptr) {
      // The stage refilled now was read in the previous iteration: every lane must be past that read.
      __syncwarp();
      const index_t ahead = base + (STAGES - 1) * tile;
      const int refill = current == 0 ? STAGES - 1 : current - 1;
      if (ahead < loop_end) stage_inputs<ITEMS>(in, chunk(ahead), stage(refill));
      __pipeline_commit();
      __pipeline_wait_prior(STAGES - 1);  // this thread's copies of the current tile have landed
      __syncwarp();                       // and so have the other lanes'
      ready = stage(current);
      current = current == STAGES - 1 ? 0 : current + 1;
    }
    scan_tile<ITEMS, WRITE>(group, temp, op, in, out, chunk(base), base + offset, ready, stage_bytes, exclusive, prefix);
  }
  return carry;
}

}  // namespace parascan::engine
