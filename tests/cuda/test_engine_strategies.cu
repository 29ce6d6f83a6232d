// GPU tests of the engine's strategies with explicit policies: block and warp groups with odd item
// counts, the sequential (thread) group, the multi-block split, and states that shuffle (<= 16 bytes)
// or go through shared memory (larger), all on a non-commutative operator (K x K matrix products) so
// that any order error shows, against an fp64 sequential reference.
#include "support/backend_cuda.cuh"
#include "support/harness.hpp"
#include "support/numeric.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/log_linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>

namespace {

using ptest::index_t;

/// Channels D of a (2, D, T) batch with four waves of a stream at `blocks` resident blocks a multiprocessor
/// (plan.hpp's runs_stream), ten sequences to spare.
index_t stream_channels(int blocks) {
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  return 2 * index_t(sms) * blocks + 5;
}

/// Keeps in `worst` the largest |got - ref| / scale so far; a NaN result makes it infinite for good.
void keep_worst(double& worst, double got, double ref, double scale) {
  ptest::keep_worst(worst, std::fabs(got - ref) / (scale + 1e-30));
}

/// K x K row-major matrices; the scan multiplies later on the left: P_t = M_t ... M_1 M_0.
template <int K>
struct mat {
  float v[K * K];
};

template <int K>
struct matmul_op {
  using value_type = mat<K>;
  PARASCAN_HD value_type identity() const {
    value_type m{};
    for (int i = 0; i < K; ++i) m.v[i * K + i] = 1.0f;
    return m;
  }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    value_type r{};
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += later.v[i * K + k] * earlier.v[k * K + j];
        r.v[i * K + j] = acc;
      }
    return r;
  }
};

template <int K>
using ref_mat = Eigen::Matrix<double, K, K, Eigen::RowMajor>;

template <int K>
ref_mat<K> to_ref(const mat<K>& m) {
  return Eigen::Map<const Eigen::Matrix<float, K, K, Eigen::RowMajor>>(m.v).template cast<double>();
}

/// Random orthogonal matrices (Cayley transform of a random skew-symmetric one): long products stay
/// well-conditioned, so the fp32 error grows like sqrt(T) and a wrong order shows as an O(1) error.
template <int K>
mat<K> make_orthogonal() {
  ref_mat<K> a = ref_mat<K>::Zero();
  for (int i = 0; i < K; ++i)
    for (int j = i + 1; j < K; ++j) a(i, j) = 0.5 * ptest::normal(), a(j, i) = -a(i, j);
  const ref_mat<K> id = ref_mat<K>::Identity();
  const ref_mat<K> q = (id - a).inverse() * (id + a);
  mat<K> m{};
  Eigen::Map<Eigen::Matrix<float, K, K, Eigen::RowMajor>>(m.v) = q.template cast<float>();
  return m;
}

/// A random pick from a pool of fresh random orthogonal matrices (inverting one per element is slow).
template <int K>
mat<K> random_mat() {
  static std::vector<mat<K>> pool;
  if (pool.empty())
    for (int i = 0; i < 4096; ++i) pool.push_back(make_orthogonal<K>());
  return pool[std::size_t(ptest::uniform(0, double(pool.size())))];
}

/// Layouts x a spread of lengths x four option combinations (every option on, each in two of them).
template <class F>
void for_each_engine_config(F&& f, index_t channels = 0) {
  const std::vector<ptest::scan_flags> flags = {
      {false, false, false, false}, {true, true, true, true}, {false, true, false, true}, {true, false, true, false}};
  for (auto kind : ptest::all_layouts())
    for (index_t T : {0, 1, 2, 31, 33, 257, 1000, 4097, 40009})
      for (const auto& fl : flags) {
        auto sh = ptest::shape::make(kind, T);
        if (channels > 0 && kind != ptest::layout_kind::single) sh.n1 = channels;
        INFO("cuda " << sh.describe() << " " << ptest::describe(fl));
        f(sh, fl);
      }
}

/// Runs one matrix scan (or reduction, into `fin`) of the sequences `view(buffer)` describes, over inputs
/// x and initial states init, with outputs and totals poisoned (NaN) first, and returns its error
/// against the fp64 sequential reference. `view` / `host_view` map a device / host pointer to the batch's
/// view (offsets where the backend reads them / on the host).
template <class Policy, int K, class View, class HostView>
double run_matrix_case(View&& view, HostView&& host_view, ptest::buffer<mat<K>>& x, ptest::buffer<mat<K>>& y, ptest::buffer<mat<K>>& init,
                       ptest::buffer<mat<K>>& fin, const ptest::scan_flags& f, bool reduce) {
  using M = mat<K>;
  const matmul_op<K> op;
  M nan_mat;
  for (auto& e : nan_mat.v) e = NAN;
  ptest::fill(y, [&] { return nan_mat; });
  ptest::fill(fin, [&] { return nan_mat; });
  parascan::options<M> opts;
  opts.reverse = f.reverse;
  opts.initial = f.with_initial ? init.data() : nullptr;
  if (reduce) {
    parascan::reduce_scan<Policy>(ptest::exec(), op, view(x.data()), fin.data(), opts);
  } else {
    opts.exclusive = f.exclusive;
    opts.final = f.with_final ? fin.data() : nullptr;
    parascan::prefix_scan<Policy>(ptest::exec(), op, view(x.data()), view(y.data()), opts);
  }
  y.download();
  fin.download();

  ptest::error_meter err;
  const auto add = [&](const M& got, const ref_mat<K>& ref) {
    for (int i = 0; i < K * K; ++i) err.add(got.v[i], ref(i / K, i % K));
  };
  const auto xs = host_view(x.host.data()), ys = host_view(y.host.data());
  for (index_t s = 0; s < xs.count(); ++s) {
    const ref_mat<K> start = f.with_initial ? to_ref<K>(init.host[s]) : ref_mat<K>::Identity();
    const ref_mat<K> total = ptest::reference_scan(
        xs.length_of(s), f.exclusive && !reduce, f.reverse, start,
        [&](const ref_mat<K>& c, index_t t) -> ref_mat<K> { return to_ref<K>(xs.at(s, t)) * c; },
        [&](index_t t, const ref_mat<K>& c) {
          if (!reduce) add(ys.at(s, t), c);
        });
    if (reduce || f.with_final) add(fin.host[s], total);
  }
  return err.relative();
}

template <class Policy, int K>
void check_strategy(bool reduce, index_t channels = 0) {
  for_each_engine_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    ptest::backend_offsets offs(sh);
    ptest::buffer<mat<K>> x(sh.elements()), y(sh.elements()), init(sh.count()), fin(sh.count());
    ptest::fill(x, random_mat<K>);
    ptest::fill(init, random_mat<K>);
    const auto view = [&](mat<K>* p) { return sh.view(p, offs.get(sh)); };
    const auto host_view = [&](mat<K>* p) { return sh.view(p, sh.packed() ? sh.offsets.data() : nullptr); };
    CHECK(run_matrix_case<Policy, K>(view, host_view, x, y, init, fin, f, reduce) <=
          1e-6 * (8 + 2 * std::sqrt(double(sh.T))) * K);
  }, channels);
}

}  // namespace

TEST_CASE("block and warp groups, odd items, 2x2 states (shuffled)") {
  check_strategy<parascan::cuda_policy<64, 3>, 2>(false);
  check_strategy<parascan::cuda_policy<96, 1>, 2>(true);
}

