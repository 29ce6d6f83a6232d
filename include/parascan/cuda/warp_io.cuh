// Warp-cooperative loads and stores for sequences whose time axis is contiguous. A thread owns ITEMS
// consecutive steps, so direct loads would have the lanes of a warp ITEMS elements apart (each access
// touching a different sector). Instead the warp moves its 32 * ITEMS steps through shared memory:
// lane-consecutive (coalesced) global accesses, then a transpose to the owner thread. Reverse scans read
// the same sectors backwards, so they need no flip. One padding element per 32 keeps the transposed
// accesses free of bank conflicts.
#pragma once

#include <type_traits>

#include "../inputs.hpp"
#include "thread.cuh"

namespace parascan::engine {

template <int ITEMS>
constexpr int staged_elements = 32 * ITEMS + ITEMS;
__device__ __forceinline__ int staged(int idx) { return idx + idx / 32; }

/// Registers holding ITEMS raw elements of each input of a pack.
template <int ITEMS, class... T>
struct item_values;
template <int ITEMS>
struct item_values<ITEMS> {};
template <int ITEMS, class H, class... R>
struct item_values<ITEMS, H, R...> {
  H head[ITEMS];
  item_values<ITEMS, R...> tail;
};

/// Shared-memory bytes per warp that staging the inputs H, R... and the output Out takes.
template <int ITEMS, class Out, class... T>
constexpr std::size_t staging_bytes() {
  const std::size_t inputs = (std::size_t(0) + ... + ((staged_elements<ITEMS> * sizeof(T) + 15) / 16 * 16));
  const std::size_t output = staged_elements<ITEMS> * sizeof(Out);
  return inputs > output ? inputs : output;
}

/// Where the warp's staged positions [warp_first, warp_first + 32 * ITEMS) come from or go to.
struct warp_span {
  index_t n, warp_first, end;
  bool reverse;
  __device__ __forceinline__ bool valid(int idx) const { return warp_first + idx < end; }
  __device__ __forceinline__ index_t time(int idx) const { return time_index(warp_first + idx, n, reverse); }
};

// Step 1: every input's global -> shared copies are issued before any is waited on.
template <int ITEMS>
__device__ __forceinline__ void stage_in(const cursor_pack<>&, const warp_span&, unsigned char*) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void stage_in(const cursor_pack<H, R...>& c, const warp_span& w, unsigned char* buf) {
  if (c.head.stride == 1) {
    H* s = reinterpret_cast<H*>(buf);
    const int lane = int(threadIdx.x) % 32;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int idx = k * 32 + lane;
      if (w.valid(idx)) s[staged(idx)] = c.head.base[w.time(idx)];
    }
  }
  stage_in<ITEMS>(c.tail, w, buf + (staged_elements<ITEMS> * sizeof(H) + 15) / 16 * 16);
}

// Step 2: each thread takes its ITEMS consecutive elements (inputs that are not contiguous, e.g.
// broadcast with stride 0, are read directly).
template <int ITEMS>
__device__ __forceinline__ void unstage(const cursor_pack<>&, const warp_span&, index_t, item_values<ITEMS>&,
                                        const unsigned char*) {}
template <int ITEMS, class H, class... R>
__device__ __forceinline__ void unstage(const cursor_pack<H, R...>& c, const warp_span& w, index_t first,
                                        item_values<ITEMS, H, R...>& v, const unsigned char* buf) {
  const int lane = int(threadIdx.x) % 32;
  if (c.head.stride == 1) {
    const H* s = reinterpret_cast<const H*>(buf);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v.head[i] = s[staged(lane * ITEMS + i)];
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
      if (first + i < w.end) v.head[i] = c.head[time_index(first + i, w.n, w.reverse)];
  }
  unstage<ITEMS>(c.tail, w, first, v.tail, buf + (staged_elements<ITEMS> * sizeof(H) + 15) / 16 * 16);
}

template <class Op, int ITEMS, class... Read>
__device__ __forceinline__ state_t<Op> lift_item(const Op& op, const item_values<ITEMS>&, int, const Read&... read) {
  return lift(op, read...);
}
template <class Op, int ITEMS, class H, class... R, class... Read>
__device__ __forceinline__ state_t<Op> lift_item(const Op& op, const item_values<ITEMS, H, R...>& v, int i,
                                                 const Read&... read) {
  return lift_item(op, v.tail, i, read..., v.head[i]);
}

/// Lifts the thread's steps [first, first + ITEMS) through the warp's staging buffer. All 32 lanes call
/// it, each with its own `first` (= warp_first + lane * ITEMS); positions at or past `end` are the identity.
template <int ITEMS, class Op, class... T>
__device__ __forceinline__ void warp_load_states(const Op& op, const cursor_pack<T...>& in, index_t n, index_t first,
                                                 index_t end, bool reverse, unsigned char* staging,
                                                 state_t<Op> (&items)[ITEMS]) {
  const int lane = int(threadIdx.x) % 32;
  const warp_span w{n, first - lane * ITEMS, end, reverse};
  stage_in<ITEMS>(in, w, staging);
  __syncwarp();
  item_values<ITEMS, T...> v;
  unstage<ITEMS>(in, w, first, v, staging);
  __syncwarp();  // the buffer is free for the stores
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) items[i] = first + i < end ? lift_item(op, v, i) : op.identity();
}

/// Writes the thread's outputs for steps [first, first + ITEMS) through the staging buffer (contiguous
/// outputs) or directly. All 32 lanes call it.
template <int ITEMS, class Out>
__device__ __forceinline__ void warp_store(const cursor<Out>& out, index_t n, index_t first, index_t end,
                                           bool reverse, const Out (&values)[ITEMS], unsigned char* staging) {
  const int lane = int(threadIdx.x) % 32;
  if (out.stride != 1) return store_values<ITEMS>(out, n, first, end, reverse, values);
  const warp_span w{n, first - lane * ITEMS, end, reverse};
  Out* s = reinterpret_cast<Out*>(staging);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) s[staged(lane * ITEMS + i)] = values[i];
  __syncwarp();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int idx = k * 32 + lane;
    if (w.valid(idx)) out.base[w.time(idx)] = s[staged(idx)];
  }
  __syncwarp();
}

}  // namespace parascan::engine
