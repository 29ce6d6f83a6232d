// Device layer: the kernels (which only compose the layers below) and the launches that carry out
// plan.hpp's plan (which group scans, whether sequences are split into segments).
//
// Strategies:
//  - one group per sequence, the group looping over tiles with a running carry: a warp per sequence by
//    default for states up to 32 bytes (several sequences per block), or a whole block;
//  - few long sequences: a prefix scan runs them in one pass, block tiles with a decoupled look-back
//    (lookback.cuh; states of up to 16 bytes, contiguous-time groups); otherwise each sequence is split
//    into segments over several groups, reduce-then-scan (fold every segment, scan the segment totals
//    per sequence, rescan each segment from its carry);
//  - strided time with adjacent sequences ((B, T, D)): a warp's lanes across 32 sequences, each lane
//    sequentially in time, inputs staged row by row (channel.cuh); lengths that differ (a batch ending on
//    its longest groups), or groups enough for several warps each but not two a multiprocessor: blocks of
//    several warps a group, longest first, each warp a slice of every tile (channel_slices.cuh); a skewed
//    batch (packed, a few long sequences among many short ones), too few groups of uneven lengths to fill
//    the device, or fewer groups than half the multiprocessors: block tiles of several warps with a
//    look-back, in one pass (channel_block_lookback.cuh), for prefix scans; other batches of too few
//    groups (of similar lengths, shorter than four tiles of the blocks above): one-warp tiles with a
//    look-back, lane by lane (channel_lookback.cuh), for prefix scans;
//  - large states (matrices): one thread per segment, sequentially in time (no cross-thread combining,
//    which for a K x K state costs K^3 per combine and shared memory the size of the state per thread);
//  - matrix products too large for a thread (operators with a matrix_form): a warp per segment,
//    sequentially in time, each product spread over its lanes (matrix.cuh);
//  - affine recurrences over many sequences (operators with an affine_form): N lanes a sequence walking
//    it in time, W x + b a step (affine.cuh).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <vector>

#include "../inputs.hpp"
#include "../operator_traits.hpp"
#include "../plan.hpp"
#include "../policy.hpp"
#include "channel.cuh"
#include "check.cuh"
#include "memory.cuh"
#include "sequence.cuh"

namespace parascan::engine {

enum class pass {
  scan,    // whole sequences: write every step and the final state
  reduce,  // whole sequences: write only the total (into `final`)
  fold,    // segments: write each segment's total into `partials`
  rescan,  // segments: write every step, starting from the carry in `partials`
};

template <class Op, class Pack, class Outs>
struct segment_args {
  Op op;
  Pack in;
  Outs out;  // an output_pack (empty for reductions)
  const output_t<Op>* initial;
  output_t<Op>* final;        // project() of each sequence's total, or null
  state_t<Op>* final_states;  // each sequence's whole total state, or null
  state_t<Op>* partials;
  index_t count;    // sequences
  index_t splits;   // segments per sequence (at most, when first_item is given)
  index_t segment;  // scan positions per segment (when splits > 1)
  bool reverse, exclusive;
  // Ragged splits (a skewed batch): group g's segments are the items [first_item[g], first_item[g + 1])
  // (as many as its longest sequence needs); null: every group has `splits` items, g * splits + j.
  const index_t* first_item = nullptr;
  // Channel groups of several warps (channel_slices.cuh): the group block b takes (longest first); null: b.
  const index_t* group_order = nullptr;

