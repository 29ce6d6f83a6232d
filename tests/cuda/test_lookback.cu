// GPU tests of the single-pass look-backs, which run prefix scans of few long sequences. Block tiles
// (cuda/lookback.cuh): 5 to 1000 tiles a sequence, states of 4, 8 and 16 bytes, a non-commutative
// operator (2 x 2 matrix products, so that any order error shows), every option, unaligned and reversed
// views, packed sequences of unequal lengths (one empty), 2-byte inputs. Channel groups of 32 sequences
// ((B, T, D) and packed (total, D) batches) fewer than the device runs: block tiles with a look-back
// (cuda/channel_block_lookback.cuh) for the few (2 to 6 groups) and one-warp tiles
// (cuda/channel_lookback.cuh) for 128 groups of 250 steps; the block tiles for 96 groups of bf16 pairs
// (steps too thin for whole groups of warps); partial groups, lanes of different lengths, unaligned
// rows. All against an fp64 sequential reference, and bit-identical results from run to run (each
// look-back folds in a fixed order whatever the timing). Every block case (cuda/lookback.cuh) is at most
// four sequences, each at least four look-back tiles long (512 threads x 8 steps for 2x2 matrices, x 16
// for fp32 pairs, x 24 for bf16 inputs; one case takes tiles of 32 steps, about 32768 a sequence, so
// look-backs walk far), which dispatch sends to the look-back (plan.hpp's runs_single_pass,
// runs_channel_block_tiles and runs_channel_tiles; PARASCAN_LOG=1 shows it). The look-ahead
// (cuda/lookahead.cuh, plan.hpp's runs_look_ahead; the default for fp32 cumsum and the fp32 recurrence,
// else through a policy) is tested the same ways under policies of small tiles, at 4096-step tiles from
// the default threshold (one sequence of 2^26 steps), and by default (one sequence of 2^27 steps, 16 of
// 2^22 with every option).
#include "support/backend_cuda.cuh"
#include "support/harness.hpp"

#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>

#include <cmath>
#include <cstring>