TEST_CASE("block group only, with the multi-block split on long sequences") {
  check_strategy<parascan::cuda_policy<128, 2, parascan::combine_variant::block>, 2>(false);
  check_strategy<parascan::cuda_policy<128, 2, parascan::combine_variant::block>, 2>(true);
}

TEST_CASE("3x3 states go through shared memory") {
  check_strategy<parascan::cuda_policy<64, 2>, 3>(false);
  check_strategy<parascan::cuda_policy<64, 2>, 3>(true);
}

TEST_CASE("sequential group, split into segments") {
  check_strategy<parascan::cuda_policy<64, 1, parascan::combine_variant::sequential>, 2>(false);
  check_strategy<parascan::cuda_policy<64, 1, parascan::combine_variant::sequential>, 6>(false);
  check_strategy<parascan::cuda_policy<64, 1, parascan::combine_variant::sequential>, 6>(true);
}

TEST_CASE("default policies for 2x2, 4x4 and 6x6 states") {
  check_strategy<parascan::use_default_policy, 2>(false);
  check_strategy<parascan::use_default_policy, 4>(false);
  check_strategy<parascan::use_default_policy, 6>(false);
}

TEST_CASE("channel groups: lanes across >= 32 adjacent sequences (btd, strided, packed_td)") {
  check_strategy<parascan::use_default_policy, 2>(false, 40);
  check_strategy<parascan::use_default_policy, 2>(true, 33);
  check_strategy<parascan::cuda_policy<64, 3>, 2>(false, 35);
}

/// channel_lane_run of a warp whose lanes are channels of a packed batch of D channels, `stride` elements
/// a row (lane l: channel l % D of sequence l / D, whose rows start at row 100 (l / D) of `data`; lanes
/// from `active` on past the batch, bound to sequence 0 with length 0), into out[0].
template <class T>
__global__ void lane_run_kernel(const T* data, index_t D, index_t stride, index_t active, index_t length_step,
                                int* out) {
  const index_t lane = threadIdx.x, s = lane < active ? lane : 0, i = s / D;
  const parascan::cursor<const T> c{data + 100 * i * stride + s % D, stride};
  const int run = parascan::engine::channel_lane_run(c, lane < active ? 100 - i * length_step : 0);
  if (lane == 0) out[0] = run;
}

template <class T>
int lane_run_of(index_t D, index_t misalign = 0, index_t active = 32, index_t length_step = 0, index_t stride = 0) {
  if (stride == 0) stride = D;
  ptest::buffer<T> data{std::size_t(100 * 32 * stride + 8)};
  ptest::buffer<int> out{1, -1};
  out.upload();
  lane_run_kernel<T><<<1, 32>>>(data.data() + misalign, D, stride, active, length_step, out.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  out.download();
  return out.host[0];
}

TEST_CASE("runs of adjacent lanes: which warps of a narrow channel batch move in 16-byte pieces") {
  CHECK(lane_run_of<float>(16) == 16);
  CHECK(lane_run_of<float>(16, 0, 32, 7) == 16);  // sequences of different lengths: one a run
  CHECK(lane_run_of<float>(16, 0, 16) == 16);     // lanes 16..31 past the batch (length 0: they copy nothing)
  CHECK(lane_run_of<float>(16, 0, 20) == 4);      // lanes 16..19 of one sequence, 20..31 past the batch
  CHECK(lane_run_of<float>(8) == 8);
  CHECK(lane_run_of<float>(12) == 4);             // runs of 4 inside each sequence's 12 channels
  CHECK(lane_run_of<float>(4) == 4);
  CHECK(lane_run_of<float>(2) == 0);              // 8-byte runs: no 16-byte piece
  CHECK(lane_run_of<float>(16, 1) == 0);          // rows off 16 bytes
  CHECK(lane_run_of<float>(6) == 0);              // runs of 4 straddle sequences
  CHECK(lane_run_of<float>(8, 0, 32, 0, 10) == 0);  // rows 40 bytes apart
  CHECK(lane_run_of<float>(8, 0, 32, 0, 12) == 8);  // rows 48 bytes apart
  CHECK(lane_run_of<unsigned short>(16) == 16);
  CHECK(lane_run_of<unsigned short>(8) == 8);
  CHECK(lane_run_of<unsigned short>(4) == 0);
  CHECK(lane_run_of<double>(2) == 2);
}

TEST_CASE("channel groups of fewer than 32 channels: every layout, prefix and reduction, runs of lanes") {
  // Lanes of several sequences move in runs of adjacent lanes (channel.cuh's channel_lane_run: 2 x 2 fp32
  // states of 16 bytes, runs of 16 at D = 16, of 8 at D = 8 and of 4 at D = 12) in the RUNS kernels
  // (block.cuh's channel_group); time-strided layouts element by element.
  check_strategy<parascan::use_default_policy, 2>(false, 16);
  check_strategy<parascan::use_default_policy, 2>(true, 8);
  check_strategy<parascan::use_default_policy, 2>(false, 12);
}

TEST_CASE("skewed packed batches: only the long sequences are split (ragged segment lists)") {
  // Enough short sequences to fill the device (so the plan splits nothing for lack of groups) and two
  // long ones: dispatch splits only those, each group into the segments its longest sequence needs.
  // packed_td runs channel groups (32 sequences a warp), packed_dt warp groups (one each).
  constexpr int K = 2;
  using M = mat<K>;
  // packed_td also with D = 48: groups straddle two sequences of different lengths (element-wise staging).
  int optin = 0;
  REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  const bool block_tiles_fit = optin >= 8 * 3 * 4096 + 9 * 32 * 16;
  for (const index_t D : {32, 48, 1}) {
    const bool channels = D > 1;
    const index_t N = channels ? 600 : 12000, long_rows = channels ? 20000 : 100000;
    std::vector<index_t> offsets{0};
    for (index_t i = 0; i < N; ++i)
      offsets.push_back(offsets.back() + (i == N / 3 || i == N - 1 ? long_rows : index_t(ptest::uniform(1, 9))));
    const index_t total = offsets.back();
    const auto view = [&](M* p) {
      return channels ? parascan::packed_td(p, offsets.data(), N, D) : parascan::packed_dt(p, offsets.data(), N, 1, total);
    };
    ptest::buffer<M> x(std::size_t(total * D)), y(std::size_t(total * D)), init(std::size_t(N * D)),
        fin(std::size_t(N * D));
    ptest::fill(x, random_mat<K>);
    ptest::fill(init, random_mat<K>);
    for (const auto& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true},
                          ptest::scan_flags{false, true, true, false}})
      for (const bool reduce : {false, true}) {
        INFO((channels ? "packed_td D = " + std::to_string(D) : std::string("packed_dt")) << ", " << ptest::describe(f)
                                                                                             << (reduce ? " reduce" : ""));
        const long long before = parascan::engine::channel_block_launches();
        CHECK(run_matrix_case<parascan::use_default_policy, K>(view, view, x, y, init, fin, f, reduce) <=
              1e-6 * (8 + 2 * std::sqrt(double(long_rows))) * K);
        // Prefix scans on channel groups run channel_block_lookback.cuh's single pass (8 warps x 3 stages
        // of 4 KiB and the 16-byte totals: 100.5 KiB of shared memory, where the device has it).
        const bool single_pass = channels && !reduce && block_tiles_fit;
        CHECK(parascan::engine::channel_block_launches() == before + (single_pass ? 1 : 0));
      }
  }
}

