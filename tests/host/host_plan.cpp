// The CUDA engine's dispatch plan (include/parascan/plan.hpp), tested on the host: which group scans a
// batch, the tile and resident groups, and when and how sequences are split into segments.
#include <doctest/doctest.h>

#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/plan.hpp>

#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using parascan::batch_shape;
using parascan::combine_variant;
using parascan::group_kind;
using parascan::index_t;
using parascan::policy_values;

constexpr policy_values pair_warp{128, 4, 4, combine_variant::warp, 8};
constexpr policy_values pair_auto{128, 4, 3, combine_variant::automatic, 8};
constexpr policy_values matrix_seq{128, 1, 3, combine_variant::sequential, 256};

constexpr int h200_sms = 132;

}  // namespace

TEST_CASE("plan: the group follows the policy and the layout") {
  const batch_shape bdt{8 * 1536, 4096, false}, btd{8 * 1536, 4096, true}, few_btd{4, 4096, true},
                    narrow_btd{8, 4096, true};
  CHECK(choose_group(pair_warp, bdt) == group_kind::warp);
  CHECK(choose_group(pair_warp, btd) == group_kind::channel);      // lanes across adjacent sequences
  CHECK(choose_group(pair_warp, few_btd) == group_kind::warp);     // fewer than 8: no channel group
  CHECK(choose_group(pair_warp, narrow_btd) == group_kind::channel);  // 8 lanes share each row
  CHECK(choose_group(matrix_seq, btd) == group_kind::thread);      // sequential policies, any layout
  CHECK(choose_group(policy_values{128, 4, 3, combine_variant::warp, 64}, btd) == group_kind::warp);  // > 32 bytes
  // automatic: a warp for sequences of at most two warp tiles (2 * 32 * items), else a block
  CHECK(choose_group(pair_auto, batch_shape{100, 256, false}) == group_kind::warp);
  CHECK(choose_group(pair_auto, batch_shape{100, 257, false}) == group_kind::block);
  CHECK(choose_group(policy_values{128, 4, 3, combine_variant::block, 8}, batch_shape{100, 10, false}) ==
        group_kind::block);
}

TEST_CASE("plan: geometry, tile and resident groups of each group kind") {
  const batch_shape many{8 * 1536, 4096, false};
  const auto warp = plan_scan(pair_warp, group_kind::warp, many, h200_sms, 8);
  CHECK(warp.geometry.threads == 32);
  CHECK(warp.geometry.groups_per_block == 4);
  CHECK(warp.tile == 128);
  CHECK(warp.resident == 132 * 8 * 4);
  CHECK(warp.groups == 8 * 1536);
  CHECK(warp.splits == 1);  // more sequences than the device runs at once: no split

  const auto block = plan_scan(pair_auto, group_kind::block, many, h200_sms, 8);
  CHECK(block.tile == 512);
  CHECK(block.resident == 132 * 8);

  const auto channel = plan_scan(pair_warp, group_kind::channel, batch_shape{8 * 1536, 4096, true}, h200_sms, 8);
  CHECK(channel.geometry.sequences_per_group == 32);
  CHECK(channel.groups == 8 * 1536 / 32);
  CHECK(channel.geometry.threads == 1);  // a lane per sequence
  CHECK(channel.geometry.groups_per_block == 1);
  CHECK(channel.tile == 16);
  CHECK(channel.resident == 2 * 132);  // deep pipelines: two warps a multiprocessor
  CHECK(channel.splits == 1);          // 384 groups: no split (which would read the inputs twice)
  const auto few = plan_scan(pair_warp, group_kind::channel, batch_shape{64, index_t(1) << 20, true}, h200_sms, 8);
  CHECK(few.groups == 2);
  CHECK(few.ragged);  // fewer groups than half the multiprocessors: ragged segments, a quarter of the
  CHECK(few.segment == 2000);  // balanced share (2^21 group steps / 264 = 7944), in 16-step tiles
  CHECK(few.splits == 525);

  const auto thread = plan_scan(matrix_seq, group_kind::thread, batch_shape{10, 100, false}, h200_sms, 2);
  CHECK(thread.tile == 64);
  CHECK(thread.resident == 132 * 2 * 128 * 2);  // sequential threads keep twice as many in flight
}

