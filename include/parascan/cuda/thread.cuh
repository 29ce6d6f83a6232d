// Thread layer: each thread combines ITEMS consecutive steps (in scan order) in registers.
#pragma once

#include "../inputs.hpp"
#include "../operator_traits.hpp"

namespace parascan::engine {

/// Scan position p of a sequence of n steps -> its time index.
__device__ __forceinline__ index_t time_index(index_t p, index_t n, bool reverse) { return reverse ? n - 1 - p : p; }

/// Lifts steps [first, first + ITEMS) into registers; positions at or past `end` become the identity
/// (the ragged tail is padded in registers, never in memory).
template <int ITEMS, class Op, class Cursors>
__device__ __forceinline__ void load_states(const Op& op, const Cursors& in, index_t n, index_t first, index_t end,
                                            bool reverse, state_t<Op> (&items)[ITEMS]) {
  if (first + ITEMS <= end) {  // full: no guards, so the loads can all be in flight at once
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) items[i] = lift_at(op, in, time_index(first + i, n, reverse));
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      items[i] = first + i < end ? lift_at(op, in, time_index(first + i, n, reverse)) : op.identity();
  }
}

/// The combination of a thread's items, in order.
template <int ITEMS, class Op>
__device__ __forceinline__ state_t<Op> thread_fold(const Op& op, const state_t<Op> (&items)[ITEMS]) {
  state_t<Op> total = items[0];
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) total = op(total, items[i]);
  return total;
}

/// Writes a thread's output values for positions [first, first + ITEMS) within [begin, end), directly.
template <int ITEMS, class Out>
__device__ __forceinline__ void store_values(const cursor<Out>& out, index_t n, index_t first, index_t begin,
                                             index_t end, bool reverse, const Out (&values)[ITEMS]) {
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
    if (first + i >= begin && first + i < end) out[time_index(first + i, n, reverse)] = values[i];
}

}  // namespace parascan::engine
