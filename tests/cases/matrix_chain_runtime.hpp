// Cases for ops/runtime_matrix_chain.hpp: chains of matrices whose size is known only at run time, against
// an fp64 sequential reference. Sizes that no warp divides (1, 3, 17, 33, and on the GPU 64 and 130), row-
// and column-major, padded leading dimensions, chains interleaved in time (time-major) or one after
// another with gaps, lengths 0 to 1000 (odd ones: every level of the GPU's tree has a leftover), every
// option, both orders, the reduction, one chain or few large ones (strided calls on the GPU) and the
// others (pointer arrays);
// nothing written outside the outputs; bad arguments refused with
// nothing written; on the GPU the opt-in TF32 and bf16 arithmetic within their precision.
#include <cmath>
#include <cstdlib>
#include <string>

#include <parascan/ops/runtime_matrix_chain.hpp>
#if defined(__CUDACC__)
#include <parascan/cuda_matrices.cuh>
#endif

#include "support/runtime_chains.hpp"

namespace {
using parascan::chain_order;
using parascan::matrix_math;
using parascan::matrix_storage;
using ptest::index_t;
using dmat = Eigen::MatrixXd;

using ptest::placement;
using ptest::random_factor;
using ptest::unit_roundoff;

struct chain_case {
  placement in, out;
  chain_order order = chain_order::left_to_right;
  bool reverse = false, exclusive = false, initial = false, final = false;
  matrix_math math = matrix_math::exact;