/// The most rows of any sequence of a packed batch.
index_t longest_sequence(const std::vector<index_t>& offsets) {
  index_t longest = 0;
  for (std::size_t q = 0; q + 1 < offsets.size(); ++q) longest = std::max(longest, offsets[q + 1] - offsets[q]);
  return longest;
}

/// The fp32 linear recurrence (storage S: float or bf16) over a packed_td batch, forward or reverse,
/// inclusive or exclusive, with or without initial / final states, against fp64 step by step; `launches`
/// counts the runs of the strategy under test, which must rise by `expected` a call. The outputs are
/// poisoned (NaN) before each call. Returns the number of calls.
template <class S>
int check_packed_linear_recurrence(const std::vector<index_t>& offsets, index_t D, std::atomic<long long>& launches,
                                   long long expected) {
  const index_t N = index_t(offsets.size()) - 1, total = offsets.back(), n = total * D;
  const index_t longest = longest_sequence(offsets);
  ptest::buffer<S> a{std::size_t(n)}, b{std::size_t(n)}, x{std::size_t(n)};
  ptest::buffer<float> init{std::size_t(N * D)}, fin{std::size_t(N * D)};
  ptest::fill(a, [] { return S(float(ptest::uniform(0.9, 1.0))); });
  ptest::fill(b, [] { return S(float(ptest::normal())); });
  ptest::fill(init, [] { return float(ptest::normal()); });
  const ptest::scan_flags flags[] = {
      {false, false, false, false}, {true, true, true, true}, {false, true, false, true}};
  for (const auto& f : flags) {
    INFO("packed_td D = " << D << " of " << sizeof(S) << "-byte values, " << ptest::describe(f));
    ptest::fill(x, [] { return S(NAN); });
    ptest::fill(fin, [] { return NAN; });
    parascan::options<float> opts;
    opts.exclusive = f.exclusive, opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.final = f.with_final ? fin.data() : nullptr;
    const long long before = launches;
    parascan::linear_recurrence(ptest::exec(), parascan::packed_td<const S>(a.data(), offsets.data(), N, D),
                                parascan::packed_td<const S>(b.data(), offsets.data(), N, D),
                                parascan::packed_td(x.data(), offsets.data(), N, D), opts);
    CHECK(launches == before + expected);
    x.download();
    fin.download();
    ptest::error_meter err, stored;
    double worst = 0;
    for (index_t q = 0; q < N; ++q) {
      const index_t len = offsets[std::size_t(q) + 1] - offsets[std::size_t(q)];
      for (index_t c = 0; c < D; ++c) {
        double state = f.with_initial ? init.host[std::size_t(q * D + c)] : 0.0;
        for (index_t k = 0; k < len; ++k) {
          const std::size_t i = std::size_t((offsets[std::size_t(q)] + (f.reverse ? len - 1 - k : k)) * D + c);
          const auto keep = [&](double got) {
            stored.add(got, state);
            worst = std::max(worst, std::fabs(got - state) / (1 + std::fabs(state)));
          };
          if (f.exclusive) keep(ptest::to_double(x.host[i]));
          state = ptest::to_double(a.host[i]) * state + ptest::to_double(b.host[i]);
          if (!f.exclusive) keep(ptest::to_double(x.host[i]));
        }
        if (f.with_final) err.add(fin.host[std::size_t(q * D + c)], state);
      }
    }
    const double fp32_bound = 1e-6 * (8 + 2 * std::sqrt(double(longest)));
    CHECK(err.relative() <= fp32_bound);
    CHECK(stored.relative() <= fp32_bound + 2 * ptest::eps_of<S>());
    CHECK(worst <= 20 * fp32_bound + ptest::eps_of<S>());
  }
  return int(std::size(flags));
}

/// fp32 logcumsumexp over a packed_td batch (every 97th element -inf), forward and reverse, against
/// fp64 step by step (tolerance as in check_log_space_stream below); `launches` must rise by `expected` a
/// call.
void check_packed_logcumsumexp(const std::vector<index_t>& offsets, index_t D, std::atomic<long long>& launches,
                               long long expected) {
  const index_t N = index_t(offsets.size()) - 1, n = offsets.back() * D;
  const index_t longest = longest_sequence(offsets);
  ptest::buffer<float> in{std::size_t(n)}, out{std::size_t(n)};
  index_t k = 0;
  ptest::fill(in, [&] { return ++k % 97 == 0 ? -INFINITY : float(3 * ptest::normal()); });
  for (const bool reverse : {false, true}) {
    INFO("logcumsumexp, packed_td D = " << D << (reverse ? ", reverse" : ""));
    ptest::fill(out, [] { return NAN; });
    parascan::options<float> opts;
    opts.reverse = reverse;
    const long long before = launches;
    parascan::logcumsumexp(ptest::exec(), parascan::packed_td<const float>(in.data(), offsets.data(), N, D),
                           parascan::packed_td(out.data(), offsets.data(), N, D), opts);
    CHECK(launches == before + expected);
    out.download();
    ptest::scaled_error_meter err;
    for (index_t q = 0; q < N; ++q) {
      const index_t len = offsets[std::size_t(q) + 1] - offsets[std::size_t(q)];
      for (index_t c = 0; c < D; ++c) {
        double m = -INFINITY;
        for (index_t t = 0; t < len; ++t) {
          const std::size_t i = std::size_t((offsets[std::size_t(q)] + (reverse ? len - 1 - t : t)) * D + c);
          m = ptest::log_add_exp(m, in.host[i]);
          err.add(out.host[i], m);
        }
      }
    }
    CHECK(err.worst <= 8 * ptest::eps_of<float>() * (1 + std::sqrt(double(longest))));
  }
}

TEST_CASE("channel groups of fewer than 32 channels: partial and mixed lanes, packed (total, 16 / 8 / 4)") {
  // Channel groups from 8 adjacent sequences (plan.hpp's channel_group_from), lanes of several sequences
  // in runs of adjacent lanes (the RUNS kernels, block.cuh's channel_group), lanes past the batch copying
  // nothing: packed (total, 16), (total, 8) and (total, 4) batches of mixed
  // lengths (lanes of different lengths in one warp), one sequence of 16, 8 or 4 channels (lanes past the
  // batch; 4: warp groups), three of 8 (and 8 lanes past the batch), each long enough to split for lack
  // of groups, and 500 of 1..400 rows (whole groups); prefix scans with every option (reverse, exclusive,
  // initial, final), fp32 and bf16 storage, logcumsumexp. (Not counted here: which kernels ran; host_plan
  // checks the plans.)
  std::atomic<long long> any{0};  // (no launch count to check)
  std::vector<index_t> mixed{0};
  for (int q = 0; q < 70; ++q) mixed.push_back(mixed.back() + 1 + index_t(ptest::uniform(0, 3000)));
  for (const index_t D : {16, 8, 4}) {
    check_packed_linear_recurrence<float>(mixed, D, any, 0);
    check_packed_linear_recurrence<ptest::bf16>(mixed, D, any, 0);
    check_packed_logcumsumexp(mixed, D, any, 0);
    // Many groups (500 sequences of 1..400 rows): whole groups rather than split ones.
    std::vector<index_t> many{0};
    for (int q = 0; q < 500; ++q) many.push_back(many.back() + 1 + index_t(ptest::uniform(0, 399)));
    check_packed_linear_recurrence<float>(many, D, any, 0);
    check_packed_linear_recurrence<ptest::bf16>(many, D, any, 0);
    check_packed_logcumsumexp(many, D, any, 0);
    const std::vector<index_t> one{0, 200003}, three{0, 70001, 70001 + 100003, 70001 + 100003 + 5};
    check_packed_linear_recurrence<float>(one, D, any, 0);
    check_packed_linear_recurrence<ptest::bf16>(one, D, any, 0);
    check_packed_logcumsumexp(one, D, any, 0);
    if (D == 8) {
      check_packed_linear_recurrence<float>(three, D, any, 0);
      check_packed_logcumsumexp(three, D, any, 0);
    }
  }
}