TEST_CASE("plan: few long sequences are split into whole tiles, at least four, enough to fill the device") {
  const auto one = plan_scan(pair_warp, group_kind::warp, batch_shape{1, index_t(1) << 28, false}, h200_sms, 8);
  REQUIRE(one.splits > 1);
  CHECK(one.segment % one.tile == 0);
  CHECK(one.segment >= 4 * one.tile);
  CHECK(one.splits * one.segment >= (index_t(1) << 28));        // covers the sequence
  CHECK((one.splits - 1) * one.segment < (index_t(1) << 28));   // no empty segment
  CHECK(one.splits * one.groups * 100 >= one.resident * 99);     // fills the device once (whole tiles: ~)
  CHECK(one.splits <= one.resident);

  const auto sixteen = plan_scan(pair_warp, group_kind::warp, batch_shape{16, index_t(1) << 24, false}, h200_sms, 8);
  CHECK(sixteen.splits > 1);
  CHECK(sixteen.splits * 16 * 100 >= sixteen.resident * 99);

  // Short sequences stay whole even when few (at most four tiles), and so do batches that fill the device.
  CHECK(plan_scan(pair_warp, group_kind::warp, batch_shape{1, 512, false}, h200_sms, 8).splits == 1);
  CHECK(plan_scan(pair_warp, group_kind::warp, batch_shape{1, 513, false}, h200_sms, 8).splits > 1);
  CHECK(plan_scan(pair_warp, group_kind::warp, batch_shape{4224, index_t(1) << 20, false}, h200_sms, 8).splits == 1);
  CHECK(plan_scan(pair_warp, group_kind::warp, batch_shape{0, 0, false}, h200_sms, 8).splits == 1);
}

TEST_CASE("plan: a skewed packed batch splits its long sequences at a quarter of the balanced share") {
  // 4 sequences of 2^18 rows among 4000 of 1..64 rows (~130000 rows), D = 64: 8008 channel groups.
  const index_t rows = 4 * (index_t(1) << 18) + 130000;
  const batch_shape skewed{4004 * 64, index_t(1) << 18, true, rows * 64};
  const auto plan = plan_scan(pair_warp, group_kind::channel, skewed, h200_sms, 8);
  CHECK(plan.groups == 8008);
  REQUIRE(plan.splits > 1);
  CHECK(plan.ragged);  // each group only the segments it needs
  const index_t share = (rows * 2 + plan.resident - 1) / plan.resident;  // group steps over resident groups
  CHECK(plan.segment >= share / 4);                                      // a quarter of it, whole tiles
  CHECK(plan.segment < share / 4 + plan.tile);
  CHECK(plan.splits * plan.segment >= (index_t(1) << 18));
  // A batch whose longest sequence is within four shares of the balanced one stays whole: uniform
  // batches that fill the device, and a realistic packed batch (lengths 1..8192, 2^20 rows, D = 64).
  CHECK(plan_scan(pair_warp, group_kind::channel, batch_shape{512 * 64, 8192, true, (index_t(1) << 20) * 64},
                  h200_sms, 8).splits == 1);
  CHECK(plan_scan(pair_warp, group_kind::warp, batch_shape{20000, 8192, false}, h200_sms, 8).splits == 1);
  // The same skew over warp groups (one sequence each).
  const auto warp = plan_scan(pair_warp, group_kind::warp, batch_shape{8000, index_t(1) << 22, false,
                                                                          (index_t(1) << 22) + 8000 * 32},
                              h200_sms, 8);
  CHECK(warp.splits > 1);
  CHECK(warp.ragged);
  CHECK(warp.segment % warp.tile == 0);
  // Few sequences split evenly (every group the same segments), as before.
  CHECK(!plan_scan(pair_warp, group_kind::warp, batch_shape{1, index_t(1) << 28, false}, h200_sms, 8).ragged);
}

TEST_CASE("plan: split prefix scans of small states run the single-pass look-back on long enough sequences") {
  const index_t tile = 512 * 16;  // the look-back's default tile for fp32 pairs
  const batch_shape one{1, index_t(1) << 28, false}, shortish{1, 4 * tile - 1, false};
  const auto split = plan_scan(pair_warp, group_kind::warp, one, h200_sms, 8);
  REQUIRE(split.splits > 1);
  CHECK(parascan::runs_single_pass(split, 8, one, tile));
  CHECK(parascan::runs_single_pass(split, 16, one, tile));   // 2x2 fp32 matrices, complex64 pairs
  CHECK(!parascan::runs_single_pass(split, 32, one, tile));  // does not shuffle: reduce-then-scan
  CHECK(!parascan::runs_single_pass(split, 6, one, tile));   // not whole 4-byte words
  // Packed batches: every sequence gets the longest one's tiles, so only similar lengths qualify.
  const batch_shape similar{4, 100000, false, 300000}, mixed{300, 1 << 24, false, (1 << 24) + 299 * 100};
  CHECK(parascan::runs_single_pass(split, 8, similar, tile));
  CHECK(!parascan::runs_single_pass(split, 8, mixed, tile));
  CHECK(!parascan::runs_single_pass(split, 8, shortish, tile));  // fewer than four tiles
  const auto whole = plan_scan(pair_warp, group_kind::warp, batch_shape{8 * 1536, 4096, false}, h200_sms, 8);
  CHECK(!parascan::runs_single_pass(whole, 8, one, tile));  // not split: one pass anyway
  auto ragged = split;
  ragged.ragged = true;
  CHECK(!parascan::runs_single_pass(ragged, 8, one, tile));  // skewed packed batches
  auto channels = split;
  channels.group = group_kind::channel;
  CHECK(!parascan::runs_single_pass(channels, 8, one, tile));  // time strided: (B, T, D)
}