namespace {

using ptest::index_t;

/// 2 x 2 row-major matrices; the scan multiplies later on the left: P_t = M_t ... M_1 M_0.
struct mat2 {
  float v[4];
};
struct matmul2 {
  using value_type = mat2;
  PARASCAN_HD value_type identity() const { return {{1, 0, 0, 1}}; }
  PARASCAN_HD value_type operator()(const value_type& e, const value_type& l) const {
    return {{l.v[0] * e.v[0] + l.v[1] * e.v[2], l.v[0] * e.v[1] + l.v[1] * e.v[3], l.v[2] * e.v[0] + l.v[3] * e.v[2],
             l.v[2] * e.v[1] + l.v[3] * e.v[3]}};
  }
};
/// A random rotation: products stay bounded, so the fp32 error grows like sqrt(T) and a wrong order
/// (rotations of different angles commute, so the matrices also shear a little) shows as O(1).
mat2 random_mat2() {
  const double a = ptest::uniform(-3.2, 3.2), s = ptest::uniform(-0.01, 0.01);
  return {{float(std::cos(a)), float(-std::sin(a) + s), float(std::sin(a)), float(std::cos(a))}};
}
struct ref2 {
  double v[4];
};
ref2 times(const mat2& l, const ref2& e) {
  return {{l.v[0] * e.v[0] + l.v[1] * e.v[2], l.v[0] * e.v[1] + l.v[1] * e.v[3], l.v[2] * e.v[0] + l.v[3] * e.v[2],
           l.v[2] * e.v[1] + l.v[3] * e.v[3]}};
}

const std::vector<ptest::scan_flags>& option_sets() {
  static const std::vector<ptest::scan_flags> v = {
      {false, false, false, false}, {true, true, true, true}, {false, true, false, true}, {true, false, true, false}};
  return v;
}

/// Views of `count` sequences of T steps starting `shift` elements into a buffer: one sequence, or a
/// (1, count, T) batch.
template <class E>
parascan::sequences<E> view_of(E* p, index_t count, index_t T, index_t shift) {
  return count == 1 ? parascan::single(p + shift, T) : parascan::bdt(p + shift, 1, count, T);
}

/// Runs parascan::prefix_scan under `Policy` (void: the default policy).
template <class Policy, class... Args>
void prefix_scan_with(Args&&... args) {
  if constexpr (std::is_void_v<Policy>)
    parascan::prefix_scan(ptest::exec(), std::forward<Args>(args)...);
  else
    parascan::prefix_scan<Policy>(ptest::exec(), std::forward<Args>(args)...);
}

/// Runs the 2x2 matrix scan of `view(x)` into `view(y)` under `Policy` with the options `f`, outputs
/// poisoned first, and returns its error against the fp64 sequential reference (the final states
/// included): `count` sequences, sequence s of length(s) steps, its step t at where(s, t) of `n`-element
/// buffers.
template <class Policy = void, class View, class Length, class Where>
double scan_mat2_at(View&& view, std::size_t n, index_t count, Length&& length, Where&& where,
                    const ptest::scan_flags& f) {
  ptest::buffer<mat2> x(n), y(n), init(static_cast<std::size_t>(count)), fin(static_cast<std::size_t>(count));
  ptest::fill(x, random_mat2);
  ptest::fill(init, random_mat2);
  ptest::fill(y, [] { return mat2{{NAN, NAN, NAN, NAN}}; });
  ptest::fill(fin, [] { return mat2{{NAN, NAN, NAN, NAN}}; });
  auto opts = ptest::options_for<mat2>(f, init.data(), fin.data());
  prefix_scan_with<Policy>(matmul2{}, view(x.data()), view(y.data()), opts);
  y.download();
  fin.download();
  ptest::error_meter err;
  const auto add = [&](const mat2& got, const ref2& ref) {
    for (int i = 0; i < 4; ++i) err.add(got.v[i], ref.v[i]);
  };
  for (index_t s = 0; s < count; ++s) {
    const mat2& i0 = init.host[std::size_t(s)];
    const ref2 start = f.with_initial ? ref2{{i0.v[0], i0.v[1], i0.v[2], i0.v[3]}} : ref2{{1, 0, 0, 1}};
    const ref2 total = ptest::reference_scan(
        length(s), f.exclusive, f.reverse, start,
        [&](const ref2& c, index_t t) { return times(x.host[where(s, t)], c); },
        [&](index_t t, const ref2& c) { add(y.host[where(s, t)], c); });
    if (f.with_final) add(fin.host[std::size_t(s)], total);
  }
  return err.relative();
}

/// The same for sequences laid out one after another: sequence s at steps [offsets[s], offsets[s + 1]).
template <class Policy = void, class View>
double scan_mat2(View&& view, const std::vector<index_t>& offsets, const ptest::scan_flags& f) {
  return scan_mat2_at<Policy>(
      view, std::size_t(offsets.back()), index_t(offsets.size()) - 1,
      [&](index_t s) { return offsets[std::size_t(s) + 1] - offsets[std::size_t(s)]; },
      [&](index_t s, index_t t) { return std::size_t(offsets[std::size_t(s)] + t); }, f);
}

TEST_CASE("look-back: 2x2 matrix products (16-byte states, non-commutative), long sequences, every option") {
  for (const index_t count : {1, 3})
    for (const index_t T : {20011, 100003, (1 << 20) + 1})
      for (const auto& f : option_sets()) {
        INFO(count << " sequence(s) of " << T << ", " << ptest::describe(f));
        std::vector<index_t> offsets;
        for (index_t s = 0; s <= count; ++s) offsets.push_back(s * T);
        CHECK(scan_mat2([&](mat2* p) { return view_of(p, count, T, 0); }, offsets, f) <=
              1e-6 * (8 + 2 * std::sqrt(double(T))) * 2);
      }
}

/// The fp32 linear recurrence (8-byte states) and cumsum (4-byte) of one sequence of T steps `shift`
/// elements into its buffers, under `Policy`, against fp64; the element before a shifted view stays poisoned.
template <class Policy = void>
void check_recurrence_and_sum(index_t T, index_t shift, bool reverse) {
  INFO("T = " << T << ", shift " << shift << (reverse ? ", reverse" : ""));
  const std::size_t n = std::size_t(T + shift);
  ptest::buffer<float> a(n), b(n), y(n), z(n);
  ptest::fill(a, [] { return float(ptest::uniform(0.99, 1.0)); });
  ptest::fill(b, [] { return float(ptest::uniform(-1, 1)); });
  ptest::fill(y, [] { return NAN; });
  ptest::fill(z, [] { return NAN; });
  parascan::options<float> opts;
  opts.reverse = reverse;
  prefix_scan_with<Policy>(parascan::ops::linear_recurrence<float>{},
                           parascan::inputs(view_of(a.data(), 1, T, shift), view_of(b.data(), 1, T, shift)),
                           view_of(y.data(), 1, T, shift), opts);
  prefix_scan_with<Policy>(parascan::ops::sum<float>{}, view_of(b.data(), 1, T, shift), view_of(z.data(), 1, T, shift),
                           opts);
  y.download();
  z.download();
  ptest::error_meter rec, sum;
  double x = 0, s = 0;
  for (index_t p = 0; p < T; ++p) {
    const std::size_t t = std::size_t(shift + (reverse ? T - 1 - p : p));
    x = double(a.host[t]) * x + double(b.host[t]);
    s += double(b.host[t]);
    rec.add(y.host[t], x);
    sum.add(z.host[t], s);
  }
  CHECK(rec.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
  CHECK(sum.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
  if (shift == 1) CHECK((std::isnan(y.host[0]) && std::isnan(z.host[0])));
}

TEST_CASE("look-back: fp32 linear recurrence (8-byte states) and cumsum (4-byte), unaligned and reversed") {
  for (const index_t T : {3000017, 70001})
    for (const index_t shift : {0, 1})
      for (const bool reverse : {false, true}) check_recurrence_and_sum(T, shift, reverse);
}

TEST_CASE("look-back: packed sequences of unequal lengths, one empty (tiles past a sequence's end)") {
  std::vector<index_t> offsets{0};
  for (const index_t n : {100003, 0, 99000, 70001}) offsets.push_back(offsets.back() + n);
  const index_t N = index_t(offsets.size()) - 1, total = offsets.back();
  for (const auto& f : option_sets()) {
    INFO(ptest::describe(f));
    CHECK(scan_mat2([&](mat2* p) { return parascan::packed_dt(p, offsets.data(), N, 1, total); }, offsets, f) <=
          1e-6 * (8 + 2 * std::sqrt(100003.0)) * 2);
  }
}

/// The fp32 linear recurrence of bf16 gates and tokens (2-byte inputs, fp32 state) under `Policy`, both
/// directions, against fp64 (the bf16 output's rounding allowed).
template <class Policy = void>
void check_bf16_recurrence() {
  const index_t T = 400009;
  const std::size_t n = std::size_t(T);
  ptest::buffer<ptest::bf16> a(n), b(n), y(n);
  ptest::fill(a, [] { return ptest::bf16(float(ptest::uniform(0.9, 1.0))); });
  ptest::fill(b, [] { return ptest::bf16(float(ptest::uniform(-1, 1))); });
  for (const bool reverse : {false, true}) {
    INFO((reverse ? "reverse" : "forward"));
    parascan::options<float> opts;  // the operator's output type: the state's projection
    opts.reverse = reverse;
    prefix_scan_with<Policy>(parascan::ops::linear_recurrence<float>{},
                             parascan::inputs(parascan::single(a.data(), T), parascan::single(b.data(), T)),
                             parascan::single(y.data(), T), opts);
    y.download();
    ptest::error_meter err;
    double x = 0;
    for (index_t p = 0; p < T; ++p) {
      const std::size_t t = std::size_t(reverse ? T - 1 - p : p);
      x = double(float(a.host[t])) * x + double(float(b.host[t]));
      err.add(double(float(y.host[t])), x);
    }
    CHECK(err.relative() <= 0.5 * 0.0078125 + 1e-6 * (8 + 2 * std::sqrt(double(T))));  // bf16 rounding
  }
}

TEST_CASE("look-back: bf16 gates and tokens (2-byte inputs, fp32 state), both directions") {
  check_bf16_recurrence();
}

TEST_CASE("2-byte states (not published in 4-byte words) keep reduce-then-scan") {
  const index_t T = 30011;  // a running count of ones fits in int16
  const std::size_t n = std::size_t(T);
  ptest::buffer<short> x(n, short(1)), y(n, short(-1));
  x.upload();
  y.upload();
  parascan::prefix_scan(ptest::exec(), parascan::ops::sum<short>{}, parascan::single(x.data(), T),
                        parascan::single(y.data(), T));
  y.download();
  index_t wrong = 0;
  for (index_t t = 0; t < T; ++t) wrong += y.host[std::size_t(t)] != short(t + 1);
  CHECK(wrong == 0);
}

TEST_CASE("look-back: the same inputs give bit-identical outputs, run after run") {
  const index_t T = (1 << 22) + 5;
  const std::size_t n = std::size_t(T);
  ptest::buffer<mat2> x(n), y(n);
  ptest::fill(x, random_mat2);
  std::vector<mat2> first;
  for (int run = 0; run < 4; ++run) {
    parascan::prefix_scan(ptest::exec(), matmul2{}, parascan::single(x.data(), T), parascan::single(y.data(), T));
    y.download();
    if (run == 0)
      first = y.host;
    else
      CHECK(std::memcmp(first.data(), y.host.data(), first.size() * sizeof(mat2)) == 0);
  }
}

/// `count` sequences of T 2x2 matrices scanned three times under `Policy`: bit-identical reruns, and the
/// first against fp64.
template <class Policy>
void check_mat2_reruns(index_t count, index_t T) {
  INFO(count << " sequence(s) of " << T);
  const std::size_t n = std::size_t(count * T);
  ptest::buffer<mat2> x(n), y(n);
  ptest::fill(x, random_mat2);
  std::vector<mat2> first;
  for (int run = 0; run < 3; ++run) {
    prefix_scan_with<Policy>(matmul2{}, view_of(x.data(), count, T, 0), view_of(y.data(), count, T, 0));
    y.download();
    if (run == 0)
      first = y.host;
    else
      CHECK(std::memcmp(first.data(), y.host.data(), first.size() * sizeof(mat2)) == 0);
  }
  ptest::error_meter err;
  for (index_t s = 0; s < count; ++s) {
    ref2 c{{1, 0, 0, 1}};
    for (index_t t = 0; t < T; ++t) {
      const std::size_t at = std::size_t(s * T + t);
      c = times(x.host[at], c);
      for (int i = 0; i < 4; ++i) err.add(first[at].v[i], c.v[i]);
    }
  }
  CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))) * 2);
}