TEST_CASE("skewed packed batches: prefix scans in one pass, block tiles with a look-back") {
  // channel_block_lookback.cuh (plan.hpp's runs_channel_block_tiles): packed_td, many short sequences
  // (1..64 rows) and three long ones: a whole number of block tiles (78 of 512 fp32-pair rows: 384 staged
  // and 128 held a tile; 52 of the 768 staged bf16-pair rows), a row short of one, a row past one (the
  // last sequence); fp32 logcumsumexp holds rows too (tiles of 896). D = 64 (whole groups) and D = 40
  // (groups straddling sequences, a partial last group of 8 lanes), fp32 and bf16 storage (fp32 state),
  // against fp64 step by step. The block tiles need 98 KiB of shared memory (8 warps x 3 stages of 4 KiB
  // and the totals): where the device has less, dispatch keeps reduce-then-scan.
  int optin = 0;
  REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  const long long block_tiles = optin >= 8 * 3 * 4096 + 9 * 32 * 8 ? 1 : 0;
  const index_t N = 3001;
  std::vector<index_t> offsets{0};
  for (index_t i = 0; i < N; ++i)
    offsets.push_back(offsets.back() + (i == 7 ? 39936 : i == N / 2 ? 30719 : i == N - 1 ? 24577
                                                                                 : index_t(ptest::uniform(1, 64))));
  for (const index_t D : {64, 40}) {
    check_packed_linear_recurrence<float>(offsets, D, parascan::engine::channel_block_launches(), block_tiles);
    check_packed_linear_recurrence<ptest::bf16>(offsets, D, parascan::engine::channel_block_launches(), block_tiles);
    check_packed_logcumsumexp(offsets, D, parascan::engine::channel_block_launches(), block_tiles);
  }
  // Few groups of uneven lengths (the same long sequences among 40 short ones: 86 groups at D = 64, fewer
  // than the device runs at once) split ragged as well (plan.hpp), for the same tiles.
  std::vector<index_t> few{0};
  for (index_t i = 0; i < 43; ++i)
    few.push_back(few.back() + (i == 7 ? 39936 : i == 21 ? 30719 : i == 42 ? 24577 : index_t(ptest::uniform(1, 64))));
  check_packed_linear_recurrence<float>(few, 64, parascan::engine::channel_block_launches(), block_tiles);
  check_packed_logcumsumexp(few, 40, parascan::engine::channel_block_launches(), block_tiles);
  static_assert(parascan::engine::channel_block_held<parascan::input_pack<float, float>>() == 16);
  static_assert(parascan::engine::channel_block_held<parascan::input_pack<float>>() == 16);
  static_assert(parascan::engine::channel_block_held<parascan::input_pack<ptest::bf16, ptest::bf16>>() == 0);
}

TEST_CASE("channel groups of several warps splitting time: the linear recurrence a block a multiprocessor") {
  // Mixed lengths (1..300 rows, every fifth sequence 600..1300, one of 1337) run whole channel groups
  // longest first; fp32 pairs (8 bytes a step) a block a multiprocessor, bf16 pairs (4 bytes) two
  // (channel_slices.cuh's channel_slices_alone_pays). D = 64 and D = 40 (groups straddling sequences).
  static_assert(parascan::engine::channel_slices_alone_pays<parascan::ops::linear_recurrence<float>,
                                                            parascan::input_pack<float, float>>());
  static_assert(!parascan::engine::channel_slices_alone_pays<parascan::ops::linear_recurrence<float>,
                                                             parascan::input_pack<ptest::bf16, ptest::bf16>>());
  int sms = 0, optin = 0, per_multiprocessor = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&per_multiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0) == cudaSuccess);
  // A block of 8 warps x 3 stages of 4 KiB and the totals fits (else the one-warp groups run); padded past
  // half a multiprocessor only where that is more (an A100's 164 KiB: a block a multiprocessor already,
  // nothing padded; device.cuh's lone_block_shared).
  const int block = 8 * 3 * 4096 + 2 * 8 * 32 * 8;
  const long long fits = optin >= block ? 1 : 0;
  const long long lone = fits && std::min(per_multiprocessor / 2 + 16, optin) > block ? 1 : 0;
  const index_t N = 4 * sms + 3;
  std::vector<index_t> offsets{0};
  for (index_t i = 0; i < N; ++i)
    offsets.push_back(offsets.back() + (i == N / 2         ? 1337
                                        : i % 5 == 0       ? index_t(ptest::uniform(600, 1300))
                                                           : index_t(ptest::uniform(1, 300))));
  auto& launches = parascan::engine::channel_slices_launches();
  auto& lone_launches = parascan::engine::channel_slices_lone_launches();
  for (const index_t D : {64, 40}) {
    long long before = launches;
    const int fp32_calls = check_packed_linear_recurrence<float>(offsets, D, lone_launches, lone);
    CHECK(launches == before + fits * fp32_calls);  // the channel groups ran each call
    before = launches;
    const int bf16_calls = check_packed_linear_recurrence<ptest::bf16>(offsets, D, lone_launches, 0);
    CHECK(launches == before + fits * bf16_calls);
  }
}

/// Whether dispatch runs 2x2-matrix channel groups of `shape` as blocks of 8 warps (8 x 8-row tiles).
bool takes_channel_slices(const parascan::batch_shape& shape, int sms) {
  const parascan::policy_values mat2{128, 4, 4, parascan::combine_variant::warp, 16};
  return parascan::runs_channel_slices(parascan::plan_scan(mat2, parascan::group_kind::channel, shape, sms, 1), shape,
                                       64, sms, 8);
}

TEST_CASE("channel groups of several warps splitting time: packed batches of mixed lengths") {
  // channel_slices.cuh: whole groups a block of warps, each warp a slice of every tile, when lengths differ
  // (plan.hpp's runs_channel_slices: the longest at least 3/2 of the mean). D = 32: a group is one
  // sequence; D = 48: groups straddle two sequences of different lengths (element-wise staging, lanes
  // ending apart); D = 33 leaves a partial group. Lengths just under / over a tile of 8 x 8 2x2-matrix
  // rows, and zero.
  constexpr int K = 2;
  using M = mat<K>;
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  for (const index_t D : {32, 48, 33}) {
    const index_t N = 4 * sms + 3;  // whole groups: at least two a multiprocessor
    std::vector<index_t> offsets{0};
    for (index_t i = 0; i < N; ++i) {
      const index_t len = i % 7 == 3   ? 0
                          : i % 5 == 0 ? index_t(ptest::uniform(600, 1300))
                                       : index_t(ptest::uniform(1, 300));
      offsets.push_back(offsets.back() + (i == N / 2 ? 1337 : i == N / 3 ? 64 : i == N / 4 ? 65 : len));
    }
    const index_t total = offsets.back();
    REQUIRE(takes_channel_slices(parascan::batch_shape{N * D, 1337, true, total * D}, sms));
    const auto view = [&](M* p) { return parascan::packed_td(p, offsets.data(), N, D); };
    ptest::buffer<M> x(std::size_t(total * D)), y(std::size_t(total * D)), init(std::size_t(N * D)),
        fin(std::size_t(N * D));
    ptest::fill(x, random_mat<K>);
    ptest::fill(init, random_mat<K>);
    for (const auto& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true},
                          ptest::scan_flags{false, true, true, false}, ptest::scan_flags{true, false, false, true}})
      for (const bool reduce : {false, true}) {
        INFO("packed_td D = " << D << ", " << N << " sequences, " << ptest::describe(f) << (reduce ? " reduce" : ""));
        CHECK(run_matrix_case<parascan::use_default_policy, K>(view, view, x, y, init, fin, f, reduce) <=
              1e-6 * (8 + 2 * std::sqrt(1337.0)) * K);
      }
  }
}