  /// Where segment j of sequence s (in groups of `per_group` sequences) keeps its total, then its carry.
  PARASCAN_HD index_t partial_slot(index_t s, index_t j, int per_group) const {
    if (first_item == nullptr) return s * splits + j;
    const index_t g = s / per_group;
    return (first_item[g] + j) * per_group + (s - g * per_group);
  }
  /// Writes sequence s's final output and state, where asked for, from its total `carry`.
  __device__ void write_final(index_t s, const state_t<Op>& carry) const {
    if (final != nullptr) final[s] = project(op, carry);
    if (final_states != nullptr) final_states[s] = carry;
  }
  /// How many segments sequence s has.
  PARASCAN_HD index_t segments_of(index_t s, int per_group) const {
    if (first_item == nullptr) return splits;
    const index_t g = s / per_group;
    return first_item[g + 1] - first_item[g];
  }
};

/// Shared memory for the input pipeline (warp_io.cuh): `stages` stages per warp, STAGES or as many as fit
/// (none: this group does not stage, or fewer than two (than STAGES, if 1) would fit).
template <class Group, int ITEMS, int STAGES, class Op, class Pack>
struct staging_plan;
template <class Group, int ITEMS, int STAGES, class Op, class... T>
struct staging_plan<Group, ITEMS, STAGES, Op, input_pack<T...>> {
  static constexpr int warps = Group::block_threads / warp_threads;
  static constexpr int stage_bytes = engine::stage_bytes<ITEMS, T...>();
  // Static shared memory stops at 48 KiB a block, the group's own scratch included; wide elements
  // (matrices) would crowd it out. Three inputs under a pair policy's 4 stages (48 KiB for 4 warps of 8
  // items) would not fit: they run 3 stages rather than no pipeline (logcumsumexp's backward, H100, T =
  // 4096 / 65536: 82 / 84% unstaged, 97 / 97% at 3 stages).
  static constexpr std::size_t scratch = sizeof(typename Group::template temp_storage<state_t<Op>>);
  static constexpr std::size_t room = scratch < 46 * 1024 ? 46 * 1024 - scratch : 0;
  static constexpr int fitting = int(room / (std::size_t(stage_bytes) * warps));
  static constexpr bool used = Group::warp_contiguous && fitting >= (STAGES < 2 ? STAGES : 2);
  static constexpr int stages = used && fitting < STAGES ? fitting : STAGES;
  static constexpr std::size_t per_warp = std::size_t(stage_bytes) * stages;
  static constexpr std::size_t bytes = used ? per_warp * warps : 16;
};

template <class Group, int ITEMS, int STAGES, int MIN_BLOCKS, pass PASS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(Group::block_threads, MIN_BLOCKS)
    segment_kernel(const segment_args<Op, Pack, Outs> a) {
  using S = state_t<Op>;
  using temp_t = typename Group::template temp_storage<S>;
  constexpr bool channels = Group::kind == group_kind::channel;
  using staging_t =
      std::conditional_t<channels, channel_staging<STAGES, Op, Pack>, staging_plan<Group, ITEMS, STAGES, Op, Pack>>;
  // Raw storage: states with constructors (Eigen matrices) cannot be __shared__ variables themselves.
  __shared__ alignas(16) unsigned char temp_bytes[sizeof(temp_t)];
  __shared__ alignas(16) unsigned char staging_space[staging_t::bytes];
  temp_t& temp = *reinterpret_cast<temp_t*>(temp_bytes);
  unsigned char* staging =
      staging_t::used ? staging_space + (threadIdx.x / warp_threads) * staging_t::per_warp : nullptr;
  Group group;

  const index_t item = index_t(blockIdx.x) * Group::groups_per_block + group.group_in_block();
  const index_t sequence_groups = (a.count + Group::sequences_per_group - 1) / Group::sequences_per_group;
  index_t g = 0;
  if (a.first_item == nullptr) {
    if (item >= sequence_groups * a.splits) return;  // a whole group leaves together
    g = a.splits == 1 ? item : item / a.splits;  // skips a 64-bit division (T = 128: +1 point, H100)
  } else {
    if (item >= a.first_item[sequence_groups]) return;
    for (index_t hi = sequence_groups; hi - g > 1;) {  // the last group whose first item is <= item
      const index_t mid = g + (hi - g) / 2;
      (a.first_item[mid] <= item ? g : hi) = mid;
    }
  }
  const index_t j = item - (a.first_item == nullptr ? g * a.splits : a.first_item[g]);
  const index_t s = g * Group::sequences_per_group + group.sequence_lane();
  const bool active = s < a.count;  // channel groups: lanes past the last sequence only pad
  // Warp kernels of up to 4 items a thread, instruction bound on short sequences, place every view from
  // one division (H100, same process: fp32 recurrence T = 128 43.0 -> 45.7%, its backward 37.5 -> 42.8%;
  // T = 896 / 1152 -1.2 / -1.4, a 4-byte spill); wider ones, at their register caps, keep one a view
  // (placed so, the bf16 8-item kernel spilled 72 bytes: T = 1024 75 -> 66%).
  constexpr bool one_position = Group::kind == group_kind::warp && ITEMS <= 4;
  batch_position at{0, 0};
  if constexpr (one_position) at = a.in.head.position_of(active ? s : 0);
  index_t n = 0;
  if constexpr (one_position) n = active ? a.in.head.length_at(at) : 0;
  else n = active ? a.in.head.length_of(s) : 0;
  const index_t p0 = j * a.segment, p1 = a.splits == 1 ? n : max(p0, min(n, p0 + a.segment));
  const index_t loop_end = group.loop_end(p1);
  if (PASS == pass::rescan && loop_end <= p0) return;

  S carry = PASS == pass::fold || !active ? a.op.identity()
            : PASS == pass::rescan        ? a.partials[a.partial_slot(s, j, Group::sequences_per_group)]
                                          : start_state(a.op, a.initial, s);
  constexpr bool write = PASS == pass::scan || PASS == pass::rescan;
  decltype(bind_outputs(a.out, 0)) out{};
  if constexpr (one_position) {
    if (write && active) out = bind_outputs_at(a.out, at);
  } else {
    if (write && active) out = bind_outputs(a.out, s);
  }
  const auto in = [&] {  // inactive lanes never read
    if constexpr (one_position)
      return bind_at(a.in, at, active ? s : 0);
    else
      return active ? bind(a.in, s) : bind(a.in, 0);
  }();
  if constexpr (channels)
    carry = scan_channels<STAGES, write, Group::runs>(staging, a.op, in, out, n, p0, p1, loop_end, a.reverse,
                                                     a.exclusive, carry);
  else
    carry = scan_segment<ITEMS, staging_plan<Group, ITEMS, STAGES, Op, Pack>::stages, write>(
        group, temp, staging, staging_t::stage_bytes, a.op, in, out, n, p0, p1, loop_end, a.reverse, a.exclusive,
        carry);

  if (!active || group.rank() != 0) return;
  if (PASS == pass::fold) a.partials[a.partial_slot(s, j, Group::sequences_per_group)] = carry;
  if (PASS == pass::scan || PASS == pass::reduce) a.write_final(s, carry);
}

/// Between fold and rescan: per sequence, turns segment totals into the carries before each segment
/// (starting from the initial state) and writes the final state. One thread per sequence.
/// The totals are read a batch at a time, all of a batch before any carry is written over them: one round
/// trip to memory a batch rather than one a segment, where the sequence's latency is the kernel's time
/// (a skewed packed batch's long sequences have 117 segments each: 46 us for it, ncu on an H200).
template <int PER_GROUP, class Op, class Pack, class Outs>
__global__ void carry_kernel(const segment_args<Op, Pack, Outs> a) {
  using S = state_t<Op>;
  constexpr int batch = sizeof(S) <= 8 ? 8 : sizeof(S) <= 16 ? 4 : sizeof(S) <= 32 ? 2 : 1;  // 64 bytes
  const index_t s = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= a.count) return;
  S carry = start_state(a.op, a.initial, s);
  const index_t segments = a.segments_of(s, PER_GROUP);
  // Segment j's slot is slots[j * step] (partial_slot), its group's place read once.
  S* const slots = a.partials + a.partial_slot(s, 0, PER_GROUP);
  const index_t step = segments > 1 ? a.partial_slot(s, 1, PER_GROUP) - a.partial_slot(s, 0, PER_GROUP) : 0;
  for (index_t j0 = 0; j0 < segments; j0 += batch) {
    S total[batch];
#pragma unroll
    for (int u = 0; u < batch; ++u)
      if (j0 + u < segments) total[u] = slots[(j0 + u) * step];
#pragma unroll
    for (int u = 0; u < batch; ++u) {
      if (j0 + u < segments) {
        slots[(j0 + u) * step] = carry;
        carry = a.op(carry, total[u]);
      }
    }
  }
  a.write_final(s, carry);
}