TEST_CASE("look-back: tiles of 32 steps, 2^15 a sequence (look-backs over many windows), bit-identical reruns") {
  // One-warp blocks of one step a thread, many resident a multiprocessor: a tile often finds no inclusive
  // prefix near it and folds many windows of aggregates (lookback.cuh).
  using base = parascan::default_policy<matmul2, parascan::arch::sm90>::type;
  using tiny = parascan::single_pass_tiles<base, parascan::cuda_policy<32, 1, parascan::combine_variant::block, 16, 2>>;
  for (const index_t count : {1, 2}) check_mat2_reruns<tiny>(count, (1 << 20) + 3);
}

// The look-ahead (cuda/lookahead.cuh): persistent blocks that fold published aggregates forward. Policies
// with small tiles and no threshold send sequences of 10^4 to 10^6 steps there (hundreds to tens of
// thousands of tiles, so cursors cross many windows and blocks take many tiles each); tiles of 4096 steps
// at the default threshold (64 a multiprocessor) are met by one sequence of 2^26 steps.
template <class Shape, int FromTiles = 1, class Base = parascan::default_policy<matmul2, parascan::arch::sm90>::type>
using look_ahead_policy = parascan::look_ahead_tiles<Base, Shape, FromTiles>;
using small_ahead = parascan::lookahead_shape<2, 4, 3, 1>;      // 256-step tiles
using tiny_ahead = parascan::lookahead_shape<1, 1, 2, 1, 2>;    // 32-step tiles, 2 windows a round trip
using deep_ahead = parascan::lookahead_shape<2, 8, 6, 4, 8>;    // 512-step tiles, 6 stages, 4 ahead

