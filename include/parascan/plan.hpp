// Dispatch as a plan: what the CUDA engine runs for a batch, as pure functions of the policy, the batch's
// shape and the device (no CUDA here, so the host tests check every decision). The CUDA backend reads the
// device once (cuda/device.cuh), makes the plan, prints it when the environment variable PARASCAN_LOG is
// set to 1, and launches what it says.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "policy.hpp"

namespace parascan {

/// What dispatch knows of the batch.
struct batch_shape {
  index_t count = 0;                // sequences
  index_t max_length = 0;           // longest sequence
  bool adjacent_sequences = false;  // sequences s, s+1 one element apart and time strided: (B, T, D)
  index_t total_length = -1;        // steps of all sequences together (-1: count * max_length, uniform)

  constexpr index_t total() const { return total_length >= 0 ? total_length : count * max_length; }
  /// Whether at least half the count x longest steps are real (splitting every sequence as the longest
  /// one pads at most as many as there are).
  constexpr bool similar_lengths() const { return 2 * total() >= count * max_length; }
};

/// Which threads scan one sequence (or segment) together:
/// - block: a whole block, warp scans then warp totals through shared memory;
/// - warp: a warp (several sequences per block), no block barrier;
/// - thread: one thread, sequentially (large states);
/// - channel: a warp on 32 adjacent sequences, lane = sequence, each lane sequentially in time ((B, T, D));
/// - warp_product / block_product: a warp / a block, sequentially in time, each matrix product spread over
///   its threads (operators with a matrix_form, matrix_form.hpp).
enum class group_kind { block, warp, thread, channel, warp_product, block_product };

constexpr const char* name_of(group_kind g) {
  switch (g) {
    case group_kind::block: return "block";
    case group_kind::warp: return "warp";
    case group_kind::thread: return "thread";
    case group_kind::channel: return "channel";
    case group_kind::warp_product: return "warp_product";
    case group_kind::block_product: return "block_product";
  }
  return "?";
}

/// A compile-time cuda_policy (and the operator's state size) as values.
struct policy_values {
  int threads = 128, items = 4, stages = 3;
  combine_variant combine = combine_variant::automatic;
  int state_bytes = 8;

  template <class Policy, class Op>
  static constexpr policy_values of() {
    return {Policy::threads, Policy::items, Policy::stages, Policy::combine, int(sizeof(state_t<Op>))};
  }
};

/// Adjacent sequences (channels last; B x D of them for (B, T, D)) from which lanes across them scan: a
/// warp or block on one sequence reads one element of each row (time strided: 64 bytes apart for 16 fp32
/// channels), where lanes across 8 or more, even element by element (channel.cuh), read the rows' bytes
/// between them. H200, bf16 / fp32 recurrence / fp32 logcumsumexp, % of copy, warps -> lanes: (1, T, 16)
/// 2.3 / 4.1 / 2.6 -> 7.3 / 40.0 / 29.3, (1, T, 8) 3.2 / 4.6 / 3.4 -> 5.7 / 20.4 / 14.8, (2, T, 8) 3.8 / 4.6
/// / 3.4 -> 10.0 / 39.0 / 27.7; below 8, (1, T, 4) 5.0 / 7.4 / 5.3 -> 4.1 / 10.3 / 7.6 and (1, T, 2) 7.8 /
/// 12.9 / 9.0 -> 2.4 / 4.9 / 3.8 (bench/results/h200-thin-steps-2026-12-01.log, "nar": lanes from any count).
/// Batches of 8 sequences or more whose lanes are mostly of other sequences ((2, T, 4), (4, T, 2)) are
/// not measured.
constexpr index_t channel_group_from = 8;

/// The group that scans: sequential threads for large states, lanes across sequences when adjacent
/// sequences are adjacent in memory (at least channel_group_from, and the state is small), a warp per
/// sequence when the policy says so (or, with `automatic`, for sequences of at most two warp tiles), else a
/// block.
constexpr group_kind choose_group(const policy_values& p, const batch_shape& shape) {
  constexpr index_t warp_threads = 32;
  if (p.combine == combine_variant::sequential) return group_kind::thread;
  if (p.combine == combine_variant::warp_product) return group_kind::warp_product;
  if (p.combine == combine_variant::block_product) return group_kind::block_product;
  if (shape.adjacent_sequences && shape.count >= channel_group_from && p.state_bytes <= 32) return group_kind::channel;
  if (p.combine == combine_variant::warp) return group_kind::warp;
  if (p.combine == combine_variant::automatic && shape.max_length <= 2 * warp_threads * p.items)
    return group_kind::warp;
  return group_kind::block;
}

/// Threads of a group, and groups of a block, for each group kind under a policy.
struct group_geometry {
  int threads, groups_per_block, sequences_per_group;
};
constexpr group_geometry geometry_of(group_kind g, const policy_values& p) {
  switch (g) {
    case group_kind::block: return {p.threads, 1, 1};
    case group_kind::warp: return {32, p.threads / 32, 1};
    case group_kind::thread: return {1, p.threads, 1};
    case group_kind::channel: return {1, 1, 32};  // one-warp blocks, whatever the policy's block size
    case group_kind::warp_product: return {32, p.threads / 32, 1};
    case group_kind::block_product: return {p.threads, 1, 1};
  }
  return {p.threads, 1, 1};
}

/// What runs.
struct scan_plan {
  group_kind group = group_kind::block;
  group_geometry geometry{1, 1, 1};
  index_t tile = 0;      // scan positions a group takes per step
  index_t resident = 0;  // groups the device runs at once
  index_t groups = 0;    // independent groups of sequences
  index_t splits = 1;    // segments per sequence: > 1 runs reduce-then-scan (fold, carry, rescan)
  index_t segment = 0;   // scan positions per segment when splits > 1
  bool ragged = false;   // splits > 1: each group only the segments its longest sequence needs

