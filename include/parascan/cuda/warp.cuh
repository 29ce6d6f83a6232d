// Warp layer: inclusive scans across the 32 lanes of a warp. States of up to 16 bytes move through
// register shuffles (one per 32-bit word); larger states (matrices) go through a per-warp shared-memory
// buffer instead, since shuffling them word by word costs more than the shared-memory round trip.
#pragma once

#include <cstring>

#include "../operator_traits.hpp"

namespace parascan::engine {

constexpr unsigned full_mask = 0xffffffffu;
constexpr int warp_threads = 32;

template <class S>
constexpr bool shuffles_state = sizeof(S) <= 16;

/// Shuffle of any small state, word by word. mode: 0 up, 1 index.
template <class S>
__device__ __forceinline__ S shuffle_words(const S& v, int arg, bool up) {
  constexpr int words = int((sizeof(S) + 3) / 4);
  unsigned w[words] = {};
  std::memcpy(w, &v, sizeof(S));
#pragma unroll
  for (int i = 0; i < words; ++i) w[i] = up ? __shfl_up_sync(full_mask, w[i], arg) : __shfl_sync(full_mask, w[i], arg);
  S r;
  std::memcpy(&r, w, sizeof(S));
  return r;
}
template <class S>
__device__ __forceinline__ S shuffle_up(const S& v, int delta) { return shuffle_words(v, delta, true); }
template <class S>
__device__ __forceinline__ S shuffle_from(const S& v, int lane) { return shuffle_words(v, lane, false); }

/// Shared memory a warp needs for one scan of states of type S (none when they shuffle).
template <class S, bool = shuffles_state<S>>
struct warp_scan_storage {
  S lane[warp_threads];
};
template <class S>
struct warp_scan_storage<S, true> {};

/// Result of a warp scan: each lane's exclusive prefix and the warp's total.
template <class S>
struct warp_scan_result {
  S exclusive;
  S total;
};

/// Scans one value per lane across the warp in lane order. Lane 0's exclusive prefix is the identity.
/// All 32 lanes must call it.
template <class Op>
__device__ __forceinline__ warp_scan_result<state_t<Op>> warp_scan(const Op& op, state_t<Op> v,
                                                                   warp_scan_storage<state_t<Op>>& temp) {
  using S = state_t<Op>;
  const int lane = int(threadIdx.x) % warp_threads;
  if constexpr (shuffles_state<S>) {
#pragma unroll
    for (int d = 1; d < warp_threads; d *= 2) {
      const S earlier = shuffle_up(v, d);
      if (lane >= d) v = op(earlier, v);
    }
    const S before = shuffle_up(v, 1);
    return {lane == 0 ? op.identity() : before, shuffle_from(v, warp_threads - 1)};
  } else {
    temp.lane[lane] = v;
    __syncwarp();
#pragma unroll 1
    for (int d = 1; d < warp_threads; d *= 2) {
      const bool has = lane >= d;
      S earlier;
      if (has) earlier = temp.lane[lane - d];
      __syncwarp();
      if (has) {
        v = op(earlier, v);
        temp.lane[lane] = v;
      }
      __syncwarp();
    }
    const S exclusive = lane == 0 ? op.identity() : temp.lane[lane - 1];
    const S total = temp.lane[warp_threads - 1];
    __syncwarp();  // the buffer is free again once every lane has read it
    return {exclusive, total};
  }
}

}  // namespace parascan::engine