TEST_CASE("look-ahead: 2x2 matrix products (non-commutative), one and three sequences, every option") {
  for (const index_t count : {1, 3})
    for (const index_t T : {20011, 100003})
      for (const auto& f : option_sets()) {
        INFO(count << " sequence(s) of " << T << ", " << ptest::describe(f));
        std::vector<index_t> offsets;
        for (index_t s = 0; s <= count; ++s) offsets.push_back(s * T);
        const auto view = [&](mat2* p) { return view_of(p, count, T, 0); };
        const double bound = 1e-6 * (8 + 2 * std::sqrt(double(T))) * 2;
        CHECK(scan_mat2<look_ahead_policy<small_ahead>>(view, offsets, f) <= bound);
        CHECK(scan_mat2<look_ahead_policy<deep_ahead>>(view, offsets, f) <= bound);
      }
}

TEST_CASE("look-ahead: packed sequences of unequal lengths, one empty (tiles past a sequence's end)") {
  std::vector<index_t> offsets{0};
  for (const index_t n : {100003, 0, 99000, 70001}) offsets.push_back(offsets.back() + n);
  const index_t N = index_t(offsets.size()) - 1, total = offsets.back();
  for (const auto& f : option_sets()) {
    INFO(ptest::describe(f));
    CHECK(scan_mat2<look_ahead_policy<small_ahead>>(
              [&](mat2* p) { return parascan::packed_dt(p, offsets.data(), N, 1, total); }, offsets, f) <=
          1e-6 * (8 + 2 * std::sqrt(100003.0)) * 2);
  }
}