/// A per-device value computed once (device attributes, kernel occupancy): dispatch runs on every call,
/// and these queries cost microseconds, which short scans notice. Races only ever store the same value.
template <class Compute>
int cached_per_device(std::atomic<int> (&cache)[64], Compute&& compute) {
  int device = 0;
  detail::cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  if (device < 0 || device >= 64) return compute(device);
  int value = cache[device].load(std::memory_order_relaxed);
  if (value == 0) cache[device].store(value = compute(device), std::memory_order_relaxed);
  return value;
}

inline int multiprocessors() {
  static std::atomic<int> cache[64] = {};
  return cached_per_device(cache, [](int device) {
    int sms = 0;
    detail::cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    return sms;
  });
}

/// Whether the current device's memory reaches 4.5 TB/s at its peak (2 x memory clock x bus width: the
/// H200's 4.9, the H100 NVL's 4.0, the H100 SXM's 3.35), cached per device: stream rungs may serve one
/// class of device only (policy.hpp, memory_bandwidth). A device that reports a zero clock counts as below.
inline bool memory_from_4_5_tbs() {
  static std::atomic<int> cache[64] = {};
  return cached_per_device(cache, [](int device) {
           int khz = 0, bits = 0;
           detail::cuda_check(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device),
                              "cudaDeviceGetAttribute");
           detail::cuda_check(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device),
                              "cudaDeviceGetAttribute");
           return 2.0 * double(khz) * 1e3 * double(bits) / 8 >= 4.5e12 ? 2 : 1;  // the cache's 0: not yet read
         }) == 2;
}
inline bool serves_this_device(memory_bandwidth devices) {
  return devices == memory_bandwidth::any || (devices == memory_bandwidth::from_4_5_tbs) == memory_from_4_5_tbs();
}