TEST_CASE("plan: single passes with many tiles a multiprocessor take the look-ahead, the rest the look-back") {
  const index_t tile = 4 * 32 * 32;  // the look-ahead's default tile for fp32 pairs (lookahead.cuh)
  const batch_shape one{1, index_t(1) << 28, false}, mid{1, index_t(1) << 24, false};
  const auto split = plan_scan(pair_warp, group_kind::warp, one, h200_sms, 8);
  REQUIRE(split.splits > 1);
  CHECK(parascan::runs_look_ahead(split, 8, one, tile, h200_sms));  // 65536 tiles: 496 a multiprocessor
  const auto split_mid = plan_scan(pair_warp, group_kind::warp, mid, h200_sms, 8);
  REQUIRE(split_mid.splits > 1);
  CHECK(!parascan::runs_look_ahead(split_mid, 8, mid, tile, h200_sms));    // 4096 tiles: 31 a multiprocessor
  CHECK(parascan::runs_look_ahead(split_mid, 8, mid, tile, h200_sms, 31));  // a policy's lower threshold
  CHECK(!parascan::runs_look_ahead(split_mid, 8, mid, tile, h200_sms, 32));
  // Three sequences of 2^23: the batch's tiles count (3 x 2048 = 6144 = 46 a multiprocessor).
  const batch_shape three{3, index_t(1) << 23, false};
  const auto split_three = plan_scan(pair_warp, group_kind::warp, three, h200_sms, 8);
  REQUIRE(split_three.splits > 1);
  CHECK(parascan::runs_look_ahead(split_three, 8, three, tile, h200_sms, 46));
  CHECK(!parascan::runs_look_ahead(split_three, 8, three, tile, h200_sms, 47));
  // Only where the look-back would run at all.
  CHECK(!parascan::runs_look_ahead(split, 32, one, tile, h200_sms));  // does not shuffle
  auto ragged = split;
  ragged.ragged = true;
  CHECK(!parascan::runs_look_ahead(ragged, 8, one, tile, h200_sms));
}

TEST_CASE("plan: channel groups split for lack of groups: block tiles when few or uneven, else one-warp tiles") {
  const index_t tile = 64;  // 4 stages of 16 fp32-pair rows
  // Fewer groups than half the multiprocessors split ragged, for channel_block_lookback.cuh's block tiles:
  // (1, 65536, 1536) is 48 groups on 132 multiprocessors.
  const batch_shape few{1536, 65536, true}, many{8 * 1536, 4096, true};
  const auto split = plan_scan(pair_warp, group_kind::channel, few, h200_sms, 8);
  REQUIRE(split.splits > 1);
  CHECK(split.ragged);
  CHECK(!parascan::runs_channel_tiles(split, few, tile));
  CHECK(parascan::runs_channel_block_tiles(split));
  // From half the multiprocessors to the resident groups, of similar lengths, shorter than four tiles of
  // the whole groups of 8 warps (runs_channel_slices): the one-warp tiles, split evenly. (1, 300, 4096)
  // is 128 groups.
  const batch_shape mid{4096, 300, true};
  const auto even = plan_scan(pair_warp, group_kind::channel, mid, h200_sms, 8);
  REQUIRE(even.splits > 1);
  CHECK(!even.ragged);
  CHECK(parascan::runs_channel_tiles(even, mid, tile));
  CHECK(!parascan::runs_channel_block_tiles(even));
  CHECK(!parascan::runs_channel_slices(even, mid, 2 * tile, h200_sms, 8));
  const auto whole = plan_scan(pair_warp, group_kind::channel, many, h200_sms, 8);
  CHECK(!parascan::runs_channel_tiles(whole, many, tile));  // 384 groups fill the device: pipelined walks
  CHECK(!parascan::runs_channel_block_tiles(whole));
  auto warp = even;
  warp.group = group_kind::warp;
  CHECK(!parascan::runs_channel_tiles(warp, mid, tile));  // contiguous time: lookback.cuh's block tiles
  // A skewed packed batch splits ragged: not these tiles (every group would get the longest one's), but
  // the block tiles, each group as many as it needs.
  const batch_shape skewed{8000 * 64, index_t(1) << 18, true, ((index_t(1) << 20) + 8000 * 32) * 64};
  const auto ragged = plan_scan(pair_warp, group_kind::channel, skewed, h200_sms, 8);
  REQUIRE(ragged.splits > 1);
  CHECK(ragged.ragged);
  CHECK(!parascan::runs_channel_tiles(ragged, skewed, tile));
  CHECK(parascan::runs_channel_block_tiles(ragged));
  auto ragged_warp = ragged;
  ragged_warp.group = group_kind::warp;
  CHECK(!parascan::runs_channel_block_tiles(ragged_warp));  // packed_dt: reduce-then-scan over ragged segments
  // Uneven lengths (every group would get the longest one's tiles) split ragged with any number of groups:
  // 4 of 2^18 rows among 40 of 1..64 (D = 64: 88 groups, enough for the whole groups of 8 warps) as the
  // skewed batch above; so do 128 groups of uneven lengths shorter than four of their tiles. Their
  // segments (reductions' reduce-then-scan) are the ragged ones: a quarter of the balanced share.
  const batch_shape few_long{44 * 64, index_t(1) << 18, true, ((index_t(1) << 20) + 40 * 32) * 64};
  const auto few_long_plan = plan_scan(pair_warp, group_kind::channel, few_long, h200_sms, 8);
  REQUIRE(few_long_plan.groups < few_long_plan.resident);
  REQUIRE(2 * few_long_plan.groups >= h200_sms);
  CHECK(parascan::runs_channel_block_tiles(few_long_plan));
  CHECK(!parascan::runs_channel_slices(few_long_plan, few_long, 2 * tile, h200_sms, 8));
  CHECK(few_long_plan.segment == 2000);  // 2099712 group steps / 264 = 7954; a quarter, in 16-step tiles
  CHECK(few_long_plan.splits == 132);
  const batch_shape mid_uneven{4096, 300, true, 4096 * 100};
  CHECK(parascan::runs_channel_block_tiles(plan_scan(pair_warp, group_kind::channel, mid_uneven, h200_sms, 8)));
  // Warp groups (contiguous time) of uneven lengths keep the even split (lookback.cuh's tiles).
  CHECK(!plan_scan(pair_warp, group_kind::warp, few_long, h200_sms, 8).ragged);
  // The shapes of test_lookback's channel cases (2 to 6 groups) take the block tiles, the one-warp tiles'
  // case (128 groups of 2x2 matrices, 32-step tiles) those.
  const policy_values mat2_warp{128, 4, 4, combine_variant::warp, 16};
  for (const batch_shape& shape : {batch_shape{40, 20011, true}, batch_shape{64, 100003, true},
                                   batch_shape{99, 100003, true, 33 * (100003 + 70001)},
                                   batch_shape{2 * 96, 200003, true}})
    CHECK(parascan::runs_channel_block_tiles(plan_scan(mat2_warp, group_kind::channel, shape, h200_sms, 8)));
  const batch_shape mat2_mid{4091, 250, true};  // under four tiles of 8 warps x 8 rows of matrices
  const auto mat2_even = plan_scan(mat2_warp, group_kind::channel, mat2_mid, h200_sms, 8);
  CHECK(parascan::runs_channel_tiles(mat2_even, mat2_mid, 32));
  CHECK(!parascan::runs_channel_slices(mat2_even, mat2_mid, 64, h200_sms, 8));
}