TEST_CASE("look-ahead: fp32 linear recurrence and cumsum, unaligned and reversed, small and 4096-step tiles") {
  for (const index_t shift : {0, 1})
    for (const bool reverse : {false, true}) {
      check_recurrence_and_sum<look_ahead_policy<small_ahead>>(70001, shift, reverse);
      check_recurrence_and_sum<look_ahead_policy<deep_ahead>>(300007, shift, reverse);
      check_recurrence_and_sum<look_ahead_policy<parascan::lookahead_shape<8, 16, 6, 3>, 64>>((index_t(1) << 26) + 7,
                                                                                           shift, reverse);
    }
}

TEST_CASE("look-ahead by default: fp32 recurrence and cumsum of 2^27 steps, unaligned, reversed") {
  // The default policy's look-ahead tiles (cuda/device.cuh's lookahead_tiles), from 64 tiles a
  // multiprocessor: 4096 steps for fp32 pairs (32769 tiles here), 7168 for 4-byte states (18726).
  check_recurrence_and_sum((index_t(1) << 27) + 7, 0, false);
  check_recurrence_and_sum((index_t(1) << 27) + 7, 1, true);
}

TEST_CASE("look-ahead by default: 16 fp32 recurrences of 2^22 + 5 steps (tiles across sequences), every option") {
  const index_t count = 16, T = (index_t(1) << 22) + 5;  // 16 x 1025 tiles of 4096 steps
  const std::size_t n = std::size_t(count * T);
  ptest::buffer<float> a(n), b(n), y(n), init(static_cast<std::size_t>(count)), fin(static_cast<std::size_t>(count));
  ptest::fill(a, [] { return float(ptest::uniform(0.99, 1.0)); });
  ptest::fill(b, [] { return float(ptest::uniform(-1, 1)); });
  ptest::fill(init, [] { return float(ptest::uniform(-1, 1)); });
  for (const auto& f : option_sets()) {
    INFO(count << " sequences of " << T << ", " << ptest::describe(f));
    ptest::fill(y, [] { return NAN; });
    ptest::fill(fin, [] { return NAN; });
    const auto view = [&](float* p) { return view_of(p, count, T, 0); };
    parascan::prefix_scan(ptest::exec(), parascan::ops::linear_recurrence<float>{},
                          parascan::inputs(view(a.data()), view(b.data())), view(y.data()),
                          ptest::options_for<float>(f, init.data(), fin.data()));
    y.download();
    fin.download();
    ptest::error_meter err;
    for (index_t s = 0; s < count; ++s) {
      const std::size_t at = std::size_t(s * T);
      const double start = f.with_initial ? double(init.host[std::size_t(s)]) : 0.0;
      const double total = ptest::reference_scan(
          T, f.exclusive, f.reverse, start,
          [&](double x, index_t t) { return double(a.host[at + t]) * x + double(b.host[at + t]); },
          [&](index_t t, double x) { err.add(y.host[at + t], x); });
      if (f.with_final) err.add(fin.host[std::size_t(s)], total);
    }
    CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
  }
}