  std::string describe() const {
    char text[256];
    std::snprintf(text, sizeof text,
                  "group=%s threads=%d groups/block=%d sequences/group=%d tile=%lld resident=%lld groups=%lld "
                  "splits=%lld segment=%lld%s",
                  name_of(group), geometry.threads, geometry.groups_per_block, geometry.sequences_per_group,
                  static_cast<long long>(tile), static_cast<long long>(resident), static_cast<long long>(groups),
                  static_cast<long long>(splits), static_cast<long long>(segment), ragged ? " ragged" : "");
    return text;
  }
};

/// Steps of a matrix product group's tile: its segments are whole tiles.
constexpr index_t product_tile = 8;

/// The balanced share of a batch's steps over a plan's resident groups, at least four tiles: the steps its
/// groups walk (a group's lanes walk together: the steps over the sequences a group holds, fewer than
/// sequences_per_group where the batch has fewer) over the resident groups.
constexpr index_t balanced_share(const scan_plan& plan, const batch_shape& shape) {
  const index_t lanes = std::max<index_t>(1, std::min<index_t>(shape.count, plan.geometry.sequences_per_group));
  const index_t group_steps = (shape.total() + lanes - 1) / lanes, resident = std::max<index_t>(plan.resident, 1);
  return std::max((group_steps + resident - 1) / resident, 4 * plan.tile);
}
/// A ragged split's segments: a quarter of the balanced share, at least four tiles, whole tiles (the long
/// sequences then spread over four times the resident groups).
constexpr index_t ragged_segment_of(const scan_plan& plan, const batch_shape& shape) {
  const index_t quarter = std::max(balanced_share(plan, shape) / 4, 4 * plan.tile);
  return (quarter + plan.tile - 1) / plan.tile * plan.tile;
}

/// The plan for a batch, given the chosen group and how many blocks of its kernel one multiprocessor
/// holds. Sequences are split into segments when there are fewer independent groups than the device runs
/// at once and they are long (more than four tiles); segments are whole tiles, at least four long.
/// Sequential threads need more segments in flight than resident threads to hide their latency. A
/// channel group keeps several stages of its 32 sequences in flight (12 KiB for fp32 pairs), so two a
/// multiprocessor fill the memory pipeline: splitting (which reads the inputs twice) waits until there are
/// fewer than that; its tile is the 16 steps of a stage of fp32 pairs. A product group's tile is 8 steps
/// (8 matrix products: a single chain splits into many short segments, whose totals are scanned again).
/// A skewed batch (packed, its longest sequence alone more than four times the balanced share of the
/// steps, i.e. all of them over the resident groups) is split too, ragged: each group into segments of a
/// quarter of that share (at least four tiles), as many as its longest sequence needs, so the long
/// sequences spread over four times the resident groups (one warp per long segment moves too few bytes to
/// make up for the short ones). Channel groups too few to fill the device split ragged too where their
/// lengths are uneven or they are fewer than half the multiprocessors (see below).
inline scan_plan plan_scan(const policy_values& p, group_kind group, const batch_shape& shape, int multiprocessors,
                           int blocks_per_multiprocessor) {
  const auto ceil_div = [](index_t a, index_t b) { return (a + b - 1) / b; };
  scan_plan plan;
  plan.group = group;
  plan.geometry = geometry_of(group, p);
  const bool sequential = group == group_kind::thread;
  const bool channel = group == group_kind::channel;
  const bool product = group == group_kind::warp_product || group == group_kind::block_product;
  plan.tile = sequential ? 64 : channel ? 16 : product ? product_tile : index_t(plan.geometry.threads) * p.items;
  plan.resident = channel ? index_t(std::max(multiprocessors, 1)) * 2
                          : index_t(std::max(multiprocessors, 1)) * std::max(blocks_per_multiprocessor, 1) *
                                plan.geometry.groups_per_block * (sequential ? 2 : 1);
  plan.groups = ceil_div(std::max<index_t>(shape.count, 1), plan.geometry.sequences_per_group);
  const index_t len = shape.max_length;
  if (len <= 4 * plan.tile) return plan;
  index_t segment = 0;
  const index_t share = balanced_share(plan, shape), ragged_segment = ragged_segment_of(plan, shape);
  if (plan.groups < plan.resident) {
    segment = ceil_div(ceil_div(len, ceil_div(plan.resident, plan.groups)), plan.tile) * plan.tile;
    // Channel groups split ragged too, for the skewed batch's block tiles (runs_channel_block_tiles), where
    // - their lengths are uneven (fewer than half the count x longest steps real): each group then takes
    //   only the segments its longest sequence needs. Split evenly, the whole groups of 8 warps took them
    //   (runs_channel_slices), each long group's block alone: H200, fp32 recurrence, D = 64, 4 of 2^18 rows
    //   among 40 of 1..64 8.1 -> 80.1% of copy, one of 2^20 among 40 2.0 -> 74.5%;
    // - or they are fewer than half the multiprocessors (whole groups of 8 warps would leave the device
    //   short of four warps a multiprocessor), where the one-warp tiles (runs_channel_tiles) read less:
    //   H200, (B, T, D) bf16 / fp32 recurrence / fp32 logcumsumexp, % of copy: (4, 2^18, 64) 48 / 61 / 44 ->
    //   63 / 82 / 61, (1, 65536, 1536) 62 / 74 / 42 -> 71 / 90 / 64, (8, 2^17, 256) 60 / 73 / 43 -> 70 / 89
    //   / 66, (1, 2^20, 64) 26 / 23 / 20 -> 62 / 76 / 65.
    // (bench/results/h200-uneven-channel-plans-2026-12-01.log.)
    // Their segments (reduce-then-scan: reductions, and prefix scans the block tiles decline) are the
    // ragged ones, so that the long sequences spread over the device rather than a few warps each.
    if (channel && (!shape.similar_lengths() || 2 * plan.groups < index_t(multiprocessors))) {
      plan.ragged = true;
      segment = ragged_segment;
    }
  } else {
    if (len <= 4 * share) return plan;
    segment = ragged_segment;
    plan.ragged = true;
  }
  const index_t splits = ceil_div(len, segment);
  if (splits > 1) plan.splits = splits, plan.segment = segment;
  return plan;
}

/// Whether a matrix scan whose policy offers blocks of `block_warps` warps a product (warp_product
/// policies of more than one warp) runs a block a chain rather than a warp a segment: where a warp a
/// segment would leave most of the device idle, either because the chains are fewer than a 64th of the
/// `resident_warps` (a few long chains) or because they are short enough to stay whole (at most four
/// tiles of `tile` steps) and a block each takes at most half the device. The latter is the scan of the
/// segment totals of a split batch: 64 chains of 16 totals at 32 x 32 took 29 us a warp a chain (ncu,
/// H200), the latency of 16 products in a row, which a block's threads shorten (the whole prefix over
/// (64, 1024) chains 0.347-0.374 -> 0.321-0.335 ms, same process). With more chains (1024 of 5 totals at
/// 8 x 8: 0.287 -> 0.289 ms) a warp each already keeps enough of the device busy.
constexpr bool runs_product_blocks(const batch_shape& shape, index_t resident_warps, int block_warps, index_t tile) {
  if (block_warps <= 1) return false;
  if (64 * shape.count < resident_warps) return true;
  return shape.max_length <= 4 * tile && 2 * shape.count * block_warps <= resident_warps;
}

/// Walks in time (cuda/affine.cuh, cuda/chain_walk.cuh) need enough warps a multiprocessor, counted in
/// quarters: each warp walks its sequences to their end alone, so few warps leave the device waiting. Two
/// warps a multiprocessor by default; 8 x 8 chain prefixes under warp_product from 1.75, where the walk
/// overtakes the matrix strategy's segments (H200, (B, 1024) chains: B = 1024, 1.9 warps, 54% of copy
/// walked against 45%; B = 768, 1.45 warps, 42% walked; B = 512 29% against 46%).
constexpr int walk_quarter_warps = 8;
constexpr int walk_quarter_warps_8x8_prefix = 7;

/// Whether a walk in time takes a batch of `shape` that fills `warps` warps: at least `quarter_warps` / 4
/// of them a multiprocessor, and sequences of fewer than 2^31 steps (the walks count steps in 32 bits).
constexpr bool runs_walk(const batch_shape& shape, index_t warps, int multiprocessors,
                         int quarter_warps = walk_quarter_warps) {
  return 4 * warps >= index_t(quarter_warps) * multiprocessors &&
         shape.max_length <= std::numeric_limits<int>::max();
}

/// Whether a prefix scan of `shape` planned as `plan` runs the single-pass look-back (cuda/lookback.cuh)
/// on tiles of `lookback_tile` steps rather than reduce-then-scan: it splits its sequences (few long
/// ones), not ragged; its groups hold consecutive steps of one sequence (warp or block groups); its state
/// shuffles and is published in 4-byte words (at most 16 bytes, a multiple of 4); its sequences have at
/// least four look-back tiles (shorter ones leave a block's look-back nothing to amortize it over); and
/// they are of similar lengths (at least half the batch's count x longest steps are real: every sequence
/// gets the longest one's tiles).
constexpr bool runs_single_pass(const scan_plan& plan, int state_bytes, const batch_shape& shape,
                                index_t lookback_tile) {
  const bool contiguous = plan.group == group_kind::warp || plan.group == group_kind::block;
  return plan.splits > 1 && !plan.ragged && contiguous && state_bytes <= 16 && state_bytes % 4 == 0 &&
         shape.max_length >= 4 * lookback_tile && shape.similar_lengths();
}

/// Tiles of `tile` steps that a single pass (look-back or look-ahead) gives a sequence of at most `longest`
/// steps: its tiles lie on the first input's aligned chunk grid, which starts up to a chunk (`chunk`
/// steps) before the sequence; at least one.
constexpr index_t single_pass_tile_count(index_t longest, index_t chunk, index_t tile) {
  return std::max<index_t>(1, (longest + chunk - 1 + tile - 1) / tile);
}

/// Whether a prefix scan that runs_single_pass takes the look-ahead (cuda/lookahead.cuh: persistent
/// blocks, a cursor a block over published aggregates) on tiles of `tile` steps rather than the
/// block-a-tile look-back: where the batch has at least `per_multiprocessor` tiles for each of the
/// device's multiprocessors (a block each), whose pipeline of stages and round trips then pays.
constexpr bool runs_look_ahead(const scan_plan& plan, int state_bytes, const batch_shape& shape, index_t tile,
                               int multiprocessors, index_t per_multiprocessor = 64) {
  return runs_single_pass(plan, state_bytes, shape, tile) &&
         shape.count * ((shape.max_length + tile - 1) / tile) >= per_multiprocessor * index_t(multiprocessors);
}

/// Whether a prefix scan planned for channel groups runs channel_lookback.cuh's single pass over tiles of
/// `tile` steps rather than reduce-then-scan: where the plan splits its sequences for lack of groups (not a
/// ragged split: those run the block tiles) into more than one tile, and their lengths are similar (at
/// least half the batch's count x longest steps are real: every group gets the longest sequence's tiles).
constexpr bool runs_channel_tiles(const scan_plan& plan, const batch_shape& shape, index_t tile) {
  return plan.group == group_kind::channel && plan.splits > 1 && !plan.ragged && shape.max_length > tile &&
         shape.similar_lengths();
}

/// Whether a prefix scan planned for channel groups runs channel_block_lookback.cuh's single pass (block
/// tiles of several warps with a look-back) rather than reduce-then-scan over ragged segments: where the
/// plan is a ragged split, a skewed batch's (a few long sequences among many short ones; H200, 4 of 2^18
/// rows among 4000 of 1..64, D = 64: see that file) or one of too few groups, or of uneven lengths, to fill
/// the device (plan_scan).
constexpr bool runs_channel_block_tiles(const scan_plan& plan) {
  return plan.group == group_kind::channel && plan.splits > 1 && plan.ragged;
}

/// A tile of a long group (more than one tile) of a skewed channel batch's single pass.
struct channel_block_tile {
  int long_group;  // which of channel_block_tables::groups
  int tile;        // which of that group's tiles
};

/// The blocks of a skewed channel batch's single pass (cuda/channel_block_lookback.cuh). Only the long
/// groups (of 32 sequences; more than one tile of `tile_rows` steps) are listed: `groups[i]` has the tiles
/// its longest sequence needs, with the look-back slots first[i] .. first[i + 1] - 1. The other groups run
/// whole, a warp each, `warps` consecutive groups to a block (`short_blocks` blocks over every group; a
/// warp whose group has a longer sequence than a tile leaves at once): nothing is listed for them, so a
/// batch of 8000 short groups among 8 long ones costs the host one pass over its offsets, not a pass and
/// a table entry a group (which took most of a call's host time: 45-77 us of 94-142, H200 machine). The
/// launch order: round by round, tile j of every long group that has one before any tile j + 1 (the
/// resident tiles spread over the long groups), groups with more tiles first within a round, then the
/// short blocks.
struct channel_block_tables {
  std::vector<int> groups;
  std::vector<index_t> first;
  std::vector<channel_block_tile> order;
  index_t short_blocks = 0;