  std::string describe() const {
    return "N=" + std::to_string(in.N) + " count=" + std::to_string(in.count) + " T=" + std::to_string(in.T) +
           " ld=" + std::to_string(in.ld) + "/" + std::to_string(out.ld) +
           (in.storage == matrix_storage::row_major ? " in:row" : " in:col") +
           (out.storage == matrix_storage::row_major ? " out:row" : " out:col") + (in.time_major ? " time-major" : "") +
           (order == chain_order::right_to_left ? " right_to_left" : "") + (reverse ? " reverse" : "") +
           (exclusive ? " exclusive" : "") + (initial ? " initial" : "") + (final ? " final" : "") +
           (math == matrix_math::tf32 ? " tf32" : math == matrix_math::bf16 ? " bf16" : "");
  }
};

/// Runs matrix_chain and matrix_chain_product on one case and checks every output, the final and result
/// matrices and the padding around them.
template <class S>
void check_runtime_chain(const chain_case& c) {
  INFO(ptest::backend_name << " " << c.describe());
  const index_t count = c.in.count, T = c.in.T, N = c.in.N, NN = N * N;
  ptest::fast_random g;
  ptest::buffer<S> in(std::size_t(c.in.scalars())), out(std::size_t(c.out.scalars())),
      init(std::size_t(count * NN + 1)), fin(std::size_t(count * NN + 1)), total(std::size_t(count * NN + 1));
  const S nan = std::numeric_limits<S>::quiet_NaN();
  for (auto* b : {&in, &out, &fin, &total}) std::fill(b->host.begin(), b->host.end(), nan);
  std::vector<dmat> m(std::size_t(count * T));
  std::vector<dmat> start(static_cast<std::size_t>(count));
  for (index_t s = 0; s < count; ++s)
    for (index_t t = 0; t < T; ++t) {
      dmat& x = m[std::size_t(s * T + t)];
      x = random_factor(g, N, g.uniform(0.95, 1.05)).template cast<S>().template cast<double>();
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) in.host[std::size_t(c.in.entry(s, t, i, j))] = S(x(i, j));
    }
  // initial (and result) matrices are dense, stored like the output (like the input for the result).
  const auto dense = [&](matrix_storage st, index_t s, index_t i, index_t j) {
    return std::size_t(s * NN + (st == matrix_storage::column_major ? i + j * N : i * N + j));
  };
  for (index_t s = 0; s < count; ++s) {
    start[std::size_t(s)] = random_factor(g, N, g.uniform(0.5, 2)).template cast<S>().template cast<double>();
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) init.host[dense(c.out.storage, s, i, j)] = S(start[std::size_t(s)](i, j));
  }
  in.upload();
  init.upload();
  out.upload();
  fin.upload();
  total.upload();

  parascan::matrix_options<S> o;
  o.reverse = c.reverse;
  o.exclusive = c.exclusive;
  o.initial = c.initial ? init.data() : nullptr;
  o.final = c.final ? fin.data() : nullptr;
  o.math = c.math;
  const auto factors = c.in.view<const S>(in.data());
  if (c.order == chain_order::left_to_right)
    parascan::matrix_chain(ptest::exec(), factors, c.out.view(out.data()), o);
  else
    parascan::matrix_chain<chain_order::right_to_left>(ptest::exec(), factors, c.out.view(out.data()), o);
  // The reduction reads its initial matrices stored like the input.
  for (index_t s = 0; s < count; ++s)
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) init.host[dense(c.in.storage, s, i, j)] = S(start[std::size_t(s)](i, j));
  init.upload();
  o.exclusive = false;
  o.final = nullptr;
  if (c.order == chain_order::left_to_right)
    parascan::matrix_chain_product(ptest::exec(), factors, total.data(), o);
  else
    parascan::matrix_chain_product<chain_order::right_to_left>(ptest::exec(), factors, total.data(), o);
  out.download();
  fin.download();
  total.download();

  // Exact arithmetic: a product rounds about sqrt(N) ulps; TF32 / bf16: the rounding of its two operands
  // dominates, about sqrt(2) units of their precision a product (TF32 1.5: chains of 300 256 x 256 factors
  // read up to 1.08 of one unit, through cuBLAS and the panels alike; bf16 1). Errors add up like sqrt(T);
  // 2: the GPU's tree.
  const double per_product =
      c.math == matrix_math::exact ? std::sqrt(double(N)) : c.math == matrix_math::tf32 ? 1.5 : 1.0;
  const double tol = 4 * unit_roundoff<S>(c.math) * per_product * (1 + std::sqrt(double(T))) * 2;
  double worst = 0;
  std::vector<bool> written(out.host.size(), false);
  const auto read = [&](const std::vector<S>& b, auto&& index) {
    dmat x(N, N);
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) x(i, j) = double(b[std::size_t(index(i, j))]);
    return x;
  };
  const auto compare = [&](const dmat& got, const dmat& ref) {
    ptest::keep_worst(worst, ptest::relative_frobenius(got, ref));
  };
  for (index_t s = 0; s < count; ++s) {
    dmat p = c.initial ? start[std::size_t(s)] : dmat::Identity(N, N);
    for (index_t k = 0; k < T; ++k) {
      const index_t t = c.reverse ? T - 1 - k : k;
      const dmat& x = m[std::size_t(s * T + t)];
      const dmat next = c.order == chain_order::left_to_right ? dmat(p * x) : dmat(x * p);
      const dmat& want = c.exclusive ? p : next;
      compare(read(out.host, [&](index_t i, index_t j) { return c.out.entry(s, t, i, j); }), want);
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) written[std::size_t(c.out.entry(s, t, i, j))] = true;
      p = next;
    }
    if (c.final) compare(read(fin.host, [&](index_t i, index_t j) { return dense(c.out.storage, s, i, j); }), p);
    compare(read(total.host, [&](index_t i, index_t j) { return dense(c.in.storage, s, i, j); }), p);
  }
  CHECK(worst <= tol);
  INFO("worst relative Frobenius error " << worst << ", tolerance " << tol);
  for (std::size_t k = 0; k < out.host.size(); ++k)
    if (!written[k] && !std::isnan(double(out.host[k]))) {
      FAIL("an entry outside the outputs was written: scalar " << k);
      break;
    }
  if (!c.final)
    for (std::size_t k = 0; k < fin.host.size(); ++k) REQUIRE(std::isnan(double(fin.host[k])));
}