/// Whether the current device runs programmatic dependent launches (sm_90 on), cached per device.
inline bool launches_programmatically() {
  static std::atomic<int> cache[64] = {};
  return cached_per_device(cache, [](int device) {
           int major = 0;
           detail::cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                              "cudaDeviceGetAttribute");
           return major >= 9 ? 2 : 1;  // the cache's 0: not yet read
         }) == 2;
}

/// Lets `kernel` take `bytes` of dynamic shared memory (above 48 kB it must ask) on the current device,
/// once per device (`cache`: the kernel's own).
template <class Kernel>
void allow_dynamic_shared(std::atomic<int> (&cache)[64], Kernel kernel, int bytes) {
  cached_per_device(cache, [&](int) {
    detail::cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                       "cudaFuncSetAttribute");
    return 1;
  });
}

/// Dynamic shared memory that keeps a block of `kernel` asking `bytes` alone on its multiprocessor: `bytes`,
/// or just over half a multiprocessor's shared memory less the kernel's static shared memory where that is
/// more (a second block would not fit beside it), at most what the block may ask for; `bytes` on a device
/// that would not say. Per device (`cache`: the kernel's own).
template <class Kernel>
std::size_t lone_block_shared(std::atomic<int> (&cache)[64], Kernel kernel, std::size_t bytes) {
  const int padded = cached_per_device(cache, [&](int device) {
    int per_multiprocessor = 0, optin = 0;
    cudaFuncAttributes attributes{};
    if (cudaDeviceGetAttribute(&per_multiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    const int half = per_multiprocessor / 2 + 16 - int(attributes.sharedSizeBytes);
    return std::max(1, std::min(half, optin - int(attributes.sharedSizeBytes)));  // (the cache's 0: not yet)
  });
  return padded < 0 ? bytes : std::max(bytes, std::size_t(padded));
}

/// Whether a block of `kernel` with `bytes` of dynamic shared memory fits the current device's shared
/// memory (sm_75 has 64 kB a block, sm_86 / 89 99 kB, sm_80 and sm_90 more), once per device (`cache`:
/// the kernel's own). A device that would not say counts as no: the caller then runs something else.
template <class Kernel>
bool fits_shared_memory(std::atomic<int> (&cache)[64], Kernel kernel, std::size_t bytes) {
  return cached_per_device(cache, [&](int device) {
           int optin = 0;
           cudaFuncAttributes attributes{};
           if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
               cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
             (void)cudaGetLastError();
             return 2;
           }
           return attributes.sharedSizeBytes + bytes <= std::size_t(optin) ? 1 : 2;
         }) == 1;
}

/// Blocks of one segment kernel a multiprocessor holds at once (at least 1), per device (the fold pass
/// stands for all three: same registers and shared memory).
template <class Group, int ITEMS, int STAGES, int MIN_BLOCKS, class Op, class Pack, class Outs>
int resident_blocks() {
  static std::atomic<int> cache[64] = {};
  return cached_per_device(cache, [](int) {
    int blocks = 0;
    detail::cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                           &blocks, segment_kernel<Group, ITEMS, STAGES, MIN_BLOCKS, pass::fold, Op, Pack, Outs>,
                           Group::block_threads, 0),
                       "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(blocks, 1);
  });
}

/// Launches one pass over `items` groups x segments.
template <class Group, int ITEMS, int STAGES, int MIN_BLOCKS, pass PASS, class Op, class Pack, class Outs>
void launch_segments(const segment_args<Op, Pack, Outs>& a, index_t groups, cudaStream_t stream) {
  if (groups == 0) return;
  const index_t blocks = (groups + Group::groups_per_block - 1) / Group::groups_per_block;
  detail::require(blocks <= std::numeric_limits<int>::max(), "inputs", "fewer than 2^31 blocks of work");
  segment_kernel<Group, ITEMS, STAGES, MIN_BLOCKS, PASS><<<unsigned(blocks), Group::block_threads, 0, stream>>>(a);
  detail::check_launch("parascan segment_kernel");
}

/// Long whole sequences a block each (block_stream.cuh, included at the end of this file).
template <class Stream, bool WRITE, class Op, class Pack, class Outs>
bool run_stream(const segment_args<Op, Pack, Outs>& a, int spill_bytes, cudaStream_t stream);