TEST_CASE("channel groups of several warps splitting time: too few groups for one warp each") {
  // (1, T, 32 * G - 5) btd: G groups (the last partial), enough for 8 warps each to make four a
  // multiprocessor, too few for the one-warp groups (plan.hpp's runs_channel_slices).
  constexpr int K = 2;
  using M = mat<K>;
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  const index_t groups = (sms + 1) / 2 + 1, T = 3001;
  const index_t D = 32 * groups - 5;  // a partial last group
  REQUIRE(takes_channel_slices(parascan::batch_shape{D, T, true}, sms));
  ptest::buffer<M> x{std::size_t(T * D)}, y{std::size_t(T * D)}, init{std::size_t(D)}, fin{std::size_t(D)};
  ptest::fill(x, random_mat<K>);
  ptest::fill(init, random_mat<K>);
  const auto view = [&](M* p) { return parascan::btd(p, 1, T, D); };
  for (const auto& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true}})
    for (const bool reduce : {false, true}) {
      INFO("btd (1, " << T << ", " << D << "), " << ptest::describe(f) << (reduce ? " reduce" : ""));
      CHECK(run_matrix_case<parascan::use_default_policy, K>(view, view, x, y, init, fin, f, reduce) <=
            1e-6 * (8 + 2 * std::sqrt(double(T))) * K);
    }
}

TEST_CASE("streamed sequences: a block a long sequence, vector loads, every option") {
  // Enough sequences for four waves of blocks (block_stream.cuh), lengths on the tile grid and off it (the
  // last tile ragged), and views the stream declines (strided time, packed): matrices, so that an order
  // error shows. 16-byte matrices stay aligned one element on.
  constexpr int K = 2;
  using M = mat<K>;
  using streamed = parascan::streamed_sequences<parascan::cuda_policy<64, 2, parascan::combine_variant::warp>, 64,
                                                parascan::cuda_policy<256, 2, parascan::combine_variant::block, 1, 1>>;
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  const index_t D = 2 * sms + 7;  // 2 * D sequences: four waves of one block a multiprocessor
  for (const index_t T : {512, 1000, 3000})
    for (const index_t skew : {0, 1}) {
      REQUIRE(parascan::runs_stream(2 * D, T, sms, 1, 64, 512));
      ptest::buffer<M> x(std::size_t(2 * D * T + 1)), y(std::size_t(2 * D * T + 1)), init(std::size_t(2 * D)),
          fin(std::size_t(2 * D));
      ptest::fill(x, random_mat<K>);
      ptest::fill(init, random_mat<K>);
      const auto view = [&](M* p) { return parascan::bdt(p + skew, 2, D, T); };
      for (const auto& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true},
                            ptest::scan_flags{false, true, false, true}, ptest::scan_flags{true, false, true, false}}) {
        INFO("bdt (2, " << D << ", " << T << ") skew " << skew << ", " << ptest::describe(f));
        const long long before = parascan::engine::stream_launches();
        CHECK(run_matrix_case<streamed, K>(view, view, x, y, init, fin, f, false) <=
              1e-6 * (8 + 2 * std::sqrt(double(T))) * K);
        CHECK(parascan::engine::stream_launches() == before + 1);  // it was the stream that ran
      }
    }
  // Small batches (under four waves of blocks) and the other layouts run the warp policy.
  check_strategy<streamed, K>(false);
}

// The linear recurrence over (2, D, T) under its default policy, stored as S (fp32 state): streamed in
// tiles of `tile` steps (0: not streamed) from a 16-byte aligned base pointer, the warp pipeline from one
// element on; checked against fp64. D gives the stream's four waves of `blocks` a multiprocessor.
template <class S>
void check_default_stream(index_t T, int tile, int blocks) {
  const index_t B = 2, D = stream_channels(blocks), n = B * D * T;
  ptest::buffer<S> a(std::size_t(n + 1)), b(std::size_t(n + 1)), x(std::size_t(n + 1));
  ptest::buffer<float> init(std::size_t(B * D)), fin(std::size_t(B * D));
  ptest::fill(a, [] { return S(float(ptest::uniform(0.9, 1.0))); });
  ptest::fill(b, [] { return S(float(ptest::normal())); });
  ptest::fill(init, [] { return float(ptest::normal()); });
  ptest::fill(fin, [] { return NAN; });  // read back even where not written
  for (const index_t skew : {0, 1})
  for (const auto& f : {ptest::scan_flags{false, false, false, false}, ptest::scan_flags{true, true, true, true}}) {
    INFO("bdt (2, " << D << ", " << T << ") of " << sizeof(S) << "-byte values, skew " << skew << ", "
                    << ptest::describe(f));
    const long long before = parascan::engine::stream_launches();
    parascan::engine::last_stream_tile() = 0;
    ptest::fill(x, [] { return S(NAN); });
    parascan::options<float> opts;
    opts.exclusive = f.exclusive, opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.final = f.with_final ? fin.data() : nullptr;
    parascan::linear_recurrence(ptest::exec(), parascan::bdt<const S>(a.data() + skew, B, D, T),
                                parascan::bdt<const S>(b.data() + skew, B, D, T),
                                parascan::bdt(x.data() + skew, B, D, T), opts);
    const bool streams = skew == 0 && tile != 0;
    CHECK(parascan::engine::stream_launches() == before + (streams ? 1 : 0));
    CHECK(parascan::engine::last_stream_tile() == (streams ? tile : 0));  // the rung the ladder promises
    x.download();
    fin.download();
    // fp32 state: the error grows like fp32's; the stored outputs add one rounding of S (relative). Also
    // step by step: a wrong step (an O(1) token) shows even where the norm over 2^25 steps would hide it.
    ptest::error_meter err, stored;
    double worst = 0;
    const auto keep = [&](double got, double ref) {
      stored.add(got, ref);
      worst = std::max(worst, std::fabs(got - ref) / (1 + std::fabs(ref)));
    };
    for (index_t s = 0; s < B * D; ++s) {
      double state = f.with_initial ? init.host[std::size_t(s)] : 0.0;
      for (index_t k = 0; k < T; ++k) {
        const std::size_t i = std::size_t(skew + s * T + (f.reverse ? T - 1 - k : k));
        if (f.exclusive) keep(ptest::to_double(x.host[i]), state);
        state = ptest::to_double(a.host[i]) * state + ptest::to_double(b.host[i]);
        if (!f.exclusive) keep(ptest::to_double(x.host[i]), state);
      }
      if (f.with_final) err.add(fin.host[std::size_t(s)], state);
    }
    const double fp32_bound = 1e-6 * (8 + 2 * std::sqrt(double(T)));
    CHECK(err.relative() <= fp32_bound);
    CHECK(stored.relative() <= fp32_bound + 2 * ptest::eps_of<S>());
    CHECK(worst <= 20 * fp32_bound + ptest::eps_of<S>());
  }
}