  /// `long_groups(threshold, visit)` calls visit(g, longest) for every group whose longest sequence has
  /// more than `threshold` steps, in increasing g (layout.hpp's groups_longer_than).
  template <class LongGroups>
  static channel_block_tables of(index_t group_count, index_t tile_rows, int warps, const LongGroups& long_groups) {
    channel_block_tables t;
    t.build(group_count, tile_rows, warps, long_groups);
    return t;
  }
  /// The same into this object's vectors, whose memory a caller keeping the object reuses from call to call.
  template <class LongGroups>
  void build(index_t group_count, index_t tile_rows, int warps, const LongGroups& long_groups) {
    groups.clear();
    first.assign(1, 0);
    order.clear();
    short_blocks = (group_count + warps - 1) / warps;
    long_groups(tile_rows, [&](index_t g, index_t longest) {
      groups.push_back(int(g));
      first.push_back(first.back() + (longest + tile_rows - 1) / tile_rows);
    });
    // No long group: only the short blocks; 2^31 tiles or more: the caller declines.
    if (groups.empty() || first.back() >= std::numeric_limits<int>::max()) return;
    // Long groups by tile count, most first (stable: in group order among equals).
    by_tiles.resize(groups.size());
    for (std::size_t i = 0; i < groups.size(); ++i) by_tiles[i] = int(i);
    const auto tiles = [&](int i) { return first[std::size_t(i) + 1] - first[std::size_t(i)]; };
    std::stable_sort(by_tiles.begin(), by_tiles.end(), [&](int x, int y) { return tiles(x) > tiles(y); });
    order.resize(std::size_t(first.back()));
    channel_block_tile* next = order.data();
    for (index_t j = 0; j < tiles(by_tiles[0]); ++j)
      for (std::size_t k = 0; k < by_tiles.size() && tiles(by_tiles[k]) > j; ++k) *next++ = {by_tiles[k], int(j)};
  }
  /// Blocks of the launch: every long tile and the short blocks.
  index_t blocks() const { return index_t(order.size()) + short_blocks; }
  std::size_t groups_offset() const { return (first.size() * sizeof(index_t) + 15) / 16 * 16; }
  std::size_t order_offset() const { return groups_offset() + (groups.size() * sizeof(int) + 15) / 16 * 16; }
  /// The three tables in one block of bytes (first, groups, order; each 16-byte aligned), for one copy to
  /// the device.
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> b;
    bytes_into(b);
    return b;
  }
  void bytes_into(std::vector<unsigned char>& b) const {
    b.assign(order_offset() + order.size() * sizeof(channel_block_tile), 0);
    std::memcpy(b.data(), first.data(), first.size() * sizeof(index_t));
    std::memcpy(b.data() + groups_offset(), groups.data(), groups.size() * sizeof(int));
    std::memcpy(b.data() + order_offset(), order.data(), order.size() * sizeof(channel_block_tile));
  }