TEST_CASE("look-ahead: tiles of 32 steps, 2^20 a sequence, two sequences, bit-identical reruns") {
  for (const index_t count : {1, 2}) check_mat2_reruns<look_ahead_policy<tiny_ahead>>(count, (1 << 20) + 3);
}

TEST_CASE("look-ahead: bf16 gates and tokens (2-byte inputs, fp32 state), both directions") {
  check_bf16_recurrence<look_ahead_policy<parascan::lookahead_shape<2, 8, 3, 1>>>();
}

// Channel groups (lanes across adjacent sequences: (B, T, D), packed (total, D)) split in time for lack
// of groups: fewer than half the multiprocessors run channel_block_lookback.cuh's block tiles (512 steps
// for fp32 pairs, 192 for 2x2 matrices); more, of similar lengths and shorter than four tiles of
// channel_slices.cuh's blocks, channel_lookback.cuh's one-warp tiles (64 steps for fp32 pairs, 32 for 2x2
// matrices).

/// 2x2 matrices over (1, T, D) btd with every option, each within its bound.
void check_btd_mat2(index_t T, index_t D) {
  for (const auto& f : option_sets()) {
    INFO("(1, " << T << ", " << D << "), " << ptest::describe(f));
    CHECK(scan_mat2_at([&](mat2* p) { return parascan::btd(p, 1, T, D); }, std::size_t(T * D), D,
                       [&](index_t) { return T; }, [&](index_t s, index_t t) { return std::size_t(t * D + s); },
                       f) <= 1e-6 * (8 + 2 * std::sqrt(double(T))) * 2);
  }
}

TEST_CASE("channel look-back: (B, T, D) 2x2 matrices, every option, partial groups of lanes") {
  for (const index_t D : {40, 64})
    for (const index_t T : {20011, 100003}) check_btd_mat2(T, D);
}

TEST_CASE("channel look-back: one-warp tiles, (1, 250, 4091) 2x2 matrices (128 groups, the last partial)") {
  const index_t T = 250, D = 4091;
  // The plan on this device: split evenly for lack of groups, under four tiles of the whole groups of 8
  // warps (a device of 64 multiprocessors or fewer would not split 128 groups).
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  const parascan::policy_values mat2_values{128, 4, 4, parascan::combine_variant::warp, 16};
  const parascan::batch_shape shape{D, T, true};
  const auto plan = parascan::plan_scan(mat2_values, parascan::group_kind::channel, shape, sms, 1);
  if (sms > 64) {
    REQUIRE(parascan::runs_channel_tiles(plan, shape, 32));
    REQUIRE(!parascan::runs_channel_slices(plan, shape, 64, sms, 8));
  }
  check_btd_mat2(T, D);
}

