// Whole sequences streamed by a block each (accelerated-scan's shape): every thread loads its ITEMS
// consecutive steps of every input straight into registers as vectors (16 bytes a thread and input for
// fp32 x 4 and bf16 x 8, 8 bytes for fp32 x 2), the block scans its tile of
// THREADS * ITEMS steps (thread fold, warp shuffles, warp totals through shared memory, one barrier a
// tile: block.cuh's block_group) from the running carry, and the next tile follows. No shared-memory
// stages: the other resident blocks (2 to 16 a multiprocessor, by the policy's rung) keep loads in flight
// while one synchronises, and a block's whole tile is requested at once (16 KiB of each fp32 input for
// 1024 x 4). Where that is too few bytes in flight for the device's bandwidth (the H200's, for 4-byte
// sums and 2-byte storage), a rung of `Stages` > 1 has thread 0 ask the L2 for the next Stages - 1 tiles
// (one bulk prefetch an input, sm_90's `cp.async.bulk.prefetch.L2`) as the block starts each tile: no
// registers, no barrier, nothing to wait for; the tile's own loads then hit the L2.
//
// Why not a warp a sequence with its cp.async pipeline (the default where no rung applies): it keeps every
// resident warp on its own sequence, 4096 streams of 1 KiB requests on an H100, and reached 94-96% of
// cudaMemcpy at T = 4096 .. 65536, where the same traffic as 264 streams of 16 KiB requests reaches 98-100%
// (H100, fp32 linear recurrence over (8, 1536, T), 2026-11-22); for short sequences the stream's blocks of
// 64 threads beat the warps too, having no stages to fill (policy.hpp).
//
// A shifted input (lag +-1: a backward pass's states one step behind) loads its unshifted runs as vectors
// and completes each run across its edge from the neighbouring lane (warp_io.cuh's load_run); operators
// with emit() keep their inputs' raw elements for it, so the fused backward has ladders of its own
// (ops/linear_recurrence.hpp).
//
// The grid is (n1, n0) over the batch axes, so that a block finds its sequence without a division.
#pragma once

#include <atomic>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "device.cuh"

namespace parascan::engine {

/// Cursors on the sequence s, at `at`, of every view of a streamable pack (uniform, contiguous in time: the
/// host checked), placed without the packed layouts' offsets and with the time stride a constant.
__device__ inline cursor_pack<> bind_contiguous_at(const input_pack<>&, batch_position, index_t) { return {}; }
template <class H, class... R>
__device__ __forceinline__ cursor_pack<H, R...> bind_contiguous_at(const input_pack<H, R...>& p, batch_position at,
                                                                   index_t s) {
  return {p.head.contiguous_cursor_at(at, s), bind_contiguous_at(p.tail, at, s)};
}
__device__ inline output_cursors<> bind_contiguous_at(const output_pack<>&, batch_position) { return {}; }
template <class H, class... R>
__device__ __forceinline__ output_cursors<H, R...> bind_contiguous_at(const output_pack<H, R...>& p,
                                                                      batch_position at) {
  return {p.head.contiguous_cursor_at(at), bind_contiguous_at(p.tail, at)};
}

/// Where an input's memory starts (a shifted cursor's base is `lag` elements on).
template <class T>
__device__ __forceinline__ const T* memory_begin(const cursor<const T>& c) {
  return c.base;
}
template <class T>
__device__ __forceinline__ const T* memory_begin(const shifted_cursor<T>& c) {
  return c.base - c.lag;
}

/// Asks the L2 for scan positions [first, first + tile) of every input's bound sequence of n steps (times
/// [n - first - tile, n - first) in a reverse scan), clipped to the sequence: one bulk prefetch an input
/// (Hopper's copy engine: no registers held, no completion to wait for; a no-op before sm_90). A shifted
/// input's own memory is asked for (one element off at the edges: its loads miss one line there). The
/// bytes stay 16-byte multiples: streamable sequences start and end on 16 bytes and tiles are whole
/// vectors.
__device__ inline void prefetch_to_l2(const cursor_pack<>&, index_t, index_t, index_t, bool) {}
template <class H, class... R>
__device__ __forceinline__ void prefetch_to_l2(const cursor_pack<H, R...>& c, index_t n, index_t first, index_t tile,
                                               bool reverse) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const auto* begin = memory_begin(c.head);
  using T = std::remove_const_t<std::remove_pointer_t<decltype(begin)>>;
  const index_t count = min(tile, n - first);
  const index_t lowest = reverse ? n - first - count : first;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(begin + lowest), "r"(unsigned(count * sizeof(T)))
               : "memory");
  prefetch_to_l2(c.tail, n, first, tile, reverse);
#endif
}