TEST_CASE("plan: a skewed batch's single pass, its tile list (long groups' tiles round by round, others a warp)") {
  // Groups' longest sequences: 600, 10, 0, 257, 256, 1000 steps; tiles of 256 steps, blocks of 4 warps.
  const std::vector<index_t> longest{600, 10, 0, 257, 256, 1000};
  int asked = 0;
  const auto long_groups = [&](index_t threshold, auto&& visit) {  // as layout.hpp's groups_longer_than
    ++asked;
    CHECK(threshold == 256);
    for (std::size_t g = 0; g < longest.size(); ++g)
      if (longest[g] > threshold) visit(index_t(g), longest[g]);
  };
  const auto t = parascan::channel_block_tables::of(index_t(longest.size()), 256, 4, long_groups);
  CHECK(asked == 1);
  CHECK(t.groups == std::vector<int>{0, 3, 5});       // more than one tile: 3, 2 and 4
  CHECK(t.first == std::vector<index_t>{0, 3, 5, 9});  // their look-back slots
  CHECK(t.short_blocks == 2);                          // every group, 4 to a block (the long ones leave)
  CHECK(t.blocks() == 11);
  // Round by round (the launch puts the short blocks after every long tile): tile j of every long group
  // that has one, most tiles first (as indices into groups).
  const std::vector<std::pair<int, int>> expected{{2, 0}, {0, 0}, {1, 0}, {2, 1}, {0, 1},
                                                  {1, 1}, {2, 2}, {0, 2}, {2, 3}};
  REQUIRE(t.order.size() == expected.size());
  for (std::size_t b = 0; b < expected.size(); ++b) {
    INFO("tile " << b);
    CHECK(t.order[b].long_group == expected[b].first);
    CHECK(t.order[b].tile == expected[b].second);
  }
  // One block of bytes for the device: first, groups and order, each 16-byte aligned.
  const std::vector<unsigned char> bytes = t.bytes();
  CHECK(t.groups_offset() == 32);  // 4 slots of 8 bytes
  CHECK(t.order_offset() == 48);   // 3 groups of 4 bytes, rounded up
  CHECK(bytes.size() == 48 + 9 * sizeof(parascan::channel_block_tile));
  parascan::channel_block_tile third{};
  std::memcpy(&third, bytes.data() + t.order_offset() + 2 * sizeof(third), sizeof(third));
  CHECK(third.long_group == 1);
  int last_group = 0;
  std::memcpy(&last_group, bytes.data() + t.groups_offset() + 2 * sizeof(int), sizeof(int));
  CHECK(last_group == 5);
  index_t slots = 0;
  std::memcpy(&slots, bytes.data() + 3 * sizeof(index_t), sizeof(index_t));
  CHECK(slots == 9);
  // Only short groups: their blocks alone, no slot; only long ones: their tiles and the short blocks too.
  const auto none = [](index_t, auto&&) {};
  const auto all_short = parascan::channel_block_tables::of(5, 256, 4, none);
  CHECK(all_short.order.empty());
  CHECK(all_short.first.back() == 0);
  CHECK(all_short.blocks() == 2);
  const auto two_long = [](index_t, auto&& visit) {
    visit(0, 513);
    visit(1, 513);
  };
  const auto all_long = parascan::channel_block_tables::of(2, 256, 4, two_long);
  CHECK(all_long.order.size() == 6);
  CHECK(all_long.blocks() == 7);
  // Tables kept from call to call (as the CUDA backend keeps them) hold only the latest batch's.
  parascan::channel_block_tables kept = all_long;
  std::vector<unsigned char> kept_bytes(1000, 0xff);
  kept.build(index_t(longest.size()), 256, 4, long_groups);
  kept.bytes_into(kept_bytes);
  CHECK(kept.groups == t.groups);
  CHECK(kept.first == t.first);
  CHECK(kept_bytes == bytes);
  kept.build(5, 256, 4, none);
  CHECK(kept.order.empty());
  CHECK(kept.groups.empty());
  CHECK(kept.blocks() == 2);
}