 private:
  std::vector<int> by_tiles;
};

/// Whether a batch planned for channel groups runs them whole, a block of `warps` warps each, the warps
/// splitting every tile of `tile` steps (cuda/channel_slices.cuh), rather than a warp each (or split in
/// time): where its longest sequence spans at least four tiles and either
/// - the plan keeps sequences whole and their lengths differ (the longest at least 3/2 of the mean, e.g.
///   lengths drawn from 1..8192: a batch of one-warp groups then ends on its longest groups, walked alone);
/// - or the plan splits them for lack of groups (not a ragged split) but the groups' warps
///   are at least four a multiprocessor (H200, fp32 recurrence: 128 groups of 8192 rows 85% of copy against
///   65% for one-warp tiles with a look-back, (2, 65536, 1536) btd 84 against 71%; 64 groups 56 against 57%,
///   (1, 65536, 1536) 48 against 68%).
constexpr bool runs_channel_slices(const scan_plan& plan, const batch_shape& shape, index_t tile, int multiprocessors,
                                   int warps) {
  if (plan.group != group_kind::channel || plan.ragged || shape.max_length < 4 * tile) return false;
  if (plan.splits > 1) return plan.groups * warps >= 4 * index_t(multiprocessors);
  return 2 * shape.count * shape.max_length >= 3 * shape.total();
}

