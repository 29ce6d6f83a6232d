// Compile-time tuning, chosen per operator and architecture through the default_policy trait.
//
// A policy is a type. The engine asks `default_policy<Op, Arch>::type` unless the caller passes one.
// Specialise default_policy for your operator (or for a family through its state size) to retune it.
#pragma once

#include <type_traits>

#include "config.hpp"
#include "matrix_form.hpp"
#include "operator_traits.hpp"

namespace parascan {

/// Architecture tags.
namespace arch {
struct host {};
struct sm90 {};  // Hopper (H100, H200): the CUDA engine's target
}  // namespace arch

/// Host backend tuning: chunk length of the three-phase scan, and the sequence length above which a
/// batch of fewer sequences than threads is split across threads.
template <index_t SplitLength = (index_t(1) << 16)>
struct host_policy {
  static constexpr index_t split_length = SplitLength;
};

/// How the threads of the CUDA engine combine their states.
/// - automatic: a block per long sequence, a warp per short one, several blocks per sequence when there
///   are few long sequences; threads combine in parallel (warp shuffles, then shared memory);
/// - block: as automatic, never a warp per sequence;
/// - warp: a warp per sequence (or segment) at every length: no block barrier per tile, more sequences
///   in flight;
/// - sequential: each thread scans its own segment in time order (large states, where a parallel combine
///   costs more work than it saves);
/// - warp_product: a warp per segment in time order, each product spread over the warp's lanes (operators
///   with a matrix_form, matrix_form.hpp: matrices too large for one thread's registers); a whole block
///   per segment instead when the batch has too few sequences to give every resident warp four (few long
///   chains: each product's latency then bounds the time);
/// - block_product: a block per segment in time order, each product spread over the block's threads.
enum class combine_variant { automatic, block, warp, sequential, warp_product, block_product };

/// CUDA engine tuning. Threads: threads per block; Items: consecutive steps each thread combines in
/// registers (Threads * Items steps make a block's tile; a warp per sequence handles 32 * Items steps);
/// MinBlocks: blocks each multiprocessor must fit at once (caps registers per thread: memory-bound scans
/// need many loads in flight, so small states ask for 1024 resident threads, i.e. <= 64 registers).
/// Stages: tiles of contiguous inputs each warp keeps in shared memory, Stages - 1 of them loading while
/// one is scanned (the memory pipeline; 1: load, wait, scan). A stream's (streamed_sequences' Stream):
/// tiles in flight a block, the one in registers and Stages - 1 prefetched into the L2 (sm_90 on).
template <int Threads, int Items, combine_variant Combine = combine_variant::automatic, int MinBlocks = 1,
          int Stages = 3>
struct cuda_policy {
  static_assert(Threads % 32 == 0 && Threads >= 32 && Threads <= 1024,
                "cuda_policy: Threads must be a multiple of 32 in [32, 1024]");
  static_assert(Items >= 1, "cuda_policy: Items must be >= 1");
  static_assert(Stages >= 1, "cuda_policy: Stages must be >= 1");
  static constexpr int threads = Threads;
  static constexpr int items = Items;
  static constexpr int tile = Threads * Items;
  static constexpr combine_variant combine = Combine;
  static constexpr int min_blocks = MinBlocks;
  static constexpr int stages = Stages;
};

/// A policy whose whole sequences of about FromTiles tiles of `Long` (32 * Long::items steps a warp) and
/// more run under `Long` (items, resident blocks, stages; same block size and combine), the rest under
/// `Base` (the exact rule, from one tile short where the long tiles pad no more: plan.hpp's
/// runs_long_tiles). Longer tiles move more contiguous bytes a warp at a time, which long sequences
/// reward, but pad short ones. Measured side by side in one process (H100, (8, 1536, T), % of
/// cudaMemcpy; a probe timing explicit policies, 2026-11-22): fp32 linear recurrence, 4 -> 8 items at 4
/// blocks, T = 1024 / 2048 / 4096 / 65536: 84.7 / 89.6 / 91.6 / 94.7 -> 85.9 / 91.7 / 93.7 / 95.8
/// (reverse the same; T = 256: 61 -> 50, so not there); bf16 storage, 8 -> 16 items at 3 blocks, T =
/// 4096 / 65536: 88.3 / 84.5 -> 90.6 / 94.8 (T = 1024: 74 -> 59); fp32 cumsum 4 -> 8 items: +1 to 2
/// points from T = 1024. Only warp groups use it (the engine's default for small states); split
/// sequences, which give every warp a segment, keep `Base`.
template <class Base, int FromTiles, class Long>
struct long_sequences : Base {
  static_assert(Long::threads == Base::threads && Long::combine == Base::combine,
                "long_sequences: the long policy keeps the block size and the combine");
  using long_policy = Long;
  static constexpr index_t long_from = index_t(FromTiles) * 32 * Long::items;
};

/// The devices a stream serves, by their memory bandwidth (peak, 2 x memory clock x bus width): below 4.5
/// TB/s (the H100: 3.35 SXM, 4.0 NVL), or from 4.5 TB/s (the H200: 4.9). A tile a block keeps a fixed
/// number of bytes in flight, and a device of more bandwidth at the same latency needs more of them
/// (Little's law): on the H200 the H100's 1024 x 4 tiles at 4096 steps read 89.5% of copy, 512 x 4 97.7.
enum class memory_bandwidth { any, below_4_5_tbs, from_4_5_tbs };

/// A policy whose prefix scans of whole sequences of at least `FromSteps` steps (enough of them to fill the
/// device) run a block a sequence, `Stream`'s threads x items a tile, loaded straight into registers
/// (cuda/block_stream.cuh); the rest run `Base`. Measured on an H100 (fp32 linear recurrence over (8, 1536,
/// T), % of cudaMemcpy, 2026-11-22): 1024 x 4 at two blocks a multiprocessor reached 99.4 / 100 / 99.5 /
/// 98.2% by hand at T = 4096 / 8192 / 16384 / 65536, where the warp pipeline reads 94 / 95 / 95 / 96%.
/// `SpillBytes`: the local memory the stream kernel may use and still run (by default none: a spill at
/// the register cap of a fully occupied multiprocessor is a guess nobody measured, so the warp pipeline
/// runs instead); a policy that measured its spilled kernel says how much it allows.
/// `Base` may itself be streamed (a shorter tile below FromSteps, or where `Stream`'s tiles would pad too
/// much): the outer stream is tried first, then the inner one, whatever made the outer one decline (its
/// padding, its waves, or a spill: then a shorter tile runs at any length). A policy that defines its own
/// stream_policy over a streamed Base should define `refines` too, else the Base's stream is never tried.
/// `Devices`: the devices this stream serves (elsewhere Base runs).
template <class Base, index_t FromSteps, class Stream, int SpillBytes = 0,
          memory_bandwidth Devices = memory_bandwidth::any>
struct streamed_sequences : Base {
  static_assert(Stream::combine == combine_variant::block, "streamed_sequences: the stream is a block a sequence");
  static_assert(SpillBytes >= 0, "streamed_sequences: SpillBytes must be >= 0");
  using stream_policy = Stream;
  using refines = Base;
  static constexpr index_t stream_from = FromSteps;
  static constexpr int stream_spill_bytes = SpillBytes;
  static constexpr memory_bandwidth stream_devices = Devices;
};

/// One rung of a stream ladder (streamed_ladder): `Stream` from `FromSteps` steps, with streamed_sequences'
/// `SpillBytes`, on the devices of `Devices` only (elsewhere the next shorter rung runs).
template <index_t FromSteps, class Stream, int SpillBytes = 0, memory_bandwidth Devices = memory_bandwidth::any>
struct stream_rung {};
namespace detail {
template <class Base, class... Rungs>
struct ladder {
  using type = Base;
};
template <class Base, index_t From, class Stream, int Spill, memory_bandwidth Devices, class... Rest>
struct ladder<Base, stream_rung<From, Stream, Spill, Devices>, Rest...> {
  using type = typename ladder<streamed_sequences<Base, From, Stream, Spill, Devices>, Rest...>::type;
};
}  // namespace detail
/// `Base` with a stream for each rung, listed from the shortest: streamed_sequences nested, so that a
/// sequence runs the longest rung whose length it reaches and whose last tile pads at most an eighth
/// (a shorter rung where a longer one declines).
template <class Base, class... Rungs>
using streamed_ladder = typename detail::ladder<Base, Rungs...>::type;

/// A policy that runs `Narrow` (which has its own items, stream and resident blocks) where every input is
/// 2 bytes wide (bf16, fp16 storage), instead of `Base` widened to 16 bytes a thread
/// (with_items_at_least). Only the engine's defaults use it: a caller's explicit policy runs as given.
template <class Base, class Narrow>
struct narrow_inputs : Base {
  using narrow_policy = Narrow;
};

/// A policy whose prefix scans of few long sequences, which run in a single pass with a decoupled
/// look-back (cuda/lookback.cuh), use block tiles of `Tiles` (threads, items, resident blocks), the rest
/// `Base`. Without it, the look-back's tiles are 512 threads of 16 steps (24 where every input is 2
/// bytes, 8 for states over 8 bytes), two blocks a multiprocessor: measured on an H100 (one fp32 linear
/// recurrence of 2^28 steps, % of cudaMemcpy, 2026-11-22), the look-back's round trips want big tiles:
/// 128 x 8: 27, 256 x 8 (4 blocks): 46, 256 x 16 (3): 62, 512 x 8 (3): 55, 256 x 32 (2): 66, 1024 x 8
/// (2): 52, 512 x 16 (2): 70%.
template <class Base, class Tiles>
struct single_pass_tiles : Base {
  using lookback_policy = Tiles;
};

/// The tiles of the look-ahead single pass (cuda/lookahead.cuh): persistent blocks of WARPS compute warps
/// of ITEMS steps a thread and one look-ahead warp, STAGES stages of shared memory, aggregates published
/// AHEAD tiles before their scan, WINDOWS windows of 32 aggregates read a round trip.
template <int WARPS, int ITEMS, int STAGES, int AHEAD, int WINDOWS = 4>
struct lookahead_shape {
  static_assert(WARPS >= 1 && ITEMS >= 1 && WINDOWS >= 1, "a look-ahead tile has warps, items and windows");
  static_assert(STAGES >= 2 && AHEAD >= 1 && AHEAD < STAGES, "a look-ahead reduces within its stages");
  static constexpr int warps = WARPS, items = ITEMS, stages = STAGES, ahead = AHEAD, windows = WINDOWS;
  static constexpr int threads = (WARPS + 1) * 32;
  static constexpr index_t tile = index_t(WARPS) * 32 * ITEMS;
};

/// A policy whose prefix scans of few long sequences take the look-ahead single pass (cuda/lookahead.cuh)
/// with tiles of `Shape` (a lookahead_shape) where the batch has at least FromTiles tiles a
/// multiprocessor, the block-a-tile look-back below that, the rest `Base`. Without it, only 4-byte states
/// from one 4-byte input (fp32 cumsum) and 8-byte states from two (the fp32 recurrence) take the
/// look-ahead (cuda/device.cuh's lookahead_tiles, which says why and with which shapes).
template <class Base, class Shape, int FromTiles = 64>
struct look_ahead_tiles : Base {
  using lookahead_policy = Shape;
  static constexpr int lookahead_from = FromTiles;
};

namespace detail {
template <class Policy, class = void>
struct has_stream_policy : std::false_type {};
template <class Policy>
struct has_stream_policy<Policy, std::void_t<typename Policy::stream_policy>> : std::true_type {};
template <class Policy, class = void>
struct has_long_policy : std::false_type {};
template <class Policy>
struct has_long_policy<Policy, std::void_t<typename Policy::long_policy>> : std::true_type {};
template <class Policy, class = void>
struct has_narrow_policy : std::false_type {};
template <class Policy>
struct has_narrow_policy<Policy, std::void_t<typename Policy::narrow_policy>> : std::true_type {};
/// The policy a streamed_sequences refines (its Base; none: void).
template <class Policy, class = void>
struct refined_policy {
  using type = void;
};
template <class Policy>
struct refined_policy<Policy, std::void_t<typename Policy::refines>> {
  using type = typename Policy::refines;
};
/// The spill bytes a stream policy allows (streamed_sequences' SpillBytes; none for a hand-written
/// policy with a stream_policy of its own).
template <class Policy, class = void>
struct stream_spill_bytes_of : std::integral_constant<int, 0> {};
template <class Policy>
struct stream_spill_bytes_of<Policy, std::void_t<decltype(Policy::stream_spill_bytes)>>
    : std::integral_constant<int, Policy::stream_spill_bytes> {};
/// The devices a stream policy serves (streamed_sequences' Devices; every device for a hand-written one).
template <class Policy, class = void>
struct stream_devices_of : std::integral_constant<memory_bandwidth, memory_bandwidth::any> {};
template <class Policy>
struct stream_devices_of<Policy, std::void_t<decltype(Policy::stream_devices)>>
    : std::integral_constant<memory_bandwidth, Policy::stream_devices> {};

/// A cuda_policy (not a long_sequences) with at least `Items` items a thread; raising the items also
/// raises the registers a thread needs, so the resident blocks drop by a quarter.
template <class Policy, int Items>
using plain_with_items_at_least =
    std::conditional_t<(Policy::items >= Items),
                       cuda_policy<Policy::threads, Policy::items, Policy::combine, Policy::min_blocks, Policy::stages>,
                       cuda_policy<Policy::threads, Items, Policy::combine,
                                   (Policy::min_blocks * 3 / 4 > 1 ? Policy::min_blocks * 3 / 4 : 1), Policy::stages>>;

template <class Policy, int Items, bool = has_long_policy<Policy>::value>
struct widened {
  using type = plain_with_items_at_least<Policy, Items>;
};
/// A long_sequences policy widens both parts, the long one in proportion (its items times Items over the
/// base's), so that its tiles stay as many bytes long; the long tiles start after `scale` times as many
/// of them: a widened long tile holds three resident blocks, not four, and needs more tiles to pay off
/// (H100, bf16 storage, 256- against 512-step tiles, % of cudaMemcpy, 2026-11-22: T = 1536 / 1792 /
/// 2048: 81 / 83 / 84 against 67 / 56 / 79; T = 4096: 88 against 91).
template <class Policy, int Items>
struct widened<Policy, Items, true> {
  using Long = typename Policy::long_policy;
  static constexpr int scale = Items > Policy::items ? (Items + Policy::items - 1) / Policy::items : 1;
  static constexpr int from_tiles = int(Policy::long_from / (32 * Long::items)) * scale;
  using type = long_sequences<plain_with_items_at_least<Policy, Items>, from_tiles,
                              plain_with_items_at_least<Long, Long::items * scale>>;
};
}  // namespace detail

/// The same policy with at least `Items` items per thread. Raising the items also raises the registers a
/// thread needs, so the resident blocks drop by a quarter (8 -> 6 for the pair policy: bf16 linear
/// recurrences over (8, 1536, T) went from 59 / 82 / 93 / 95% to 61 / 88 / 97 / 98% of a float4 copy at
/// T = 1024 / 4096 / 16384 / 65536 on an H200, bench/policy_sweep.cu).
/// A policy that already has the items is kept whole (its stream, streamed_sequences, included; a widened
/// one runs without it: narrow_inputs gives a stream of its own to 2-byte inputs).
template <class Policy, int Items>
using with_items_at_least =
    std::conditional_t<(Policy::items >= Items), Policy, typename detail::widened<Policy, Items>::type>;

/// How large an operator's state is, which drives the default tuning.
enum class state_family { scalar, pair, wide, matrix };

template <class Op>
constexpr state_family family_of() {
  constexpr auto bytes = sizeof(state_t<Op>);
  if (bytes <= 4) return state_family::scalar;
  if (bytes <= 8) return state_family::pair;
  if (bytes <= 32) return state_family::wide;
  return state_family::matrix;
}

template <class Op, class Arch, class = void>
struct default_policy;

template <class Op>
struct default_policy<Op, arch::host> {
  // Large states cost more per step, so they are worth splitting sooner.
  using type = host_policy<(sizeof(state_t<Op>) > 32 ? (index_t(1) << 12) : (index_t(1) << 16))>;
};

// Chosen by bench/policy_sweep.cu on an H200 (2026-11-21; (8, 1536, T), T = 256 .. 65536, fractions of a
// float4 copy kernel in the same run). Scalar, pair and wide states: a warp per sequence at every length
// (no block barrier per tile, and 32 sequences in flight per multiprocessor, each with its loads STAGES - 1
// tiles ahead) beat whole blocks everywhere (before the stream: "Streamed" below): fp32 pairs at 128 x 4
// x 4 stages reached 51 / 73 / 84 / 92 / 97 / 99 / 101% at T = 256 / 512 / 1024 / 2048 / 4096 / 16384 /
// 65536, against 22 / 47 / 70 / 83 / 87 /
// 88 / 89% for 128-thread blocks and 98% at best for 256-thread blocks at 65536. Eight items per thread
// lost 20-25 points (register pressure at 1024 resident threads); complex64 (16-byte state) wants 4 blocks
// of 128 threads (<= 128 registers): 93 / 100 / 101% at 1024 / 4096 / 65536. 4 x 4 matrix states did
// best with 64-thread blocks (H100, earlier sweep). Tried and lost (H200, against cudaMemcpy's 4.26 TB/s):
// blocks of 512 or 1024 threads a sequence (accelerated-scan's shape; 79 / 62% at 65536: the block group
// then loaded element by element and staged one stage; since its direct vector loads, that shape is the
// stream, streamed_sequences above), and warps requesting 2 to 4 consecutive tiles at once (89-93% against
// 93.6% at 65536).
// Short sequences (SWEEP_SHORT, H200): the block size of a warp per sequence does not matter (64 to 256
// threads within 1 point at T = 128 .. 2048; 512 and 1024 lose 1-10), nor do 2 stages against 4 (< 3
// points); 2 or 1 items a thread lose 3-40 points. Also tried and lost (branches experiment/chain and
// experiment/runs): a block's warps taking turns on one sequence, the carry handed on by named barriers
// (82.7% against 94.8% at 65536), and a warp scanning several short sequences through one pipeline (the
// second iterator spills at 64 registers: 22.5 / 84.6% at T = 128 / 65536 against 28 / 95%).
// Long sequences (long_sequences above, H100, 2026-11-22): scalar and pair states switch to 8 items a
// thread at 4 blocks from about 4 such tiles (768 to 1024 fp32 steps, runs_long_tiles; the bf16
// widening makes it 16 items at 3 blocks from about 4096 steps). The same probe found the warp per
// sequence insensitive to occupancy and depth (2 to 8 blocks, 4 to 11 stages within half a point at
// T = 1024 / 4096 / 65536), and persistent warps (a grid
// the size of the device, each warp scanning sequences w, w + W, ... with its pipeline running on into
// the next sequence) 3-5 points slower from T = 256 (static assignment: no block scheduler to even out
// the warps), 2 points faster at T = 128 only; not kept.
// Streamed (streamed_ladder above; H100, 2026-11-23, (8, 1536, T), % of cudaMemcpy in one process, after
// the stream kernel stopped testing at run time what the host had checked: 355 -> 240 warp instructions a
// warp at T = 4096, 1024 x 4, where a tile a block made the per-block prologue count). fp32 recurrence:
//   T          128   256   512   1000  1024  1536  2048  3000  4096  5000  50000 65536
//   warps      45.0  62.3  76.3  83.1  87.0  90.2  92.0  87.3* 90.1* 89.5* 92.8* 93.3*
//   64 x 2@16  51.8  63.9  77.6  80.0  84.8  87.9  89.9  87.0
//   64 x 4@16   -    66.9  80.5  82.7  86.3  89.2  90.6  88.6
//   256 x 4@8   -     -     -    87.4  90.1  pads  94.1  94.5  96.2  95.2  95.3  96.8
//   512 x 4@4   -     -     -     -     -     -    96.0  pads  98.2  pads  96.4  97.6
//   1024 x 4@2  -     -     -     -     -     -    pads  pads  99.2  pads  97.5  98.5
// (warps: pair_warps, * 128 x 4 without its long tiles; "pads": the last tile would pad more than an
// eighth, so the rung declines; "-": below the rung's FromSteps in the probe). Between 1100 and 1820 steps
// no 1024-step tile fits the 1/8 rule and 64 x 4 runs: at T = 1536 89.2% against the warps' 90.2.
// Cumsum (4 bytes a step): 512 x 4@4 96.0 / 96.8 / 96.5% at T = 4096 / 16384 / 65536 (warps 89.3 / 90.9
// / 92.6; 256 x 4@8 94.2 / 95.2 / 95.2;
// 1024 x 4@2 spills 16 bytes since and reads 82-92), 256 x 4@8 91.2% at 2048 (warps 86.9). Tried for
// cumsum and not kept: loading the next tile into registers before scanning this one (the stream kernel
// with a second stage, a probe): 512 x 4@4 96.9 / 97.0 / 96.5% at 4096 / 16384 / 65536 against 95.7 /
// 96.8 / 96.6 in the same process, 512 x 4@3 93.4 / 97.5 / 96.6, 1024 x 4@1 61 / 88 / 92, 512 x 8@2
// 85 / 96 / 93; the fp32 recurrence lost a point with it (1024 x 4@2 98.0 / 97.3 against 99.0 / 98.5). bf16 gates,
// tokens and outputs (narrow_inputs above; 2-byte loads want 8 items a thread for 16-byte vectors):
// 128 x 8@12 78.1% at T = 1024 (warps 73.8), 256 x 8@6 87.7 / 93.4% at 2048 / 4096 (82.0 / 87.0),
// 512 x 8@3 96.4 / 98.1% at 8192 / 65536 (256 x 8@6 96.1 / 96.8; warps 90.0 / 93.0); they spill 14-18
// bytes at their 40-register caps (the narrow policy allows 128: room for another nvcc's allocation).
// Earlier, with 72 bytes spilled, 512 x 8@3 read 84.4% at 4096; 1024 x 4 (8-byte loads) 50 / 66 / 70% at
// 4096 / 16384 / 65536, 1024 x 8 (184 bytes spilled) 24 / 92 / 96%.
// Matrix products with a matrix_form above 128 bytes: a warp per product, factors staged 6 / 5 / 3 deep
// up to 256 bytes / 1 kB / beyond (H100, prefix over 2^26 floats of (B, 1024) chains: 8x8 48 -> 52%,
// 16x16 46 -> 49% of copy from 3 to 6 / 5 stages; 32x32 39% at 2 or 3 stages and at 32-, 64- or
// 128-thread blocks, and on the lane grid (cuda/matrix.cuh, H200) 0.327-0.344 ms at 2 to 4 stages and
// 32- to 128-thread blocks (256: 0.34-0.40), so the default stays; 4x4 through this strategy 25% against
// 23% for <64, 2>, not adopted). Over many chains (two warps of them a multiprocessor) chains of N = 4
// .. 32 are walked in time instead (cuda/chain_walk.cuh; 4x4 over (4096, 1024): 53%).
/// The pieces of the sm90 defaults (the measurements above), also for operators that tune their own
/// default_policy (ops/logsumexp.hpp, ops/log_linear_recurrence.hpp).
namespace sm90_tuning {
/// A stream's tile (threads x items) at `Blocks` resident blocks, `Stages` tiles in flight a block: the one
/// in registers and Stages - 1 prefetched into the L2 (block_stream.cuh; sm_90 on).
template <int Threads, int Items, int Blocks, int Stages = 1>
using stream = cuda_policy<Threads, Items, combine_variant::block, Blocks, Stages>;
template <int Items, int Blocks, int Stages>
using warps = cuda_policy<128, Items, combine_variant::warp, Blocks, Stages>;
using scalar_warps = long_sequences<warps<4, 8, 3>, 4, warps<8, 4, 4>>;
using pair_warps = long_sequences<warps<4, 8, 4>, 4, warps<8, 4, 4>>;
using wide_warps = warps<4, 4, 3>;
// Each stream from the length where it beats the next shorter one (or the warps), the shorter ones also
// where a longer tile would pad more than an eighth (T = 5000: 256 x 4). A ladder serves every operator of
// its state family (any user functor too; sums, products, max and min of other types) but was measured on
// the fp32 recurrence (pairs) and cumsum (scalars) only. An operator with emit() or more inputs keeps more
// registers a thread: where a rung would spill, the next shorter one runs (the fused backward has a ladder
// of its own, ops/linear_recurrence.hpp).
// From 2048 steps the pairs' rungs depend on the device's memory (memory_bandwidth): the H100's (below 4.5
// TB/s) as measured there, the H200's from its sweep (policy_sweep part pair_stream, 2026-11-27, % of
// cudaMemcpy, copy floor 4244 GB/s):
//   T           2048  4096  8192  50000 65536
//   warps       80.9  93.5  95.3  95.7  96.5
//   256 x 4@8   93.3  97.4  98.7  96.5  98.9
//   512 x 4@4   84.8  97.7  99.1  97.9  98.1
//   1024 x 4@2   -    89.5  95.7  96.5  99.5
//   128 x 4@16  90.9  96.0  97.1  95.1  97.6
//   256 x 8@6   90.6  94.6  95.3  92.1  94.9
// (256 x 8@4, 512 x 8@2, 512 x 4@3, 1024 x 2@2 lower still.) So on the H200 256 x 4 runs to 4096 steps,
// 512 x 4 to 65536, 1024 x 4 from there.
constexpr auto below_4_5_tbs = memory_bandwidth::below_4_5_tbs;
constexpr auto from_4_5_tbs = memory_bandwidth::from_4_5_tbs;
using pair_streams =
    streamed_ladder<pair_warps, stream_rung<128, stream<64, 2, 16>>, stream_rung<256, stream<64, 4, 16>>,
                    stream_rung<1000, stream<256, 4, 8>>, stream_rung<2048, stream<512, 4, 4>, 0, below_4_5_tbs>,
                    stream_rung<4096, stream<512, 4, 4>, 0, from_4_5_tbs>,
                    stream_rung<4096, stream<1024, 4, 2>, 0, below_4_5_tbs>,
                    stream_rung<65536, stream<1024, 4, 2>, 0, from_4_5_tbs>>;
// bf16 / fp16 storage and scalars, by device class too (policy_sweep part stream_prefetch, 2026-11-27, the
// same binary on an H100 and an H200, % of each one's cudaMemcpy; sN: N tiles in flight a block, N - 1 of
// them prefetched into the L2):
//   bf16 pairs, T   2048  4096  8192  16384 65536
//   H100 256 x 8@6  88.9  93.0  95.6  96.2  96.7    H200 256 x 8@6  75.0  83.3  89.3  87.6  88.4
//   H100 512 x 8@3   -    92.1  96.6  98.2  98.1    H200 512 x 8@3   -    76.9  82.8  86.6  90.0
//   H100 128 x 8@12 86.3  91.4  93.9  94.9  95.2    H200 128 x 8@12 80.6  88.5  93.4  95.1  95.3
//   fp32 sums
//   H100 256 x 4@8  91.0  93.9  95.0  95.1  95.1    H200 256 x 4@8  83.4  89.9  92.3  92.4  85.6
//   H100 512 x 4@4  90.2  96.0  97.3  96.7  96.5    H200 512 x 4@4  76.7  84.1  87.7  88.6  89.3
//   H100 256 x 4@8s2 92.3 94.1  92.9  92.5  91.5    H200 256 x 4@8s2 88.2 94.0  93.9  93.3  92.9
//   H100 512 x 4@4s2 89.6 96.9  96.9  96.3  94.6    H200 512 x 4@4s2 75.9 89.1  96.5  96.0  94.4
// (fp32 pairs lose 5-15 points with a prefetched tile on both: 512 x 4@4s2 80.2 / 87.8 at 4096 / 65536 on
// the H200 against 97.6 / 98.5; so do bf16 pairs at s3.) The L2 prefetch pays where a tile's registers
// hold too few bytes for the H200's bandwidth (4 bytes a step, or 2-byte elements with a 4-byte state
// between them: spills at 8 items); on the H100, whose bandwidth the registers already cover, it is a
// point up or down, but for cumsum from 4096 steps: a later H100 sweep (part scalar_stream, 2026-11-27,
// the pooled arrays; % of cudaMemcpy at T = 4096 / 8192 / 16384 / 65536; bench/results/
// h100-scalar-stream-sweep.log) read 512 x 4@4 96.0 / 97.0 / 96.7 / 96.5, 512 x 4@4s2 97.0 / 96.8 / 96.2 /
// 94.5, 1024 x 4@2s2 87.9 / 98.3 / 99.0 / 96.5; so the H100 takes 512 x 4@4s2 from 4096 and 1024 x 4@2s2
// from 8192 (the bench at a3cbcd0: 97.1 / 96.7 at 4096 / 65536). At 4096 steps nothing beats 512 x 4@4s2
// (part scalar_4096, H100, 2026-11-28, three rounds; bench/results/h100-scalar-4096-sweep.log): it reads
// 97.0-97.1, s3 96.8-97.1, 256 x 8@6s2 93.3-93.6, 256 x 4@8s3 92.9-93.1, 512 x 8@3 92.5-92.9, 256 x 8@8s2
// 92.2-92.5, 512 x 8@4 89.5 (one tile a block, spilling), 1024 x 4@2s2 87.8-88.1, 128 x 16@8 72-75.
using narrow_streams =
    streamed_ladder<detail::widened<pair_warps, 8>::type, stream_rung<1024, stream<128, 8, 12>, 128>,
                    stream_rung<2048, stream<256, 8, 6>, 128, below_4_5_tbs>,
                    stream_rung<8192, stream<512, 8, 3>, 128, below_4_5_tbs>>;
using scalar_streams =
    streamed_ladder<scalar_warps, stream_rung<2048, stream<256, 4, 8>, 0, below_4_5_tbs>,
                    stream_rung<2048, stream<256, 4, 8, 2>, 0, from_4_5_tbs>,
                    stream_rung<4096, stream<512, 4, 4, 2>, 0, below_4_5_tbs>,
                    stream_rung<8192, stream<1024, 4, 2, 2>, 0, below_4_5_tbs>,
                    stream_rung<8192, stream<512, 4, 4, 2>, 0, from_4_5_tbs>>;
/// Streams for combines that cost more than their loads (log space: an exp and a log1p a combine): more
/// items a thread and more warps a multiprocessor than the fp32 recurrence's 1024 x 4 at two blocks, which
/// read 63 / 77% for logcumsumexp at T = 4096 / 65536 (H100, 2026-11-23, % of cudaMemcpy, (8, 1536, T)):
/// logcumsumexp 64 x 4 at 16 blocks 51.9% at T = 256 (the warps 43.4), 128 x 8 at 8 blocks 80.4 / 92.0 /
/// 94.3 / 94.8% at T = 1024 / 4096 / 16384 / 65536 (the warps 72.4 / 89.9 / 90.9 / 91.8); the log-space
/// recurrence 62.5% at 256 (50.4), 90.0 / 95.8 / 96.6% at 1024 / 4096 / 65536 (79.4 / 90.2 / 92.0).
template <class Base>
using costly_combine_streams =
    streamed_ladder<Base, stream_rung<256, stream<64, 4, 16>>, stream_rung<1024, stream<128, 8, 8>>>;
}  // namespace sm90_tuning

/// The sm90 default by the state's size (its family), which an operator's own default may fall back to.
template <class Op>
struct sm90_by_family {
  static constexpr state_family family = family_of<Op>();
  using type = std::conditional_t<
      family == state_family::scalar, sm90_tuning::scalar_streams,
      std::conditional_t<
          family == state_family::pair, narrow_inputs<sm90_tuning::pair_streams, sm90_tuning::narrow_streams>,
          std::conditional_t<
              family == state_family::wide, sm90_tuning::wide_warps,
              std::conditional_t<(sizeof(state_t<Op>) <= 128), cuda_policy<64, 2>,
                                 std::conditional_t<matrix_form<Op>::available,
                                                    cuda_policy<128, 1, combine_variant::warp_product, 1,
                                                                (sizeof(state_t<Op>) <= 256    ? 6
                                                                 : sizeof(state_t<Op>) <= 1024 ? 5
                                                                                               : 3)>,
                                                    cuda_policy<128, 1, combine_variant::sequential>>>>>>;
};
template <class Op>
struct default_policy<Op, arch::sm90> : sm90_by_family<Op> {};

template <class Op, class Arch>
using default_policy_t = typename default_policy<Op, Arch>::type;

/// Marks "use default_policy" in the explicit-policy slot of the entry points.
struct use_default_policy {};

}  // namespace parascan