TEST_CASE("plan: channel groups of mixed lengths, or too few for the device, run blocks of warps splitting time") {
  const index_t tile = 8 * 16;  // 8 warps of 16 fp32-pair rows
  const int warps = 8;
  const auto slices = [&](const batch_shape& shape) {
    return parascan::runs_channel_slices(plan_scan(pair_warp, group_kind::channel, shape, h200_sms, 8), shape, tile,
                                         h200_sms, warps);
  };
  // A packed batch of lengths 1..8192 (D = 64: 16384 channels, 2^26 elements): whole groups of mixed lengths.
  CHECK(slices(batch_shape{256 * 64, 8192, true, index_t(1) << 26}));
  // The same elements in equal lengths, and (8, 4096, 1536): one warp a group, pipelined.
  CHECK(!slices(batch_shape{256 * 64, 4096, true, index_t(1) << 26}));
  CHECK(!slices(batch_shape{8 * 1536, 4096, true}));
  // Too few groups: (2, 65536, 1536) (96 groups x 8 warps on 132 multiprocessors) takes the blocks,
  // (1, 65536, 1536) (48 groups) the block tiles with a look-back.
  CHECK(slices(batch_shape{2 * 1536, 65536, true}));
  // Unless a step carries fewer than 8 bytes of inputs (bf16 pairs, logcumsumexp's fp32): dispatch then
  // splits them ragged, for the block tiles. Batches that fill the device, or split ragged, stay.
  const batch_shape two{2 * 1536, 65536, true};
  const auto two_plan = plan_scan(pair_warp, group_kind::channel, two, h200_sms, 8);
  CHECK(!parascan::thin_steps_take_block_tiles(two_plan, 8));
  REQUIRE(parascan::thin_steps_take_block_tiles(two_plan, 4));
  const auto thin = parascan::ragged_channel_split(two_plan, two);
  CHECK(parascan::runs_channel_block_tiles(thin));
  CHECK(!parascan::runs_channel_slices(thin, two, tile, h200_sms, warps));
  CHECK(thin.segment == 5968);  // 96 groups x 65536 steps / 264 resident = 23832; a quarter, in 16-step tiles
  CHECK(thin.splits == 11);
  for (const batch_shape& shape : {batch_shape{8 * 1536, 4096, true}, batch_shape{1536, 65536, true}})
    CHECK(!parascan::thin_steps_take_block_tiles(plan_scan(pair_warp, group_kind::channel, shape, h200_sms, 8), 4));
  // A group of fewer than 32 sequences walks the steps over the sequences it has: (1, 2^22, 16) is one
  // group of 2^22 steps (share 15888 over 264 resident groups; a quarter, in 16-step tiles, 3984).
  const batch_shape narrow{16, index_t(1) << 22, true};
  const auto narrow_plan = plan_scan(pair_warp, group_kind::channel, narrow, h200_sms, 8);
  CHECK(narrow_plan.ragged);
  CHECK(narrow_plan.segment == 3984);
  CHECK(narrow_plan.splits == 1053);
  const batch_shape one{1536, 65536, true};
  CHECK(!slices(one));
  CHECK(parascan::runs_channel_block_tiles(plan_scan(pair_warp, group_kind::channel, one, h200_sms, 8)));
  // A skewed batch splits ragged (block tiles with a look-back); sequences of fewer than four tiles stay
  // one warp's.
  CHECK(!slices(batch_shape{8000 * 64, index_t(1) << 18, true, ((index_t(1) << 20) + 8000 * 32) * 64}));
  CHECK(!slices(batch_shape{256 * 64, 4 * tile - 1, true, 256 * 64 * 100}));
  // Not channel groups: never.
  const batch_shape mixed{256 * 64, 8192, false, index_t(1) << 26};
  const auto warp_plan = plan_scan(pair_warp, group_kind::warp, mixed, h200_sms, 8);
  CHECK(!parascan::runs_channel_slices(warp_plan, mixed, tile, h200_sms, warps));
}