/// Runs whole sequences under the policy's stream where runs_stream and run_stream allow, else under the
/// stream of the policy it refines (streamed_sequences nest: the outer stream's longer tiles from more
/// steps, the inner one's below them and where they would pad too much). False: none ran.
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
bool run_streams(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, cudaStream_t stream) {
  if constexpr (!detail::has_stream_policy<Policy>::value) {
    return false;
  } else {
    using Stream = typename Policy::stream_policy;
    if (runs_stream(shape.count, shape.max_length, multiprocessors(), Stream::min_blocks, Policy::stream_from,
                    index_t(Stream::tile)) &&
        serves_this_device(detail::stream_devices_of<Policy>::value) &&
        run_stream<Stream, WRITE>(a, detail::stream_spill_bytes_of<Policy>::value, stream))
      return true;
    return run_streams<typename detail::refined_policy<Policy>::type, WRITE>(a, shape, stream);
  }
}

/// The single-pass look-back (lookback.cuh, included at the end of this file).
template <class Tiles, class Op, class Pack, class Outs>
bool run_lookback(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                  cudaStream_t stream);

/// The single-pass look-ahead (lookahead.cuh, included at the end of this file).
template <class Shape, class Op, class Pack, class Outs>
bool run_lookahead(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, temp_allocator& alloc,
                   cudaStream_t stream);

/// The channel groups' single pass (channel_lookback.cuh, included at the end of this file).
template <class Op, class Pack>
constexpr bool channel_lookback_fits();
template <class Op, class Pack>
constexpr index_t channel_tile_steps();
template <bool RUNS, class Op, class Pack, class Outs>
bool run_channel_lookback(segment_args<Op, Pack, Outs> a, const batch_shape& shape, temp_allocator& alloc,
                          cudaStream_t stream);

/// A skewed channel batch's single pass (channel_block_lookback.cuh, included at the end of this file).
template <bool RUNS, class Op, class Pack, class Outs, class Lengths>
bool run_channel_block_lookback(segment_args<Op, Pack, Outs> a, index_t groups, const Lengths& lengths,
                                temp_allocator& alloc, cudaStream_t stream);

/// Whole channel groups of several warps that split time (channel_slices.cuh, included at the end of this
/// file).
constexpr int channel_slice_warps = 8;
template <bool WRITE, bool RUNS, class Op, class Pack, class Outs>
bool run_channel_slices(const segment_args<Op, Pack, Outs>& a, index_t groups, bool mixed_lengths,
                        cudaStream_t stream);
template <class Op, class Pack>
constexpr index_t channel_slices_tile();

/// The tiles of the look-back: the policy's (single_pass_tiles), else 512 threads of 16 steps (24 where
/// every input is 2 bytes; 8 for states over 8 bytes), two blocks a multiprocessor (policy.hpp).
template <class Policy, class Op, class Pack, class = void>
struct lookback_tiles {
  static constexpr int items = sizeof(state_t<Op>) > 8 ? 8 : detail::narrowest_input_bytes<Pack>() <= 2 ? 24 : 16;
  using type = cuda_policy<512, items, combine_variant::block, 2>;
};
template <class Policy, class Op, class Pack>
struct lookback_tiles<Policy, Op, Pack, std::void_t<typename Policy::lookback_policy>> {
  using type = typename Policy::lookback_policy;
};

/// The look-ahead's tiles (lookahead.cuh) and from how many tiles a multiprocessor it runs: the policy's
/// (look_ahead_tiles), else from 64 tiles a multiprocessor for the two shapes measured (one sequence on an
/// H200, bench/results/h200-lookahead-engine-2026-11-29.log, run 19: each shape in its own process, two
/// rounds; the former defaults in the same run):
/// - 4-byte states from one 4-byte input (fp32 / int32 cumsum): 8 warps of 28 steps, 6 stages, 3 ahead
///   (2^28: 90.9% of copy, against 88.0-88.8% for the former 7 x 32, 84.6-85.0% for the probe's lean
///   kernel, 73% for CUB InclusiveSum and 45% for the look-back; it spills 100 bytes a thread, which 7 x
///   28 does not (88.5%));
/// - 8-byte states from two 4-byte inputs (the fp32 linear recurrence): 8 warps of 20 steps, 5 stages, 2
///   ahead (2^28: 93.7-93.9% against 82.2-82.3% for the former 8 x 16 at 4 / 2 and the look-back's 57.8%;
///   2^26: 90.1 against 79.5%; 4 stages 87.7%).
/// A thread's run of each input is then an odd number of 16-byte pieces (5 or 7, as the probe's 31 steps
/// are odd): 8 x 16 (4 pieces) read 11 points lower, the sum's 7 x 32 (8 pieces) 2.5 lower, 8 x 12 (3
/// pieces, more tiles) lower still (not profiled). A block holds most of the 227 KB of shared memory (215
/// KB for the recurrence, 178 KB for the sum; a device with less runs the look-back). 1 + WARPS warps of 8
/// or 16 in all leave a thread 255 or 128 registers where 9 or 17 leave 168 or 96 (a block's warps spread
/// over the 4 schedulers).
/// None for the rest (not measured), which the look-back serves.
template <class Op, class Pack>
using default_lookahead_shape = std::conditional_t<
    sizeof(state_t<Op>) == 4 && Pack::size == 1 && detail::widest_input_bytes<Pack>() == 4,
    lookahead_shape<8, 28, 6, 3>,
    std::conditional_t<sizeof(state_t<Op>) == 8 && Pack::size == 2 && detail::narrowest_input_bytes<Pack>() == 4 &&
                           detail::widest_input_bytes<Pack>() == 4,
                       lookahead_shape<8, 20, 5, 2>, void>>;