template <class S>
void sweep_sizes(const std::vector<index_t>& sizes, const std::vector<index_t>& lengths,
                 const std::vector<index_t>& counts = {1, 3}) {
  int variant = 0;
  for (index_t N : sizes)
    for (index_t T : lengths)
      for (index_t count : counts) {
        ++variant;
        chain_case c;
        const bool time_major = variant % 2 == 0;
        const matrix_storage in_storage = variant % 3 == 0 ? matrix_storage::column_major : matrix_storage::row_major;
        const matrix_storage out_storage = variant % 5 == 0 ? matrix_storage::column_major : in_storage;
        c.in = {count, T, N, N + (variant % 4 == 1 ? 3 : 0), variant % 7 == 3 ? 5 : 0, time_major, in_storage};
        c.out = {count, T, N, N + (variant % 4 == 2 ? 2 : 0), variant % 7 == 4 ? 1 : 0, !time_major, out_storage};
        for (int flags = 0; flags < 16; ++flags) {
          if ((flags + variant) % 3 != 0 && flags != 15) continue;  // a third of the option combinations
          c.reverse = flags & 1;
          c.exclusive = flags & 2;
          c.initial = flags & 4;
          c.final = flags & 8;
          c.order = (flags + variant) % 2 ? chain_order::right_to_left : chain_order::left_to_right;
          check_runtime_chain<S>(c);
        }
      }
}

}  // namespace

TEST_CASE("runtime-size matrix chains: float, every option, odd sizes and lengths") {
  sweep_sizes<float>({1, 3, 17, 33}, {0, 1, 2, 3, 5, 8, 17, 64});
}

TEST_CASE("runtime-size matrix chains: many chains (the GPU's pointer arrays)") {
  sweep_sizes<float>({3, 20}, {2, 5, 33}, {17, 40});
}

TEST_CASE("runtime-size matrix chains: double") {
  sweep_sizes<double>({2, 9, 32}, {0, 1, 7, 33});
}

TEST_CASE("runtime-size matrix chains: long chains and GPU-sized matrices") {
  if (!ptest::on_gpu) {
    sweep_sizes<float>({5}, {1000});
    return;
  }
  sweep_sizes<float>({64, 130}, {100, 1000});
  sweep_sizes<double>({64}, {257});
}

TEST_CASE("runtime-size matrix chains: TF32 and bf16 arithmetic (GPU), within their precision") {
  for (matrix_math math : {matrix_math::tf32, matrix_math::bf16})
    for (index_t N : {index_t(16), index_t(64), index_t(256)}) {
      chain_case c;
      c.in = {2, 100, N, N, 0, false, matrix_storage::row_major};
      c.out = c.in;
      c.initial = c.final = true;
      c.math = math;
      check_runtime_chain<float>(c);  // the host computes exactly, within the same bound
    }
}

