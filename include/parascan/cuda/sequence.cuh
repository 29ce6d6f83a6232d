// Sequence layer: a group walks a segment [p0, p1) of one sequence (scan positions) tile by tile,
// carrying the running state from tile to tile, optionally writing every step.
#pragma once

#include "block.cuh"
#include "thread.cuh"
#include "warp_io.cuh"

namespace parascan::engine {

/// Scans positions [p0, p1) of a sequence of n steps from `carry`; returns the carry after them. Writes
/// project() of each step to `out` when WRITE. Every thread of the group loops to the same `loop_end`
/// (>= p1; past p1 a thread only pads with the identity).
/// `staging` (per warp, or null) routes contiguous inputs and outputs through shared memory; only groups
/// whose warps hold consecutive positions of one sequence may pass it.
template <int ITEMS, bool WRITE, class Group, class Op, class Cursors, class Out>
__device__ state_t<Op> scan_segment(Group& group, typename Group::template temp_storage<state_t<Op>>& temp,
                                    unsigned char* staging, const Op& op, const Cursors& in, const cursor<Out>& out,
                                    index_t n, index_t p0, index_t p1, index_t loop_end, bool reverse,
                                    bool exclusive, state_t<Op> carry) {
  using S = state_t<Op>;
  const index_t tile = index_t(Group::threads) * ITEMS;
  for (index_t base = p0; base < loop_end; base += tile) {
    const index_t first = base + index_t(group.rank()) * ITEMS;
    S items[ITEMS];
    if (staging != nullptr)
      warp_load_states<ITEMS>(op, in, n, first, p1, reverse, staging, items);
    else
      load_states<ITEMS>(op, in, n, first, p1, reverse, items);
    S running = group.exclusive_scan(op, thread_fold<ITEMS>(op, items), carry, temp);
    if constexpr (WRITE) {
      Out values[ITEMS];
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        if (exclusive) {
          values[i] = static_cast<Out>(project(op, running));
          running = op(running, items[i]);
        } else {
          running = op(running, items[i]);
          values[i] = static_cast<Out>(project(op, running));
        }
      }
      if (staging != nullptr)
        warp_store<ITEMS>(out, n, first, p1, reverse, values, staging);
      else
        store_values<ITEMS>(out, n, first, p1, reverse, values);
    }
  }
  return carry;
}

}  // namespace parascan::engine