/// Whether a prefix scan that runs_channel_slices would give to whole groups of warps, its groups split for
/// lack of them, runs the block tiles with a look-back instead (ragged_channel_split): where a step of a
/// sequence carries fewer than 8 bytes of inputs. The whole groups give each group one block, which walks
/// its tiles one after another at a rate of rows bound by instruction latency (fold, then rescan from the
/// warps' totals), so rows of fewer bytes move fewer bytes a second; the block tiles run a group's tiles
/// on many blocks at once, a look-back between them. H200, 96 groups ((2, 65536, 1536) btd), % of copy,
/// whole groups against block tiles: fp32 linear recurrence (8 bytes a step) 95.7 against 90.9, bf16 (4
/// bytes) 44.8 against 74.4, fp32 logcumsumexp (4 bytes) 48.0 against 73.4; (4, 65536, 768) 95.5 / 44.7 /
/// 48.0 against 87.9 / 73.1 / 70.0; 128 groups ((1, 8192, 4096)) 89.2 / 53.1 / 60.2 against 81.6 / 59.2 /
/// 59.9 (bench/results/h200-uneven-channel-plans-2026-12-01.log; as dispatched, bf16 / logcumsumexp 44.8
/// / 48.0 -> 73.3 / 65.0 at (2, 65536, 1536), 53.1 / 60.1 -> 59.5 / 58.0 at (1, 8192, 4096):
/// bench/results/h200-thin-steps-2026-12-01.log).
constexpr bool thin_steps_take_block_tiles(const scan_plan& plan, int step_bytes) {
  return plan.group == group_kind::channel && plan.splits > 1 && !plan.ragged && step_bytes < 8;
}
/// A channel plan split evenly for lack of groups (thin_steps_take_block_tiles holds), split ragged instead
/// (runs_channel_block_tiles).
constexpr scan_plan ragged_channel_split(scan_plan plan, const batch_shape& shape) {
  plan.ragged = true;
  plan.segment = ragged_segment_of(plan, shape);
  plan.splits = (shape.max_length + plan.segment - 1) / plan.segment;
  return plan;
}