#if defined(__CUDACC__)
TEST_CASE("runtime-size matrix chains: TF32 panels (GPU: N = 128 and 256, groups multiplied on chip)") {
  // Chains long enough for the panels (blocks for half the device at least), one or two of them: every
  // option, both orders, row- and column-major factors (each a layout of the kernel's stages), padded
  // leading dimensions and gaps that keep 16-byte pieces; an exclusive scan with a final matrix (and the
  // prefix at N = 256 without wgmma) run the tree (checked alike). The carries' scan (group_scan.cuh)
  // runs paired at N = 256 (59 or 60 group products a chain, 29 or 30 for two chains), unpaired at 128.
  // tests/CMakeLists.txt builds this test with sm_90a code (a Hopper device runs the wgmma path) and a
  // twin with plain sm_90 code (the mma.sync path).
  {
    int device = 0;
    cudaDeviceProp prop{};
    REQUIRE(cudaGetDevice(&device) == cudaSuccess);
    REQUIRE(cudaGetDeviceProperties(&prop, device) == cudaSuccess);
#if defined(PARASCAN_TEST_EXPECT_WGMMA)
    if (prop.major == 9 && prop.minor == 0) CHECK(parascan::detail::panel_wgmma_loaded());
#elif defined(PARASCAN_TEST_EXPECT_MMA_SYNC)
    CHECK_FALSE(parascan::detail::panel_wgmma_loaded());
#endif
    // (a std::string: doctest prints a char pointer as an address)
    MESSAGE("TF32 panels on ", std::string(parascan::detail::panel_wgmma_loaded() ? "wgmma" : "mma.sync"));
  }
  int variant = 0;
  for (index_t N : {index_t(128), index_t(256)})
    for (int flags = 0; flags < 16; ++flags) {
      ++variant;
      chain_case c;
      const index_t count = N == 256 ? 1 + flags % 2 : 3, T = N == 256 ? 301 : 203;
      const matrix_storage in_storage = flags % 3 == 0 ? matrix_storage::column_major : matrix_storage::row_major;
      const matrix_storage out_storage = variant % 3 == 1 ? matrix_storage::column_major : in_storage;
      c.in = {count, T, N, N + (variant % 2 ? 4 : 0), variant % 4 == 1 ? 8 : 0, variant % 5 == 2, in_storage};
      // (padded leading dimensions odd and even: an odd one writes pairs one entry at a time)
      c.out = {count, T, N, N + (variant % 3 == 0 ? 3 : variant % 3 == 2 ? 4 : 0), variant % 4 == 3 ? 1 : 0,
               variant % 5 == 3, out_storage};
      c.reverse = flags & 1;
      c.exclusive = flags & 2;
      c.initial = flags & 4;
      c.final = flags & 8;
      c.order = (flags / 2 + variant) % 2 ? chain_order::right_to_left : chain_order::left_to_right;
      c.math = matrix_math::tf32;
      const long long before = parascan::detail::panel_passes().load();
      check_runtime_chain<float>(c);
      const long long passes = parascan::detail::panel_passes().load() - before;
      INFO(c.describe());
      // The product runs one pass; the prefix two, except with an exclusive final product, and at N = 256
      // only in wgmma builds (sm_90a); elsewhere the tree is faster there.
      const bool prefix_on_panels =
          (N == 128 || parascan::detail::panel_wgmma_loaded()) && !(c.exclusive && c.final);
      CHECK(passes == (prefix_on_panels ? 3 : 1));
    }
  // Many short chains: few groups a chain (2 and 5 at N = 128 on 132 multiprocessors), so the scan over
  // the group products runs from no level up (group_scan).
  for (const index_t count : {index_t(100), index_t(44)}) {
    chain_case c;
    c.in = {count, count == 100 ? 9 : 23, 128, 128, 0, false, matrix_storage::row_major};
    c.out = c.in;
    c.initial = c.exclusive = count == 44;
    c.order = count == 44 ? chain_order::right_to_left : chain_order::left_to_right;
    c.math = matrix_math::tf32;
    const long long before = parascan::detail::panel_passes().load();
    check_runtime_chain<float>(c);
    INFO(c.describe());
    CHECK(parascan::detail::panel_passes().load() > before);
  }
  // Factors whose rows are not 16-byte pieces (ld = N + 1) run the tree.
  chain_case c;
  c.in = {1, 301, 256, 257, 0, false, matrix_storage::row_major};
  c.out = {1, 301, 256, 256, 0, false, matrix_storage::row_major};
  c.math = matrix_math::tf32;
  const long long before = parascan::detail::panel_passes().load();
  check_runtime_chain<float>(c);
  CHECK(parascan::detail::panel_passes().load() == before);
}
#endif

TEST_CASE("runtime-size matrix chains: many threads on few chains (chunks carried across)") {
  chain_case c;
  c.in = {1, 97, 6, 6, 0, false, matrix_storage::row_major};
  c.out = c.in;
  c.initial = c.final = true;
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      c.exclusive = exclusive;
      c.reverse = reverse;
      check_runtime_chain<double>(c);
    }
  if (!ptest::on_gpu) {
    // Chunks of 2 steps and more threads than steps: parascan::host{64}.
    const index_t N = 4, T = 7;
    std::vector<double> in(std::size_t(T * N * N)), out(in.size()), out1(in.size());
    ptest::fast_random g;
    for (index_t t = 0; t < T; ++t) {
      const dmat r = random_factor(g, N, 1.0);
      for (index_t k = 0; k < N * N; ++k) in[std::size_t(t * N * N + k)] = r(k / N, k % N);
    }
    parascan::matrix_chain(parascan::host{64}, parascan::dense_chains<const double>(in.data(), 1, T, N),
                           parascan::dense_chains(out.data(), 1, T, N));
    parascan::matrix_chain(parascan::host{1}, parascan::dense_chains<const double>(in.data(), 1, T, N),
                           parascan::dense_chains(out1.data(), 1, T, N));
    for (std::size_t k = 0; k < out.size(); ++k) CHECK(std::abs(out[k] - out1[k]) <= 1e-14);
  }
}