TEST_CASE("plan: matrix products, a warp or a block per segment of 8-step tiles") {
  const policy_values warp_product{128, 1, 3, combine_variant::warp_product, 4096};
  const policy_values block_product{128, 1, 3, combine_variant::block_product, 4096};
  const batch_shape chain{1, 1000, false}, chains{64, 1024, true};
  CHECK(choose_group(warp_product, chains) == group_kind::warp_product);  // whatever the layout
  CHECK(choose_group(block_product, chain) == group_kind::block_product);
  // One chain of 1000 on 132 x 3 blocks of 4 warps: 8-step segments (125 of them), their totals scanned again.
  const auto one = plan_scan(warp_product, group_kind::warp_product, chain, h200_sms, 3);
  CHECK(one.geometry.threads == 32);
  CHECK(one.geometry.groups_per_block == 4);
  CHECK(one.tile == 8);
  CHECK(one.resident == h200_sms * 3 * 4);
  CHECK(one.splits == 125);
  CHECK(one.segment == 8);
  const auto blocks = plan_scan(block_product, group_kind::block_product, chains, h200_sms, 12);
  CHECK(blocks.geometry.threads == 128);
  CHECK(blocks.geometry.groups_per_block == 1);
  CHECK(blocks.resident == h200_sms * 12);
  CHECK(blocks.segment == 48);  // 1024 steps over ceil(1584 / 64) = 25 groups, rounded up to whole tiles
  CHECK(blocks.splits == 22);
  // Short chains are never split: at most four tiles.
  CHECK(plan_scan(warp_product, group_kind::warp_product, batch_shape{1, 32, false}, h200_sms, 3).splits == 1);
}

TEST_CASE("plan: matrix chains run a block each when a warp each would leave the device idle") {
  const index_t resident_warps = h200_sms * 8;  // 32 x 32 fp32: two blocks of 4 warps a multiprocessor
  // A few long chains: a block each, split (one chain of 1000, or 16 chains: fewer than a 64th).
  CHECK(parascan::runs_product_blocks(batch_shape{1, 1000, false}, resident_warps, 4, parascan::product_tile));
  CHECK(parascan::runs_product_blocks(batch_shape{16, 1024, true}, resident_warps, 4, parascan::product_tile));
  // (64, 1024): warps, 16 segments a chain; then the scan of its 64 chains of 16 totals: a block each.
  CHECK(!parascan::runs_product_blocks(batch_shape{64, 1024, true}, resident_warps, 4, parascan::product_tile));
  CHECK(parascan::runs_product_blocks(batch_shape{64, 16, true}, resident_warps, 4, parascan::product_tile));
  CHECK(parascan::runs_product_blocks(batch_shape{64, 32, true}, resident_warps, 4, parascan::product_tile));
  CHECK(!parascan::runs_product_blocks(batch_shape{64, 33, true}, resident_warps, 4, parascan::product_tile));
  // Blocks that would take more than half the device (1024 chains of 5 totals at 8 x 8): warps.
  CHECK(!parascan::runs_product_blocks(batch_shape{1024, 5, true}, h200_sms * 36, 4, parascan::product_tile));
  CHECK(!parascan::runs_product_blocks(batch_shape{133, 16, true}, resident_warps, 4, parascan::product_tile));
  CHECK(parascan::runs_product_blocks(batch_shape{132, 16, true}, resident_warps, 4, parascan::product_tile));
  // Policies of one warp a block have no blocks to offer.
  CHECK(!parascan::runs_product_blocks(batch_shape{1, 1000, false}, resident_warps, 1, parascan::product_tile));
}