TEST_CASE("channel look-back: bf16 gates and tokens over (1, 4096, 3072): 96 groups of 4-byte steps, block tiles") {
  const index_t T = 4096, D = 3072;
  // On a device of 49 to 192 multiprocessors the 96 groups split evenly for lack of groups, enough for the
  // whole groups of 8 warps, but their steps are too thin for those: the block tiles run them (where their
  // shared memory fits: 8 warps x 3 stages of 32 bf16-pair rows, and the totals).
  int sms = 0, optin = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  const parascan::batch_shape shape{D, T, true};
  const auto plan = parascan::plan_scan(parascan::policy_values{128, 4, 4, parascan::combine_variant::warp, 8},
                                        parascan::group_kind::channel, shape, sms, 1);
  const bool thin_route = sms > 48 && sms <= 192;
  if (thin_route) REQUIRE(parascan::thin_steps_take_block_tiles(plan, 4));
  const bool block_tiles = thin_route && optin >= 8 * 3 * 4096 + 9 * 32 * 8;
  const std::size_t n = std::size_t(T * D);
  ptest::buffer<ptest::bf16> a(n), b(n);
  ptest::buffer<float> y(n);
  ptest::fill(a, [] { return ptest::bf16(float(ptest::uniform(0.9, 1.0))); });
  ptest::fill(b, [] { return ptest::bf16(float(ptest::uniform(-1, 1))); });
  for (const bool reverse : {false, true}) {
    INFO((reverse ? "reverse" : "forward"));
    parascan::options<float> opts;
    opts.reverse = reverse;
    const long long block_launches = parascan::engine::channel_block_launches().load(),
                    slices_launches = parascan::engine::channel_slices_launches().load();
    parascan::prefix_scan(ptest::exec(), parascan::ops::linear_recurrence<float>{},
                          parascan::inputs(parascan::btd(a.data(), 1, T, D), parascan::btd(b.data(), 1, T, D)),
                          parascan::btd(y.data(), 1, T, D), opts);
    y.download();
    if (block_tiles) {
      CHECK(parascan::engine::channel_block_launches().load() > block_launches);
      CHECK(parascan::engine::channel_slices_launches().load() == slices_launches);
    }
    ptest::error_meter err;
    for (index_t d = 0; d < D; ++d) {
      double x = 0;
      for (index_t p = 0; p < T; ++p) {
        const std::size_t i = std::size_t((reverse ? T - 1 - p : p) * D + d);
        x = double(float(a.host[i])) * x + double(float(b.host[i]));
        err.add(y.host[i], x);
      }
    }
    CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
  }
}

TEST_CASE("channel look-back: packed (total, 33), lanes of one warp in sequences of different lengths, one empty") {
  std::vector<index_t> offsets{0};
  for (const index_t n : {100003, 0, 70001}) offsets.push_back(offsets.back() + n);
  const index_t D = 33, total = offsets.back();
  for (const auto& f : option_sets()) {
    INFO(ptest::describe(f));
    CHECK(scan_mat2_at([&](mat2* p) { return parascan::packed_td(p, offsets.data(), 3, D); }, std::size_t(total * D),
                       3 * D, [&](index_t s) { return offsets[std::size_t(s / D) + 1] - offsets[std::size_t(s / D)]; },
                       [&](index_t s, index_t t) { return std::size_t((offsets[std::size_t(s / D)] + t) * D + s % D); },
                       f) <= 1e-6 * (8 + 2 * std::sqrt(100003.0)) * 2);
  }
}

TEST_CASE("channel look-back: fp32 linear recurrence, unaligned rows, both directions, bit-identical reruns") {
  const index_t B = 2, T = 200003, D = 96;
  for (const index_t shift : {0, 1})
    for (const bool reverse : {false, true}) {
      INFO("(2, " << T << ", 96), shift " << shift << (reverse ? ", reverse" : ""));
      const std::size_t n = std::size_t(B * T * D + shift);
      ptest::buffer<float> a(n), b(n), y(n);
      ptest::fill(a, [] { return float(ptest::uniform(0.99, 1.0)); });
      ptest::fill(b, [] { return float(ptest::uniform(-1, 1)); });
      ptest::fill(y, [] { return NAN; });  // poisoned: the element before a shifted view must stay so
      parascan::options<float> opts;
      opts.reverse = reverse;
      const auto view = [&](float* p) { return parascan::btd(p + shift, B, T, D); };
      std::vector<float> first;
      for (int run = 0; run < 2; ++run) {
        parascan::prefix_scan(ptest::exec(), parascan::ops::linear_recurrence<float>{},
                              parascan::inputs(view(a.data()), view(b.data())), view(y.data()), opts);
        y.download();
        if (run == 0) first = y.host;
      }
      CHECK(std::memcmp(first.data(), y.host.data(), n * sizeof(float)) == 0);
      if (shift == 1) CHECK(std::isnan(y.host[0]));
      ptest::error_meter err;
      for (index_t s = 0; s < B * D; ++s) {
        double x = 0;
        for (index_t p = 0; p < T; ++p) {
          const index_t t = reverse ? T - 1 - p : p;
          const std::size_t i = std::size_t(shift + ((s / D) * T + t) * D + s % D);
          x = double(a.host[i]) * x + double(b.host[i]);
          err.add(y.host[i], x);
        }
      }
      CHECK(err.relative() <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
    }
}

}  // namespace
