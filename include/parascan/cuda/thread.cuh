// Thread layer: each thread combines ITEMS consecutive steps (in scan order) in registers.
#pragma once

#include "../inputs.hpp"
#include "../operator_traits.hpp"
#include "../outputs.hpp"

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

/// Registers holding a thread's ITEMS values of each output (O...: the outputs' element types).
template <int ITEMS, class... O>
struct output_items;
template <int ITEMS>
struct output_items<ITEMS> {};
template <int ITEMS, class H, class... R>
struct output_items<ITEMS, H, R...> {
  H head[ITEMS];
  output_items<ITEMS, R...> tail;
};
template <int ITEMS, class Outs>
struct output_items_for;
template <int ITEMS, class... O>
struct output_items_for<ITEMS, output_cursors<O...>> {
  using type = output_items<ITEMS, O...>;
};

/// Item i of every output from what emit() gave (a value, or a value_pack with one value per output),
/// converted to each output's type.
template <int ITEMS, class H, class V>
__device__ __forceinline__ void set_item(output_items<ITEMS, H>& v, int i, const V& x) {
  if constexpr (detail::is_value_pack<V>::value)
    v.head[i] = static_cast<H>(x.head);
  else
    v.head[i] = static_cast<H>(x);
}
template <int ITEMS, class H, class H2, class... R, class... Y>
__device__ __forceinline__ void set_item(output_items<ITEMS, H, H2, R...>& v, int i, const value_pack<Y...>& x) {
  v.head[i] = static_cast<H>(x.head);
  set_item(v.tail, i, x.tail);
}
/// Item i of every output at a position that is not written (padding): a defined value.
template <int ITEMS>
__device__ __forceinline__ void clear_item(output_items<ITEMS>&, int) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void clear_item(output_items<ITEMS, H, R...>& v, int i) {
  v.head[i] = H{};
  clear_item(v.tail, i);
}

/// store_values for every output.
template <int ITEMS>
__device__ __forceinline__ void store_all_values(const output_cursors<>&, index_t, index_t, index_t, index_t, bool,
                                                 const output_items<ITEMS>&) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void store_all_values(const output_cursors<H, R...>& out, index_t n, index_t first,
                                                 index_t begin, index_t end, bool reverse,
                                                 const output_items<ITEMS, H, R...>& values) {
  store_values<ITEMS>(out.head, n, first, begin, end, reverse, values.head);
  store_all_values<ITEMS>(out.tail, n, first, begin, end, reverse, values.tail);
}

}  // namespace parascan::engine
