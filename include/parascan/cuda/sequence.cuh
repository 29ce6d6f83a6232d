// Sequence layer: a group walks a segment [p0, p1) of one sequence (scan positions) tile by tile,
// carrying the running state from tile to tile, optionally writing every step.
#pragma once

#include "block.cuh"
#include "thread.cuh"

namespace parascan::engine {

/// Scans positions [p0, p1) of a sequence of n steps from `carry`; returns the carry after them. Writes
/// project() of each step to `out` when WRITE. Every thread of the group calls it with the same bounds.
template <int ITEMS, bool WRITE, class Group, class Op, class Cursors, class Out>
__device__ state_t<Op> scan_segment(Group& group, typename Group::template temp_storage<state_t<Op>>& temp,
                                    const Op& op, const Cursors& in, const cursor<Out>& out, index_t n, index_t p0,
                                    index_t p1, bool reverse, bool exclusive, state_t<Op> carry) {
  using S = state_t<Op>;
  const index_t tile = index_t(Group::threads) * ITEMS;
  for (index_t base = p0; base < p1; base += tile) {
    const index_t first = base + index_t(group.rank()) * ITEMS;
    S items[ITEMS];
    load_states<ITEMS>(op, in, n, first, p1, reverse, items);
    const S prefix = group.exclusive_scan(op, thread_fold<ITEMS>(op, items), carry, temp);
    if constexpr (WRITE) thread_scan_store<ITEMS>(op, out, n, first, p1, reverse, exclusive, prefix, items);
  }
  return carry;
}

}  // namespace parascan::engine