// Which default policy a pack gets: 2-byte packs the narrow one (its own stream), mixed widths the
// widened fp32 policy (no stream, as measured), fp32 the fp32 stream.
using recurrence = parascan::ops::linear_recurrence<float>;
template <class... T>
using default_for =
    parascan::detail::cuda_policy_for<parascan::use_default_policy, recurrence, parascan::input_pack<T...>>;
using pair_default = parascan::default_policy_t<recurrence, parascan::arch::sm90>;
static_assert(std::is_same<default_for<ptest::bf16, ptest::bf16>, pair_default::narrow_policy>::value &&
              std::is_same<default_for<ptest::f16, ptest::f16>, pair_default::narrow_policy>::value);
static_assert(!parascan::detail::has_stream_policy<default_for<ptest::bf16, float>>::value &&
              default_for<ptest::bf16, float>::items == 8);
static_assert(std::is_same<default_for<float, float>, pair_default>::value);

TEST_CASE("streamed sequences: the linear recurrence under its default policy, fp32 and bf16 / fp16 storage") {
  // Every rung of the pair ladders (policy.hpp), on its tile grid and ragged, and a length that pads too
  // much for every rung (the warps). From 2048 steps (fp32; 2-byte storage from 1024) the rungs depend on
  // the device's memory bandwidth (policy.hpp, memory_bandwidth).
  const bool fast = parascan::engine::memory_from_4_5_tbs();
  INFO("device memory from 4.5 TB/s: " << fast);
  SUBCASE("fp32") {
    check_default_stream<float>(128, 128, 16);   // 64 x 2
    check_default_stream<float>(132, 0, 16);     // 124 steps of padding a 128-step tile: the warps
    check_default_stream<float>(256, 256, 16);   // 64 x 4
    check_default_stream<float>(1000, 1024, 8);  // 256 x 4, ragged
    check_default_stream<float>(2048, fast ? 1024 : 2048, fast ? 8 : 4);  // 256 x 4 / 512 x 4
    check_default_stream<float>(5000, 1024, 8);  // 256 x 4 where 4096-step tiles would pad 39%
    check_default_stream<float>(8192, fast ? 2048 : 4096, fast ? 4 : 2);  // 512 x 4 / 1024 x 4
    check_default_stream<float>(65536, 4096, 2);  // 1024 x 4 (from 65536 steps on faster devices)
  }
  SUBCASE("2-byte storage") {
    check_default_stream<ptest::bf16>(1024, 1024, 12);                            // 128 x 8
    check_default_stream<ptest::bf16>(2048, fast ? 1024 : 2048, fast ? 12 : 6);   // 128 x 8 / 256 x 8
    check_default_stream<ptest::bf16>(8192, fast ? 1024 : 4096, fast ? 12 : 3);   // 128 x 8 / 512 x 8 (spills)
    check_default_stream<ptest::f16>(8192, fast ? 1024 : 4096, fast ? 12 : 3);
  }
}

// linear_recurrence_backward over (2, D, T) under its own ladder (ops/linear_recurrence.hpp), every view
// stored as S: the rung that runs (`tile` steps), and both gradients and dL/dx0 against an fp64 adjoint,
// for the forward in both directions (the states read one step behind, or ahead, as a shifted input whose
// runs are completed across lanes and, at a chunk's edge, from memory or the boundary), with and without
// initial states (x[-1]) and a final-state gradient.
namespace {
template <class S>
void check_backward_stream(index_t T, int tile, int blocks) {
  const index_t B = 2, D = stream_channels(blocks), count = B * D;
  const std::size_t n = std::size_t(count * T);
  ptest::buffer<S> a(n), x(n), dy(n), da(n), db(n);
  const std::size_t sequences_n = std::size_t(count);
  ptest::buffer<float> init(sequences_n), gf(sequences_n), dx0(sequences_n);
  ptest::fast_random g;
  ptest::fill(a, [&] { return S(float(g.uniform(0.9, 1.0))); });
  ptest::fill(x, [&] { return S(float(g.normal())); });
  ptest::fill(dy, [&] { return S(float(g.normal())); });
  ptest::fill(init, [&] { return float(g.normal()); });
  ptest::fill(gf, [&] { return float(g.normal()); });
  const auto in = [&](ptest::buffer<S>& b) { return parascan::bdt<const S>(b.data(), B, D, T); };
  const auto out = [&](ptest::buffer<S>& b) { return parascan::bdt(b.data(), B, D, T); };
  for (const bool reverse : {false, true})
    for (const bool ends : {false, true}) {
      INFO("backward over (2, " << D << ", " << T << ") of " << sizeof(S) << "-byte values, forward reverse "
                                << reverse << ", initial and final-state gradient " << ends);
      ptest::fill(da, [] { return S(NAN); });
      ptest::fill(db, [] { return S(NAN); });
      ptest::fill(dx0, [] { return NAN; });
      parascan::backward_options<float> opts;
      opts.reverse = reverse;
      opts.initial = ends ? init.data() : nullptr;
      opts.grad_final = ends ? gf.data() : nullptr;
      opts.grad_initial = dx0.data();
      const long long before = parascan::engine::stream_launches();
      parascan::engine::last_stream_tile() = 0;
      parascan::linear_recurrence_backward(ptest::exec(), in(a), in(x), in(dy), out(da), out(db), opts);
      CHECK(parascan::engine::stream_launches() == before + 1);
      CHECK(parascan::engine::last_stream_tile() == tile);
      da.download(), db.download(), dx0.download();
      // Each gradient relative to the size of its terms (fp32 arithmetic), plus one rounding of S.
      double worst = 0, worst_x0 = 0;
      for (index_t s = 0; s < count; ++s) {
        const auto at = [&](index_t p) { return std::size_t(s * T + (reverse ? T - 1 - p : p)); };
        double carried = ends ? gf.host[std::size_t(s)] : 0.0, scale = std::fabs(carried);
        for (index_t p = T - 1; p >= 0; --p) {  // forward positions, back to front
          const std::size_t i = at(p);
          const double x_prev = p > 0 ? ptest::to_double(x.host[at(p - 1)]) : (ends ? init.host[std::size_t(s)] : 0.0);
          const double grad = ptest::to_double(dy.host[i]) + carried;
          const double grad_scale = std::fabs(ptest::to_double(dy.host[i])) + scale;
          keep_worst(worst, ptest::to_double(db.host[i]), grad, grad_scale);
          keep_worst(worst, ptest::to_double(da.host[i]), grad * x_prev, grad_scale * std::fabs(x_prev));
          carried = ptest::to_double(a.host[i]) * grad, scale = std::fabs(ptest::to_double(a.host[i])) * grad_scale;
        }
        keep_worst(worst_x0, dx0.host[std::size_t(s)], carried, scale);
      }
      const double fp32_bound = 1e-6 * (8 + 2 * std::sqrt(double(T)));
      CHECK(worst <= fp32_bound + 2 * ptest::eps_of<S>());
      CHECK(worst_x0 <= fp32_bound);
    }
}
}  // namespace