TEST_CASE("runtime-size matrix chains: bad arguments are refused, nothing written") {
  const index_t N = 4, T = 3, B = 2;
  ptest::buffer<float> in(std::size_t(B * T * N * N), 1.0f), out(std::size_t(B * T * N * N + 8)),
      res(std::size_t(B * N * N));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(out.host.begin(), out.host.end(), nan);
  std::fill(res.host.begin(), res.host.end(), nan);
  in.upload();
  out.upload();
  res.upload();
  const auto factors = parascan::dense_chains<const float>(in.data(), B, T, N);
  const auto outputs = parascan::dense_chains(out.data(), B, T, N);
  const auto refused = [&](auto&& call, const char* argument) {
    try {
      call();
      FAIL("accepted; expected an error naming " << argument);
    } catch (const parascan::error& e) {
      const std::string message = e.what();
      CHECK_MESSAGE(message.find(argument) != std::string::npos, message);
    }
  };
  auto bad = outputs;
  bad.ld = N - 1;
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out.ld");
  bad = outputs;
  bad.size = 0;
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out.size");
  bad = outputs;
  bad.size = bad.ld = N + 1;
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out.size");
  bad = parascan::dense_chains(out.data(), B, T - 1, N);
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out.origins");
  bad = outputs;
  bad.origins.time_stride = N;  // matrices overlap each other
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out");
  refused(
      [&] {
        parascan::matrix_chain(ptest::exec(), factors,
                               parascan::dense_chains(const_cast<float*>(factors.origins.data) + N, B, T, N));
      },
      "out");
  bad = outputs;
  bad.origins.data = nullptr;
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, bad); }, "out.origins.data");
  const index_t one = 0, offsets[2] = {0, T};
  (void)one;
  auto packed = factors;
  packed.origins.offsets = offsets;
  refused([&] { parascan::matrix_chain(ptest::exec(), packed, outputs); }, "in.origins.offsets");
  parascan::matrix_options<float> o;
  o.initial = out.data() + 8;  // inside the output
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, outputs, o); }, "options.initial");
  o = {};
  o.final = const_cast<float*>(factors.origins.data);
  refused([&] { parascan::matrix_chain(ptest::exec(), factors, outputs, o); }, "options.final");
  o = {};
  o.exclusive = true;
  refused([&] { parascan::matrix_chain_product(ptest::exec(), factors, res.data(), o); }, "options.exclusive");
  o = {};
  refused([&] { parascan::matrix_chain_product(ptest::exec(), factors, static_cast<float*>(nullptr), o); }, "result");
  refused(
      [&] { parascan::matrix_chain_product(ptest::exec(), factors, const_cast<float*>(factors.origins.data), o); },
      "result");
  parascan::matrix_options<double> od;
  od.math = matrix_math::tf32;
  std::vector<double> dummy(16);
  refused(
      [&] {
        parascan::matrix_chain_product(ptest::exec(), parascan::dense_chains<const double>(nullptr, 0, 0, 4),
                                       dummy.data(), od);
      },
      "options.math");
  out.download();
  res.download();
  for (float x : out.host) REQUIRE(std::isnan(x));
  for (float x : res.host) REQUIRE(std::isnan(x));
}

TEST_CASE("runtime-size matrix chains: one factor, exclusive, no initial matrix: the final is the factor itself") {
  // No product with the identity: an infinite entry stays infinite (0 * inf would give NaN).
  const index_t N = 3;
  const float inf = std::numeric_limits<float>::infinity();
  ptest::buffer<float> in(std::size_t(N * N)), out(std::size_t(N * N)), fin(std::size_t(N * N));
  for (index_t k = 0; k < N * N; ++k) in.host[std::size_t(k)] = float(k + 1);
  in.host[4] = inf;
  in.upload();
  parascan::matrix_options<float> o;
  o.exclusive = true;
  o.final = fin.data();
  parascan::matrix_chain(ptest::exec(), parascan::dense_chains<const float>(in.data(), 1, 1, N),
                         parascan::dense_chains(out.data(), 1, 1, N), o);
  out.download();
  fin.download();
  for (index_t k = 0; k < N * N; ++k) {
    CHECK(fin.host[std::size_t(k)] == in.host[std::size_t(k)]);
    CHECK(out.host[std::size_t(k)] == (k % (N + 1) == 0 ? 1.0f : 0.0f));
  }
}