/// Whether whole sequences whose longest has `length` steps run under a long_sequences policy's long
/// tiles (`long_tile` steps a warp, against `base_tile`): from one tile short of `long_from` steps on,
/// unless rounding up to long tiles pads more than a sixteenth of the length beyond what the base tiles
/// pad (a ragged last tile costs more than longer tiles gain). Measured on an H100 (fp32 linear
/// recurrence over (8, 1536, T), 128- against 256-step tiles, % of cudaMemcpy, 2026-11-22): T = 640 /
/// 896 / 1152 (a half tile over) 80 / 85 / 86 against 68 / 84 / 86; T = 768 / 1000 / 1280 / 1536 / 2200
/// 83 / 81 / 87 / 89 / 89 against 84 / 83.6 / 89 / 90.5 / 90.
constexpr bool runs_long_tiles(index_t length, index_t long_from, index_t base_tile, index_t long_tile) {
  if (length < long_from - long_tile) return false;
  const auto padded = [&](index_t tile) { return (length + tile - 1) / tile * tile; };
  return 16 * (padded(long_tile) - padded(base_tile)) <= length;
}

/// Whether `count` whole sequences whose longest has `length` steps run a block each (streamed_sequences,
/// `blocks` resident a multiprocessor): from `stream_from` steps, where the last tile of `tile` steps pads
/// at most an eighth of the length (1024 x 4 tiles, fp32 recurrence, H100: T = 50000, 6.5% padded, read
/// 97.4% of copy against 95.5% for the warps; T = 5000 would scan 8192 steps: 71.6%), and with at
/// least four waves of blocks (the last wave's idle blocks then cost at most a fifth; fewer long
/// sequences are split over the device instead).
constexpr bool runs_stream(index_t count, index_t length, int multiprocessors, int blocks, index_t stream_from,
                           index_t tile) {
  return count >= 4 * index_t(multiprocessors) * blocks && length >= stream_from &&
         8 * ((length + tile - 1) / tile * tile - length) <= length;
}

/// Whether PARASCAN_LOG=1 asks for every plan on stderr (read once).
inline bool log_plans() {
  static const bool on = [] {
    const char* v = std::getenv("PARASCAN_LOG");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

/// True unless the environment variable `name` is "0": the switches below, each read once, that turn a
/// strategy off to compare it with the one it replaced.
inline bool unless_switched_off(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

/// Whether few long sequences may run the look-ahead (PARASCAN_LOOK_AHEAD=0: the block-a-tile look-back
/// instead).
inline bool look_ahead_enabled() {
  static const bool on = unless_switched_off("PARASCAN_LOOK_AHEAD");
  return on;
}

/// Whether few long sequences may run the single-pass look-back (PARASCAN_SINGLE_PASS=0: reduce-then-scan
/// instead).
inline bool single_pass_enabled() {
  static const bool on = unless_switched_off("PARASCAN_SINGLE_PASS");
  return on;
}

/// Whether TF32 runtime-size chains may run the panels (cuda/tf32_panel_chain.cuh; PARASCAN_TF32_PANELS=0:
/// the cuBLAS tree alone).
inline bool panel_chains_enabled() {
  static const bool on = unless_switched_off("PARASCAN_TF32_PANELS");
  return on;
}

}  // namespace parascan