TEST_CASE("streamed sequences: linear_recurrence_backward under its default ladder, fp32 and bf16 storage") {
  // From 2048 steps the rungs depend on the device's memory bandwidth; from 4.5 TB/s they prefetch the
  // next tile into the L2 (the reverse scan's addresses run backwards: the tile before in memory).
  const bool fast = parascan::engine::memory_from_4_5_tbs();
  INFO("device memory from 4.5 TB/s: " << fast);
  SUBCASE("fp32") {
    check_backward_stream<float>(256, 256, 16);                         // 64 x 4
    check_backward_stream<float>(1000, 1024, 4);                        // 256 x 4, ragged
    check_backward_stream<float>(4096, fast ? 1024 : 2048, fast ? 4 : 2);  // 256 x 4 prefetching / 512 x 4
    if (fast) check_backward_stream<float>(9500, 2048, 2);              // 512 x 4 prefetching, ragged
  }
  SUBCASE("bf16") {
    check_backward_stream<ptest::bf16>(512, 512, 16);                          // 64 x 8
    check_backward_stream<ptest::bf16>(3000, 1024, 8);                         // 128 x 8 (prefetching from 4.5 TB/s), ragged
    check_backward_stream<ptest::bf16>(8192, 2048, 4);                         // 256 x 8 (the same), its spill allowed
  }
}

// A user's scan with a shifted input on the stream: the fp32 recurrence over (2, D, 256) whose gates are
// read `lag` steps away (per-sequence boundaries), scanned forward and in reverse, so that each run is
// completed from the lane before and from the lane after, with the chunk's edge on lane 0 and on lane 31
// (the backward above meets two of the four); lag 2 declines the stream (the warps), with the same result.
namespace {
void check_shifted_stream(index_t lag, bool reverse) {
  const index_t B = 2, D = stream_channels(16), T = 256, count = B * D;
  const std::size_t n = std::size_t(count * T);
  const std::size_t sequences_n = std::size_t(count);
  ptest::buffer<float> a(n), b(n), y(n), edge(sequences_n);
  ptest::fast_random g;
  ptest::fill(a, [&] { return float(g.uniform(0.9, 1.0)); });
  ptest::fill(b, [&] { return float(g.normal()); });
  ptest::fill(edge, [&] { return float(g.uniform(0.5, 1.0)); });
  ptest::fill(y, [] { return NAN; });
  INFO("gates shifted by " << lag << " over (2, " << D << ", 256), reverse " << reverse);
  parascan::options<float> opts;
  opts.reverse = reverse;
  const long long before = parascan::engine::stream_launches();
  parascan::engine::last_stream_tile() = 0;
  parascan::prefix_scan(ptest::exec(), parascan::ops::linear_recurrence<float>{},
                        parascan::inputs(parascan::shifted(parascan::bdt<const float>(a.data(), B, D, T), lag,
                                                           static_cast<const float*>(edge.data())),
                                         parascan::bdt<const float>(b.data(), B, D, T)),
                        parascan::bdt(y.data(), B, D, T), opts);
  const bool streams = lag == 1 || lag == -1;
  CHECK(parascan::engine::stream_launches() == before + (streams ? 1 : 0));
  CHECK(parascan::engine::last_stream_tile() == (streams ? 256 : 0));
  y.download();
  double worst = 0;
  for (index_t s = 0; s < count; ++s) {
    double x = 0, size = 0;
    for (index_t k = 0; k < T; ++k) {
      const index_t t = reverse ? T - 1 - k : k, u = t + lag;
      const double gate = u >= 0 && u < T ? a.host[std::size_t(s * T + u)] : edge.host[std::size_t(s)];
      const double token = b.host[std::size_t(s * T + t)];
      x = gate * x + token, size = gate * size + std::fabs(token);
      keep_worst(worst, y.host[std::size_t(s * T + t)], x, size);
    }
  }
  CHECK(worst <= 1e-6 * (8 + 2 * std::sqrt(double(T))));
}
}  // namespace

TEST_CASE("streamed sequences: a shifted input, lag -1 and +1, forward and reverse (lag 2: the warps)") {
  for (const index_t lag : {index_t(-1), index_t(1), index_t(2)})
    for (const bool reverse : {false, true}) check_shifted_stream(lag, reverse);
}

// logcumsumexp and the log-space recurrence over (2, D, T) under their own defaults (policy.hpp's
// costly_combine_streams): the rung that runs (`tile` steps), and the results against fp64 with -inf
// log-values mixed in (tolerance as in cases/logsumexp.hpp and cases/log_linear_recurrence.hpp).
namespace {
void check_log_space_stream(index_t T, int tile, int recurrence_tile, int blocks) {
  const index_t B = 2, D = stream_channels(blocks);
  const std::size_t n = std::size_t(B * D * T);
  ptest::buffer<float> la(n), lb(n), y(n);
  ptest::fast_random g;
  ptest::fill(la, [&] { return float(g.uniform(-0.3, 0.31)); });
  ptest::fill(lb, [&] { return g.uniform(0, 1) < 0.05 ? -INFINITY : float(g.uniform(-20, 20)); });
  const auto view = [&](float* p) { return parascan::bdt(p, B, D, T); };
  const double tol = 8 * ptest::eps_of<float>() * (1 + std::sqrt(double(T)));
  for (const bool recurrence : {false, true}) {
    INFO(std::string(recurrence ? "log_linear_recurrence" : "logcumsumexp") << " over (2, " << D << ", " << T
                                                                               << ")");
    ptest::fill(y, [] { return NAN; });
    const long long before = parascan::engine::stream_launches();
    parascan::engine::last_stream_tile() = 0;
    if (recurrence)
      parascan::log_linear_recurrence(ptest::exec(), parascan::bdt<const float>(la.data(), B, D, T),
                                      parascan::bdt<const float>(lb.data(), B, D, T), view(y.data()));
    else
      parascan::logcumsumexp(ptest::exec(), parascan::bdt<const float>(lb.data(), B, D, T), view(y.data()));
    CHECK(parascan::engine::stream_launches() == before + 1);
    CHECK(parascan::engine::last_stream_tile() == (recurrence ? recurrence_tile : tile));
    y.download();
    ptest::scaled_error_meter err;
    for (index_t s = 0; s < B * D; ++s) {
      double c = -INFINITY;
      for (index_t t = 0; t < T; ++t) {
        const std::size_t i = std::size_t(s * T + t);
        c = ptest::log_add_exp(recurrence ? la.host[i] + c : c, lb.host[i]);
        err.add(y.host[i], c);
      }
    }
    CHECK(err.worst <= tol);
  }
}
}  // namespace

TEST_CASE("streamed sequences: logcumsumexp and the log-space recurrence under their default ladder") {
  // From 2048 steps on devices from 4.5 TB/s, logcumsumexp prefetches the next tile into the L2 (64 x 8,
  // 128 x 8 from 16384 steps); the log-space recurrence keeps 128 x 8.
  const bool fast = parascan::engine::memory_from_4_5_tbs();
  INFO("device memory from 4.5 TB/s: " << fast);
  check_log_space_stream(256, 256, 256, 16);                  // 64 x 4
  check_log_space_stream(1024, 1024, 1024, 8);                // 128 x 8
  check_log_space_stream(4000, fast ? 512 : 1024, 1024, 16);  // 64 x 8 / 128 x 8, the last tile ragged
  if (fast) check_log_space_stream(16500, 1024, 1024, 8);      // 128 x 8 prefetching, ragged
}