template <class Policy, class Op, class Pack, class = void>
struct lookahead_tiles {
  using type = default_lookahead_shape<Op, Pack>;
  static constexpr int from = 64;
};
template <class Policy, class Op, class Pack>
struct lookahead_tiles<Policy, Op, Pack, std::void_t<typename Policy::lookahead_policy>> {
  using type = typename Policy::lookahead_policy;
  static constexpr int from = Policy::lookahead_from;
};

/// Runs a scan (WRITE) or a reduction (results in a.final) with one group kind: whole sequences in one
/// pass when they fill the device, else (few long sequences) a single pass for prefix scans whose states
/// shuffle (the look-ahead where lookahead_tiles has tiles and there are enough of them, else the
/// look-back), reduce-then-scan over segments (fold, carry, rescan) for the rest.
/// `lengths`: the batch's view with host offsets, whose lengths dispatch reads (layout.hpp's longest_in and
/// groups_longer_than: a ragged split counts each group's segments).
template <class Policy, class Group, bool WRITE, class Op, class Pack, class Outs, class Lengths>
void run_with_group(segment_args<Op, Pack, Outs> a, const batch_shape& shape, const Lengths& lengths,
                    temp_allocator& alloc, cudaStream_t stream) {
  constexpr bool sequential = Group::threads == 1;
  constexpr int items = sequential ? 1 : Policy::items;
  constexpr int min_blocks = Policy::min_blocks;
  constexpr int stages = Policy::stages;
  constexpr policy_values values = policy_values::of<Policy, Op>();
  constexpr group_geometry geometry = geometry_of(Group::kind, values);
  static_assert(geometry.threads == Group::threads && geometry.groups_per_block == Group::groups_per_block &&
                    geometry.sequences_per_group == Group::sequences_per_group,
                "plan.hpp's geometry_of must describe the CUDA groups of block.cuh");
  scan_plan plan = plan_scan(values, Group::kind, shape, multiprocessors(),
                             resident_blocks<Group, items, stages, min_blocks, Op, Pack, Outs>());
  if constexpr (WRITE && Group::kind == group_kind::channel && channel_lookback_fits<Op, Pack>()) {
    // Steps of few bytes: the block tiles rather than whole groups of warps (plan.hpp says why).
    if (runs_channel_slices(plan, shape, channel_slices_tile<Op, Pack>(), multiprocessors(), channel_slice_warps) &&
        thin_steps_take_block_tiles(plan, detail::input_bytes_per_step<Pack>()) && single_pass_enabled())
      plan = ragged_channel_split(plan, shape);
  }
  if (log_plans())
    std::fprintf(stderr, "parascan: %s %lld sequences, longest %lld: %s\n", WRITE ? "prefix_scan" : "reduce_scan",
                 static_cast<long long>(shape.count), static_cast<long long>(shape.max_length),
                 plan.describe().c_str());
  constexpr int per_group = Group::sequences_per_group;
  constexpr pass whole = WRITE ? pass::scan : pass::reduce;
  if constexpr (WRITE && Group::kind == group_kind::warp) {
    if (run_streams<Policy, WRITE>(a, shape, stream)) return;  // whole sequences, a block each
  }
  if constexpr (Group::kind == group_kind::channel) {
    if (runs_channel_slices(plan, shape, channel_slices_tile<Op, Pack>(), multiprocessors(), channel_slice_warps)) {
      // Whole groups of mixed lengths start longest first: the device holds fewer blocks of 8 warps than a
      // batch has groups, and a long group that starts late ends last. Where a block alone moves its
      // multiprocessor's share of bytes, they also run a block a multiprocessor (channel_slices.cuh): a
      // long group that shares its multiprocessor ends last.
      const bool ordered = plan.splits == 1;
      detail::temp_buffer order(alloc, stream, ordered ? std::size_t(plan.groups) * sizeof(index_t) : 0);
      if (ordered) {
        std::vector<index_t> length(std::size_t(plan.groups)), group(std::size_t(plan.groups));
        for (index_t g = 0; g < plan.groups; ++g) {
          length[std::size_t(g)] = longest_in(lengths, g * per_group, std::min(a.count, (g + 1) * per_group));
          group[std::size_t(g)] = g;
        }
        std::stable_sort(group.begin(), group.end(),
                         [&](index_t x, index_t y) { return length[std::size_t(x)] > length[std::size_t(y)]; });
        // From pageable memory: the call returns once `group` is copied out, so it may go out of scope.
        detail::cuda_check(cudaMemcpyAsync(order.as<index_t>(), group.data(), group.size() * sizeof(index_t),
                                           cudaMemcpyHostToDevice, stream),
                           "parascan group order");
        a.group_order = order.as<index_t>();
      }
      if (run_channel_slices<WRITE, Group::runs>(a, plan.groups, ordered, stream)) return;
      a.group_order = nullptr;
    }
  }
  if (plan.splits == 1) {
    if constexpr (Group::kind == group_kind::warp && detail::has_long_policy<Policy>::value) {
      using Long = typename Policy::long_policy;  // whole long sequences: longer tiles (policy.hpp)
      if (runs_long_tiles(shape.max_length, Policy::long_from, warp_threads * items, warp_threads * Long::items)) {
        if (log_plans()) std::fprintf(stderr, "parascan: long sequences: %d items a thread\n", Long::items);
        return launch_segments<Group, Long::items, Long::stages, Long::min_blocks, whole>(a, plan.groups, stream);
      }
    }
    launch_segments<Group, items, stages, min_blocks, whole>(a, plan.groups, stream);
    return;
  }
  if constexpr (WRITE && Group::warp_contiguous && shuffles_state<state_t<Op>> && sizeof(state_t<Op>) % 4 == 0) {
    using Ahead = typename lookahead_tiles<Policy, Op, Pack>::type;
    if constexpr (!std::is_void_v<Ahead>) {
      if (runs_look_ahead(plan, int(sizeof(state_t<Op>)), shape, Ahead::tile, multiprocessors(),
                          lookahead_tiles<Policy, Op, Pack>::from) &&
          single_pass_enabled() && look_ahead_enabled() && run_lookahead<Ahead>(a, shape, alloc, stream))
        return;
    }
    using Tiles = typename lookback_tiles<Policy, Op, Pack>::type;
    if (runs_single_pass(plan, int(sizeof(state_t<Op>)), shape, index_t(Tiles::tile)) && single_pass_enabled() &&
        run_lookback<Tiles>(a, shape, alloc, stream))
      return;
  }
  if constexpr (WRITE && Group::kind == group_kind::channel && channel_lookback_fits<Op, Pack>()) {
    if (runs_channel_tiles(plan, shape, channel_tile_steps<Op, Pack>()) && single_pass_enabled() &&
        run_channel_lookback<Group::runs>(a, shape, alloc, stream))
      return;
    if (runs_channel_block_tiles(plan) && single_pass_enabled()) {
      if (run_channel_block_lookback<Group::runs>(a, plan.groups, lengths, alloc, stream)) return;
      // Declined (the device's shared memory): groups of similar lengths split for lack of groups take
      // the one-warp tiles (which ran them before they split ragged; thin steps re-planned from the whole
      // groups of warps, whose blocks are as large, go there too).
      scan_plan even = plan;
      even.ragged = false;
      if (runs_channel_tiles(even, shape, channel_tile_steps<Op, Pack>()) &&
          run_channel_lookback<Group::runs>(a, shape, alloc, stream))
        return;
    }
  }
  a.splits = plan.splits;
  a.segment = plan.segment;
  index_t launched = plan.groups * plan.splits;
  detail::temp_buffer first_items(alloc, stream, plan.ragged ? std::size_t(plan.groups + 1) * sizeof(index_t) : 0);
  if (plan.ragged) {  // each group's segments, as many as its longest sequence needs (at least one)
    std::vector<index_t> first(std::size_t(plan.groups) + 1, 0);
    for (index_t g = 0; g < plan.groups; ++g) {
      const index_t longest = longest_in(lengths, g * per_group, std::min(a.count, (g + 1) * per_group));
      first[std::size_t(g) + 1] = first[std::size_t(g)] + std::max<index_t>(1, (longest + a.segment - 1) / a.segment);
    }
    launched = first.back();
    // From pageable memory: the call returns once `first` is copied out, so it may go out of scope.
    detail::cuda_check(cudaMemcpyAsync(first_items.as<index_t>(), first.data(), first.size() * sizeof(index_t),
                                       cudaMemcpyHostToDevice, stream),
                       "parascan segment list");
    a.first_item = first_items.as<index_t>();
  }
  detail::temp_buffer partials(alloc, stream, std::size_t(launched * per_group) * sizeof(state_t<Op>));
  a.partials = partials.as<state_t<Op>>();
  launch_segments<Group, items, stages, min_blocks, pass::fold>(a, launched, stream);
  carry_kernel<per_group><<<unsigned((a.count + 127) / 128), 128, 0, stream>>>(a);
  detail::check_launch("parascan carry_kernel");
  if constexpr (WRITE) launch_segments<Group, items, stages, min_blocks, pass::rescan>(a, launched, stream);
}