TEST_CASE("runtime-size matrix chains: input and output in the two column halves of one tensor") {
  // x: (2, 3, N, 2N) row-major; in = x[..., :N], out = x[..., N:]: interleaved, no shared byte.
  const index_t B = 2, T = 3, N = 4, ld = 2 * N;
  ptest::buffer<float> x(std::size_t(B * T * N * ld));
  ptest::fast_random g;
  std::vector<dmat> m;
  for (index_t s = 0; s < B; ++s)
    for (index_t t = 0; t < T; ++t) {
      m.push_back(random_factor(g, N, 1.0).cast<float>().cast<double>());
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) x.host[std::size_t(((s * T + t) * N + i) * ld + j)] = float(m.back()(i, j));
    }
  x.upload();
  const auto origins = parascan::strided(x.data(), B, 1, T * N * ld, 0, T, N * ld);
  auto shifted_origins = origins;
  shifted_origins.data = x.data() + N;
  parascan::matrix_chain(ptest::exec(),
                         parascan::matrices_at<const float>(origins, N, ld, matrix_storage::row_major),
                         parascan::matrices_at(shifted_origins, N, ld, matrix_storage::row_major));
  x.download();
  for (index_t s = 0; s < B; ++s) {
    dmat p = dmat::Identity(N, N);
    for (index_t t = 0; t < T; ++t) {
      p = p * m[std::size_t(s * T + t)];
      dmat got(N, N), factor(N, N);
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) {
          got(i, j) = x.host[std::size_t(((s * T + t) * N + i) * ld + N + j)];
          factor(i, j) = x.host[std::size_t(((s * T + t) * N + i) * ld + j)];
        }
      CHECK(ptest::relative_frobenius(got, p) <= 1e-5);
      CHECK(ptest::relative_frobenius(factor, m[std::size_t(s * T + t)]) == 0);  // the input untouched
    }
  }
}

#if defined(__CUDACC__)
TEST_CASE("runtime-size matrix chains: captured into a CUDA graph and replayed, exact and TF32") {
  // A captured call may not ask the driver about its own workspace (not mapped until the graph runs).
  const index_t N = 130, T = 100, NN = N * N;
  ptest::fast_random g;
  const std::size_t factors_size = std::size_t(T * NN), outputs_size = std::size_t(T * NN + NN);
  ptest::buffer<float> in(factors_size), init(static_cast<std::size_t>(NN)), direct(outputs_size),
      replayed(outputs_size);
  for (index_t t = 0; t < T; ++t) {
    const dmat x = random_factor(g, N, g.uniform(0.9, 1.1));
    for (index_t k = 0; k < NN; ++k) in.host[std::size_t(t * NN + k)] = float(x(k / N, k % N));
  }
  const dmat x0 = random_factor(g, N, 1.0);
  for (index_t k = 0; k < NN; ++k) init.host[std::size_t(k)] = float(x0(k / N, k % N));
  in.upload();
  init.upload();
  const auto factors = parascan::dense_chains<const float>(in.data(), 1, T, N);
  for (matrix_math math : {matrix_math::exact, matrix_math::tf32}) {
    INFO((math == matrix_math::exact ? "exact" : "tf32"));
    parascan::matrix_options<float> o;
    o.math = math;
    o.initial = init.data();
    const auto run = [&](parascan::cuda exec, float* target) {
      parascan::matrix_chain(exec, factors, parascan::dense_chains(target, 1, T, N), o);
      parascan::matrix_chain_product(exec, factors, target + T * NN, o);
    };
    // The same products; cuBLAS may pick other kernels while capturing.
    CHECK(ptest::replay_difference(run, direct, replayed) <= (math == matrix_math::exact ? 1e-5 : 1e-2));
  }
}
#endif