// logcumsumexp_backward over (2, D, T) of fp32 on the stream, in both of its forms: the plain adjoint (no
// end gradients) and the recurrence form (a final-value gradient and dL/d(initial), which also reads y
// one step behind), forward in both directions, from the forward's own outputs with -inf inputs among
// them; each gradient dL/dx[t] = exp(x[t]) (sum over u >= t of dy[u] exp(-y[u]) + gf exp(-F)) against
// fp64, relative to the sum of its terms' sizes.
namespace {
void check_logcumsumexp_backward_stream(index_t T, int blocks) {
  const index_t B = 2, D = stream_channels(blocks), count = B * D;
  const std::size_t n = std::size_t(count * T), sequences_n = std::size_t(count);
  ptest::buffer<float> x(n), y(n), dy(n), dx(n), init(sequences_n), fin(sequences_n), gf(sequences_n),
      gi(sequences_n);
  ptest::fast_random g;
  ptest::fill(x, [&] { return g.uniform(0, 1) < 0.05 ? -INFINITY : float(g.uniform(-20, 20)); });
  ptest::fill(dy, [&] { return float(g.normal()); });
  ptest::fill(init, [&] { return float(g.uniform(-20, 20)); });
  ptest::fill(gf, [&] { return float(g.normal()); });
  const auto in = [&](ptest::buffer<float>& b) { return parascan::bdt<const float>(b.data(), B, D, T); };
  const auto out = [&](ptest::buffer<float>& b) { return parascan::bdt(b.data(), B, D, T); };
  for (const bool reverse : {false, true})
    for (const bool ends : {false, true}) {
      INFO("logcumsumexp_backward over (2, " << D << ", " << T << "), forward reverse " << reverse
                                              << ", initial and final-value gradient " << ends);
      parascan::options<float> forward;
      forward.reverse = reverse, forward.initial = ends ? init.data() : nullptr, forward.final = fin.data();
      parascan::logcumsumexp(ptest::exec(), in(x), out(y), forward);
      ptest::fill(dx, [] { return NAN; });
      ptest::fill(gi, [] { return NAN; });
      parascan::backward_options<float> opts;
      opts.reverse = reverse;
      opts.initial = forward.initial;
      opts.grad_final = ends ? gf.data() : nullptr;
      opts.grad_initial = ends ? gi.data() : nullptr;
      const long long before = parascan::engine::stream_launches();
      parascan::engine::last_stream_tile() = 0;
      parascan::logcumsumexp_backward(ptest::exec(), in(x), in(y), in(dy), out(dx), opts);
      CHECK(parascan::engine::stream_launches() == before + 1);
      CHECK(parascan::engine::last_stream_tile() > 0);
      y.download(), dx.download(), fin.download(), gi.download();
      double worst = 0;
      for (index_t s = 0; s < count; ++s) {
        const auto at = [&](index_t p) { return std::size_t(s * T + (reverse ? T - 1 - p : p)); };
        const double final_value = fin.host[std::size_t(s)];
        // sum over later outputs u of dy[u] exp(-y[u]) (the final value's gradient counts as one more).
        double sum = 0, size = 0;
        if (ends && final_value != -INFINITY)
          sum = gf.host[std::size_t(s)] * std::exp(-final_value), size = std::fabs(sum);
        for (index_t p = T - 1; p >= 0; --p) {
          const std::size_t i = at(p);
          if (y.host[i] != -INFINITY) {
            const double w = std::exp(-double(y.host[i]));
            sum += dy.host[i] * w, size += std::fabs(dy.host[i]) * w;
          }
          const double e = std::exp(double(x.host[i]));
          keep_worst(worst, dx.host[i], e * sum, e * size);
        }
        if (ends) keep_worst(worst, gi.host[std::size_t(s)], std::exp(double(init.host[std::size_t(s)])) * sum,
                             std::exp(double(init.host[std::size_t(s)])) * size);
      }
      CHECK(worst <= 8 * ptest::eps_of<float>() * (1 + std::sqrt(double(T))));
    }
}
}  // namespace

TEST_CASE("streamed sequences: logcumsumexp_backward, plain and with end gradients, forward and reverse") {
  // Sequences for four waves at 16 blocks a multiprocessor: whichever rung the spill checks leave for
  // either form (the recurrence form, four inputs, declined the 512 x 4 rung at 4 blocks' worth).
  check_logcumsumexp_backward_stream(1024, 16);
  check_logcumsumexp_backward_stream(4000, 16);  // the last tile ragged
}

// cumsum over (2, D, T) under the scalar ladder: the rung that runs and every step against fp64; and a view
// whose sequences start on 16 bytes but end off them (T = 4090 floats, 4092 apart), which the stream must
// decline (its reverse chunks are aligned to the end): the warps run it and agree.
namespace {
void check_sum_stream(index_t T, index_t spacing, int tile, int blocks, bool reverse) {
  const index_t B = 2, D = stream_channels(blocks);
  const std::size_t n = std::size_t(B * D * spacing);
  ptest::buffer<float> x(n), y(n);
  ptest::fill(x, [] { return float(ptest::normal()); });
  ptest::fill(y, [] { return NAN; });
  const auto view = [&](float* p) { return parascan::strided(p, B, D, D * spacing, spacing, T, 1); };
  INFO("cumsum over (2, " << D << ", " << T << "), sequences " << spacing << " apart, reverse " << reverse);
  const long long before = parascan::engine::stream_launches();
  parascan::engine::last_stream_tile() = 0;
  parascan::options<float> opts;
  opts.reverse = reverse;
  parascan::cumsum(ptest::exec(), view(x.data()), view(y.data()), opts);
  CHECK(parascan::engine::stream_launches() == before + (tile != 0 ? 1 : 0));
  CHECK(parascan::engine::last_stream_tile() == tile);
  y.download();
  double worst = 0;
  for (index_t s = 0; s < B * D; ++s) {
    double c = 0, size = 0;
    for (index_t k = 0; k < T; ++k) {
      const std::size_t i = std::size_t(s * spacing + (reverse ? T - 1 - k : k));
      c += x.host[i];
      size += std::fabs(x.host[i]);
      worst = std::max(worst, std::fabs(y.host[i] - c) / (1 + size));
    }
  }
  CHECK(worst <= 4 * ptest::eps_of<float>() * (1 + std::sqrt(double(T))));
}
}  // namespace

TEST_CASE("streamed sequences: cumsum under the scalar ladder; a view ending off 16 bytes declines") {
  // Below 4.5 TB/s 512 x 4 from 4096 steps and 1024 x 4 from 8192, prefetching the next tile into the L2;
  // from 4.5 TB/s 256 x 4 prefetching too, 512 x 4 from 8192.
  const bool fast = parascan::engine::memory_from_4_5_tbs();
  INFO("device memory from 4.5 TB/s: " << fast);
  check_sum_stream(2048, 2048, 1024, 8, false);                          // 256 x 4
  check_sum_stream(4096, 4096, fast ? 1024 : 2048, fast ? 8 : 4, true);  // 256 x 4 / 512 x 4, reverse
  check_sum_stream(8192, 8192, fast ? 2048 : 4096, fast ? 4 : 2, true);  // 512 x 4 / 1024 x 4, reverse
  // The last tile ragged: 1024 x 4 would pad more than an eighth, so 512 x 4 runs on both.
  check_sum_stream(9500, 9500, 2048, 4, false);
  check_sum_stream(4090, 4092, 0, 8, true);      // 4090 * 4 bytes: off 16 at the end (256 x 4 would pad 6)
  check_sum_stream(4090, 4092, 0, 8, false);
}