TEST_CASE("plan: long tiles from one tile short of the threshold, unless their ragged tail pads more") {
  using parascan::runs_long_tiles;
  // fp32 pairs: 128-step base tiles, 256-step long tiles from 4 of them (1024 steps).
  CHECK(!runs_long_tiles(512, 1024, 128, 256));
  CHECK(!runs_long_tiles(767, 1024, 128, 256));   // under three long tiles
  CHECK(runs_long_tiles(768, 1024, 128, 256));    // three whole long tiles
  CHECK(!runs_long_tiles(896, 1024, 128, 256));   // a half long tile of padding (1/7 of the length)
  CHECK(runs_long_tiles(1000, 1024, 128, 256));   // both round up to 1024
  CHECK(runs_long_tiles(1024, 1024, 128, 256));
  CHECK(!runs_long_tiles(1152, 1024, 128, 256));  // 128 more padded steps: over 1/16 of 1152
  CHECK(runs_long_tiles(2200, 1024, 128, 256));   // 64 more: under 1/16
  CHECK(runs_long_tiles(50000, 1024, 128, 256));
  // bf16 widened: 256- and 512-step tiles from 8 long tiles (4096 steps).
  using warp_pairs = parascan::long_sequences<parascan::cuda_policy<128, 4, combine_variant::warp, 8, 4>, 4,
                                              parascan::cuda_policy<128, 8, combine_variant::warp, 4, 4>>;
  static_assert(warp_pairs::long_from == 1024);
  static_assert(parascan::with_items_at_least<warp_pairs, 8>::long_from == 4096);
  static_assert(parascan::with_items_at_least<warp_pairs, 8>::long_policy::items == 16);
  CHECK(!runs_long_tiles(2048, 4096, 256, 512));
  CHECK(runs_long_tiles(3584, 4096, 256, 512));
  CHECK(runs_long_tiles(4096, 4096, 256, 512));
}

TEST_CASE("plan: a block a sequence for long whole sequences, four waves of them, little padding") {
  using parascan::runs_stream;
  constexpr int sms = 132;
  // fp32 pairs' default: 1024 x 4 tiles, two blocks a multiprocessor, from 4096 steps.
  CHECK(runs_stream(8 * 1536, 4096, sms, 2, 4096, 4096));
  CHECK(runs_stream(8 * 1536, 65536, sms, 2, 4096, 4096));
  CHECK(!runs_stream(8 * 1536, 2048, sms, 2, 4096, 4096));   // under the threshold
  CHECK(!runs_stream(8 * 1536, 5000, sms, 2, 4096, 4096));   // 3192 steps of padding
  CHECK(runs_stream(8 * 1536, 50000, sms, 2, 4096, 4096));   // 3248 of 50000: under 1/8
  CHECK(!runs_stream(8 * 1536, 13000, sms, 2, 4096, 4096));  // 3384 of 13000: over 1/8
  CHECK(runs_stream(8 * 1536, 61000, sms, 2, 4096, 4096));   // 440 of 61000
  CHECK(runs_stream(4 * sms * 2, 8192, sms, 2, 4096, 4096));
  CHECK(!runs_stream(4 * sms * 2 - 1, 8192, sms, 2, 4096, 4096));  // under four waves: split instead
  CHECK(!runs_stream(16, 1 << 24, sms, 2, 4096, 4096));
  // The policies: ladders of streams (the longest rung outermost, each refining the next shorter); fp32
  // pairs from 128 steps to 1024 x 4 tiles from 4096 below 4.5 TB/s (from 65536 above it, 512 x 4 from
  // 4096 there), scalars 512 x 4 from 4096; a widened policy (bf16) has none.
  using parascan::memory_bandwidth;
  using pairs = parascan::default_policy_t<parascan::ops::linear_recurrence<float>, parascan::arch::sm90>;
  static_assert(pairs::stream_from == 65536 && pairs::stream_policy::tile == 4096 &&
                pairs::stream_devices == memory_bandwidth::from_4_5_tbs);
  using pairs_4096 = pairs::refines;
  static_assert(pairs_4096::stream_from == 4096 && pairs_4096::stream_policy::tile == 4096 &&
                pairs_4096::stream_devices == memory_bandwidth::below_4_5_tbs);
  using pairs_4096_fast = pairs_4096::refines;
  static_assert(pairs_4096_fast::stream_from == 4096 && pairs_4096_fast::stream_policy::tile == 2048 &&
                pairs_4096_fast::stream_devices == memory_bandwidth::from_4_5_tbs);
  using pairs_2048 = pairs_4096_fast::refines;
  static_assert(pairs_2048::stream_from == 2048 && pairs_2048::stream_policy::tile == 2048 &&
                pairs_2048::stream_policy::min_blocks == 4 &&
                pairs_2048::stream_devices == memory_bandwidth::below_4_5_tbs);
  static_assert(pairs_2048::refines::stream_from == 1000 &&
                pairs_2048::refines::stream_devices == memory_bandwidth::any);
  using pairs_128 = pairs_2048::refines::refines::refines;
  static_assert(pairs_128::stream_from == 128 && pairs_128::stream_policy::tile == 128 &&
                !parascan::detail::has_stream_policy<pairs_128::refines>::value);
  using sums = parascan::default_policy_t<parascan::ops::sum<float>, parascan::arch::sm90>;
  // Scalars below 4.5 TB/s: 256 x 4 from 2048 steps, 512 x 4 with the next tile prefetched into the L2 from
  // 4096, 1024 x 4 with one from 8192; from 4.5 TB/s 256 x 4 and 512 x 4 (from 8192), both prefetching.
  static_assert(sums::stream_from == 8192 && sums::stream_policy::tile == 2048 && sums::stream_policy::stages == 2 &&
                sums::stream_devices == memory_bandwidth::from_4_5_tbs);
  using sums_8192 = sums::refines;
  static_assert(sums_8192::stream_from == 8192 && sums_8192::stream_policy::tile == 4096 &&
                sums_8192::stream_policy::min_blocks == 2 && sums_8192::stream_policy::stages == 2 &&
                sums_8192::stream_devices == memory_bandwidth::below_4_5_tbs);
  static_assert(sums_8192::refines::stream_from == 4096 && sums_8192::refines::stream_policy::tile == 2048 &&
                sums_8192::refines::stream_policy::stages == 2 &&
                sums_8192::refines::stream_devices == memory_bandwidth::below_4_5_tbs);
  using sums_2048 = sums_8192::refines::refines;
  static_assert(sums_2048::stream_from == 2048 && sums_2048::stream_policy::tile == 1024 &&
                sums_2048::stream_policy::stages == 2 && sums_2048::stream_devices == memory_bandwidth::from_4_5_tbs);
  static_assert(sums_2048::refines::stream_from == 2048 && sums_2048::refines::stream_policy::stages == 1 &&
                !parascan::detail::has_stream_policy<sums_2048::refines::refines>::value);
  static_assert(std::is_same<parascan::with_items_at_least<pairs, 4>, pairs>::value);
  static_assert(!parascan::detail::has_stream_policy<parascan::with_items_at_least<pairs, 8>>::value);
  // Inputs under 4 bytes (bf16, fp16) run the narrow policy: 8 items a thread, streamed at 512 x 8 from
  // 8192 steps and 256 x 8 from 2048 below 4.5 TB/s, 128 x 8 from 1024 on every device, their measured
  // spills allowed; the fp32 streams allow none.
  using narrow = pairs::narrow_policy;
  static_assert(narrow::items == 8 && narrow::stream_from == 8192 && narrow::stream_policy::tile == 4096 &&
                narrow::stream_policy::min_blocks == 3 && narrow::stream_spill_bytes == 128 &&
                narrow::stream_devices == memory_bandwidth::below_4_5_tbs && narrow::refines::stream_from == 2048 &&
                narrow::refines::stream_devices == memory_bandwidth::below_4_5_tbs &&
                narrow::refines::refines::stream_from == 1024 &&
                narrow::refines::refines::stream_devices == memory_bandwidth::any);
  static_assert(std::is_same<parascan::with_items_at_least<narrow, 8>, narrow>::value &&
                pairs::stream_spill_bytes == 0);
  // Every input must be narrow (bf16 gates with fp32 tokens keep the widened fp32 policy, unmeasured as a stream).
  static_assert(parascan::detail::widest_input_bytes<parascan::input_pack<float, short>>() == 4 &&
                parascan::detail::widest_input_bytes<parascan::input_pack<short, short>>() == 2 &&
                parascan::detail::narrowest_input_bytes<parascan::input_pack<float, short>>() == 2);
}