template <int THREADS, int ITEMS, int MIN_BLOCKS, int STAGES, bool WRITE, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) stream_kernel(const segment_args<Op, Pack, Outs> a) {
  using S = state_t<Op>;
  using Group = block_group<THREADS>;
  using temp_t = typename Group::template temp_storage<S>;
  __shared__ alignas(16) unsigned char temp_bytes[sizeof(temp_t)];
  temp_t& temp = *reinterpret_cast<temp_t*>(temp_bytes);
  Group group;

  const batch_position at{index_t(blockIdx.y), index_t(blockIdx.x)};
  const index_t s = at.i0 * index_t(gridDim.x) + at.i1;
  // What run_stream checked on the host is known here (uniform views, time stride 1, every lane run of a
  // full chunk on its vector piece): the prologue places the cursors with no branch, and the loads and
  // stores test no address (fp32 recurrence, one tile a block: 355 -> 240 warp instructions a warp).
  const index_t n = underlying(a.in.head).length;
  const auto in = bind_contiguous_at(a.in, at, s);
  decltype(bind_outputs(a.out, 0)) out{};
  if constexpr (WRITE) out = bind_contiguous_at(a.out, at);

  S carry = start_state(a.op, a.initial, s);
  running_prefix<Op> prefix{a.op, carry};
  constexpr index_t tile = index_t(THREADS) * ITEMS;
  const index_t offset = index_t(threadIdx.x) * ITEMS;
  const index_t warp_offset = offset - index_t(threadIdx.x % warp_threads) * ITEMS;
  // STAGES > 1: the next STAGES - 1 tiles are on their way to the L2 while this one is loaded and scanned,
  // so the bytes in flight a multiprocessor are no longer bounded by its tiles' registers.
  if constexpr (STAGES > 1) {
    if (threadIdx.x == 0)
      for (int d = 1; d < STAGES - 1 && index_t(d) * tile < n; ++d)
        prefetch_to_l2(in, n, index_t(d) * tile, tile, a.reverse);
  }
  for (index_t base = 0; base < n; base += tile) {
    if constexpr (STAGES > 1) {
      const index_t ahead = base + index_t(STAGES - 1) * tile;
      if (threadIdx.x == 0 && ahead < n) prefetch_to_l2(in, n, ahead, tile, a.reverse);
    }
    scan_tile<ITEMS, WRITE>(group, temp, a.op, in, out,
                            warp_chunk<ITEMS>{n, base + warp_offset, 0, n, a.reverse, /*runs_aligned=*/true},
                            base + offset, nullptr, 0, a.exclusive, prefix);
  }

  if (threadIdx.x == 0) a.write_final(s, carry);
}

/// Whether every view is uniform, contiguous in time, with every sequence starting and ending on 16 bytes
/// (a reverse scan's chunks are aligned to the end): what the stream's vector loads and stores need (a
/// view off alignment would move element by element, slower than the warp pipeline, which keeps it at
/// 0.98x the aligned speed).
template <class V>
bool streamable(const V& view) {
  const auto& v = underlying(view);
  using T = std::remove_const_t<typename std::remove_reference_t<decltype(v)>::element_type>;
  return v.time_stride == 1 && v.starts_aligned_to(16) && std::size_t(v.length) * sizeof(T) % 16 == 0;
}
/// A shifted input only at lag +-1 (the vector loads complete a run by one element; any other lag would
/// move the whole pack element by element, slower than the warp pipeline).
template <class T, class B>
bool streamable(const shifted_sequences<T, B>& view) {
  return (view.lag == 1 || view.lag == -1) && streamable(view.view);
}
template <class Pack, class Outs>
bool streamable(const Pack& in, const Outs& out) {
  bool all = true;
  for_each_view(in, [&](const auto& v) { all = all && streamable(v); });
  for_each_output(out, [&](const auto& v, int) { all = all && streamable(v); });
  return all;
}

/// Calls that ran the stream, in this process, and the tile (threads x items) of the last one (for tests
/// and diagnostics).
inline std::atomic<long long>& stream_launches() {
  static std::atomic<long long> count{0};
  return count;
}
inline std::atomic<int>& last_stream_tile() {
  static std::atomic<int> tile{0};
  return tile;
}

/// Whether this stream kernel spills at most `spill_bytes` on the current device (an unmeasured spill at
/// the register cap of a full multiprocessor may cost more than the stream gains). The kernel's local
/// bytes are cached (plus one: the cache's 0 means not yet read), the allowance compared on every call.
template <class Kernel>
bool stream_fits_registers(std::atomic<int> (&cache)[64], Kernel kernel, int spill_bytes) {
  const int local_plus_one = cached_per_device(cache, [&](int) {
    cudaFuncAttributes attributes{};
    detail::cuda_check(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
    return int(attributes.localSizeBytes) + 1;
  });
  return local_plus_one - 1 <= spill_bytes;
}

/// Runs whole sequences under the policy's stream (a block each, `Stream`'s threads, items and resident
/// blocks) when the batch allows it: every view uniform, contiguous in time and 16-byte aligned
/// (streamable; a shifted input's unshifted memory), at most 65535 sequences on the first batch axis, a
/// kernel without spills beyond the policy's `spill_bytes` (an operator with emit() keeps every input's raw
/// elements for its outputs: three inputs need about twice the registers of the forward's two). Returns
/// false otherwise (nothing launched).
template <class Stream, bool WRITE, class Op, class Pack, class Outs>
bool run_stream(const segment_args<Op, Pack, Outs>& a, int spill_bytes, cudaStream_t stream) {
  const auto& first = underlying(a.in.head);
  const index_t n0 = first.extent[0], n1 = first.extent[1];
  if (a.count == 0 || n0 * n1 != a.count || n0 > 65535 || n1 > std::numeric_limits<int>::max() ||
      !streamable(a.in, a.out))
    return false;
  const auto kernel =
      stream_kernel<Stream::threads, Stream::items, Stream::min_blocks, Stream::stages, WRITE, Op, Pack, Outs>;
  static std::atomic<int> fits[64] = {};
  if (!stream_fits_registers(fits, kernel, spill_bytes)) return false;
  if (log_plans())
    std::fprintf(stderr, "parascan: sequences streamed: a block of %d x %d a sequence\n", Stream::threads,
                 Stream::items);
  kernel<<<dim3(unsigned(n1), unsigned(n0)), Stream::threads, 0, stream>>>(a);
  detail::check_launch("parascan stream_kernel");
  last_stream_tile().store(Stream::tile, std::memory_order_relaxed);
  stream_launches().fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace parascan::engine