/// The matrix, affine and chain-walk strategies (matrix.cuh, affine.cuh, chain_walk.cuh, included at the end
/// of this file).
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
void run_products(segment_args<Op, Pack, Outs> a, const batch_shape& shape, temp_allocator& alloc, cudaStream_t stream);
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
bool run_affine(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, cudaStream_t stream);
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
bool run_chain_walk(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, cudaStream_t stream);

/// Whether a view's sequences are channels, fewer than 32 of them adjacent a row (a (B, T, D) or packed
/// (total, D) batch of D < 32): their channel groups run channel_group's RUNS kernels.
template <class T>
bool narrow_channels(const sequences<T>& v) {
  return v.extent[1] > 1 && v.extent[1] < warp_threads && v.stride[1] == 1;
}
template <class T, class B>
bool narrow_channels(const shifted_sequences<T, B>& v) {
  return narrow_channels(v.view);
}

template <class Policy, bool WRITE, class Op, class Pack, class Outs, class Lengths>
void run(const segment_args<Op, Pack, Outs>& a, const batch_shape& shape, const Lengths& lengths,
         temp_allocator& alloc, cudaStream_t stream) {
  // Affine recurrences over many sequences walk them in time (N^2 a step, not N^3 a combine).
  if constexpr (Policy::combine == combine_variant::automatic || Policy::combine == combine_variant::sequential)
    if (run_affine<Policy, WRITE>(a, shape, stream)) return;
  // So do matrix chains over many chains (one product a step, a line of it a lane): 4x4 under the
  // default policy; larger matrices' default asks for warp_product, which keeps all but 8x8 prefixes
  // (run_chain_walk says why).
  if constexpr (Policy::combine == combine_variant::automatic || Policy::combine == combine_variant::sequential ||
                Policy::combine == combine_variant::warp_product)
    if (run_chain_walk<Policy, WRITE>(a, shape, stream)) return;
  const group_kind group = choose_group(policy_values::of<Policy, Op>(), shape);
  // Only the groups a policy can choose are instantiated: fewer kernels to compile.
  if constexpr (Policy::combine == combine_variant::warp_product || Policy::combine == combine_variant::block_product) {
    run_products<Policy, WRITE>(a, shape, alloc, stream);
  } else if constexpr (Policy::combine == combine_variant::sequential) {
    run_with_group<Policy, thread_group<Policy::threads>, WRITE>(a, shape, lengths, alloc, stream);
  } else {
    if constexpr (Policy::combine == combine_variant::automatic || Policy::combine == combine_variant::warp)
      if (group == group_kind::warp)
        return run_with_group<Policy, warp_group<Policy::threads>, WRITE>(a, shape, lengths, alloc, stream);
    if constexpr (sizeof(state_t<Op>) <= 32)
      if (group == group_kind::channel) {
        // Fewer than 32 channels a sequence: a warp's lanes span sequences, whose rows move in runs of
        // adjacent lanes in kernels of their own (channel_group's RUNS).
        if (narrow_channels(a.in.head))
          return run_with_group<Policy, channel_group<Policy::threads, true>, WRITE>(a, shape, lengths, alloc, stream);
        return run_with_group<Policy, channel_group<Policy::threads>, WRITE>(a, shape, lengths, alloc, stream);
      }
    if constexpr (Policy::combine != combine_variant::warp)
      run_with_group<Policy, block_group<Policy::threads>, WRITE>(a, shape, lengths, alloc, stream);
    else
      run_with_group<Policy, warp_group<Policy::threads>, WRITE>(a, shape, lengths, alloc, stream);
  }
}

}  // namespace parascan::engine

#include "affine.cuh"
#include "block_stream.cuh"
#include "chain_walk.cuh"
#include "channel_block_lookback.cuh"
#include "channel_lookback.cuh"
#include "channel_slices.cuh"
#include "lookahead.cuh"
#include "lookback.cuh"
#include "matrix.cuh"