TEST_CASE("plan: described in one line (what PARASCAN_LOG=1 prints)") {
  const auto plan = plan_scan(pair_warp, group_kind::warp, batch_shape{1, 1 << 20, false}, h200_sms, 8);
  const std::string text = plan.describe();
  CHECK(text.find("group=warp") != std::string::npos);
  CHECK(text.find("tile=128") != std::string::npos);
  CHECK(text.find("splits=" + std::to_string(plan.splits)) != std::string::npos);
}

TEST_CASE("plan: walks in time take batches of at least two warps a multiprocessor (8x8 prefixes 1.75)") {
  using parascan::runs_walk;
  // (4096, 1024) 4 x 4 sequences or chains, 8 a warp: 512 warps, 3.9 a multiprocessor.
  CHECK(runs_walk(batch_shape{4096, 1024, false}, 512, h200_sms));
  // Two warps a multiprocessor exactly, and one warp fewer.
  CHECK(runs_walk(batch_shape{2112, 1024, false}, 264, h200_sms));
  CHECK(!runs_walk(batch_shape{2104, 1024, false}, 263, h200_sms));
  // 8 x 8 prefixes under warp_product: (1024, 1024) chains, 4 a warp, 256 warps (1.94 a multiprocessor)
  // walk; (768, 1024), 192 warps (1.45), do not; the default threshold would refuse the first.
  const int q8 = parascan::walk_quarter_warps_8x8_prefix;
  CHECK(runs_walk(batch_shape{1024, 1024, false}, 256, h200_sms, q8));
  CHECK(!runs_walk(batch_shape{768, 1024, false}, 192, h200_sms, q8));
  CHECK(runs_walk(batch_shape{924, 1024, false}, 231, h200_sms, q8));
  CHECK(!runs_walk(batch_shape{920, 1024, false}, 230, h200_sms, q8));
  CHECK(!runs_walk(batch_shape{1024, 1024, false}, 256, h200_sms));
  // Sequences of 2^31 steps or more: the walks count steps in 32 bits.
  CHECK(runs_walk(batch_shape{4096, (index_t(1) << 31) - 1, false}, 512, h200_sms));
  CHECK(!runs_walk(batch_shape{4096, index_t(1) << 31, false}, 512, h200_sms));
}
