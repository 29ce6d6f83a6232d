// Cases for ops/affine_recurrence.hpp over many sequences (2400 / 2403): the CUDA engine then walks each sequence
// in time, N lanes a sequence (cuda/affine.cuh; fp32 N = 4 with column-major W from registers,
// cuda/affine_registers.cuh), instead of composing maps. N = 2, 4, 8, 16, 32 in fp32,
// 8 in fp64, row-major W; every layout but single, lengths 1, 37, 130, a spread of the options.
#include <cstring>

#include "support/affine_check.hpp"

namespace {
using ptest::index_t;
using ptest::layout_kind;

/// Shapes of 2400 sequences (packed: 2403 of 0..T steps, one of T, the last three empty) and every fifth
/// options combination.
template <index_t MaxT>
const auto many_sequences = [](auto&& f) {
  const auto flags = ptest::all_flags();
  for (layout_kind kind : {layout_kind::bdt, layout_kind::btd, layout_kind::strided, layout_kind::packed_td,
                           layout_kind::packed_dt})
    for (index_t T : {index_t(1), index_t(37), index_t(130)}) {
      if (T > MaxT) continue;
      ptest::shape sh{kind, 800, 3, T, {}};
      if (sh.kind == layout_kind::packed_td || sh.kind == layout_kind::packed_dt) {
        // 2403: the last warp (32 / N sequences) is part past the batch, and its 3 sequences are empty.
        sh.n0 = 2403, sh.n1 = 1;
        sh.offsets.push_back(0);
        for (index_t i = 0; i < sh.n0; ++i)
          sh.offsets.push_back(sh.offsets.back() +
                               (i == 7 ? T : i >= 2400 ? 0 : index_t(ptest::uniform(0, double(T) + 0.999))));
      }
      for (std::size_t i = 0; i < flags.size(); ++i) {
        if (i % 5 != 0 && i != flags.size() - 1) continue;
        INFO(std::string(ptest::backend_name) << " " << sh.describe() << " " << ptest::describe(flags[i]));
        f(sh, flags[i]);
      }
    }
};
}  // namespace

TEST_CASE("affine_recurrence: many sequences, N = 2, 4, 8 (fp32, fp64, row-major W)") {
  ptest::check_affine_recurrence<float, 2>(many_sequences<130>, 16);
  ptest::check_affine_recurrence<float, 4>(many_sequences<130>, 16);
  ptest::check_affine_recurrence<float, 8>(many_sequences<130>, 16);
  ptest::check_affine_recurrence<double, 8>(many_sequences<37>, 16);
  ptest::check_affine_recurrence<float, 8, Eigen::RowMajor>(many_sequences<37>, 16);
}

TEST_CASE("affine_recurrence: many sequences, stages of several steps (N = 4 row-major W, fp64 N = 2 and 4)") {
  // The CUDA walk stages 2 to 4 steps at a time for these and moves each stage's b and x as one request a
  // sequence where they are contiguous (cuda/affine.cuh): its other layouts and option sets besides.
  ptest::check_affine_recurrence<float, 4, Eigen::RowMajor>(many_sequences<130>, 16);
  ptest::check_affine_recurrence<double, 4>(many_sequences<130>, 16);
  ptest::check_affine_recurrence<double, 2>(many_sequences<130>, 16);
}

// N = 16 and 32 are two test cases: the suite's longest under compute-sanitizer's racecheck as one, and
// tests/gpu_sanitize.sh runs each test case as a job of its own.
TEST_CASE("affine_recurrence: many sequences, N = 16 (column- and row-major W)") {
  ptest::check_affine_recurrence<float, 16>(many_sequences<37>, 16);
  ptest::check_affine_recurrence<float, 16, Eigen::RowMajor>(many_sequences<37>, 16);
}

TEST_CASE("affine_recurrence: many sequences, N = 32") {
  ptest::check_affine_recurrence<float, 32>(many_sequences<37>, 16);
}

namespace {
/// affine_recurrence over 2400 sequences of T steps with W, b and x stored (Eigen::DontAlign, W with options
/// WOptions) one scalar past 16-byte alignment, as NumPy and PyTorch arrays may come, against fp64.
template <class S, int N, int WOptions>
void check_unaligned(index_t T) {
  using Mat = Eigen::Matrix<S, N, N, WOptions | Eigen::DontAlign>;
  using Vec = Eigen::Matrix<S, N, 1, Eigen::DontAlign>;
  using VecD = Eigen::Matrix<double, N, 1>;
  const index_t count = 2400;
  const std::size_t n = std::size_t(count * T);
  ptest::buffer<S> W(n * N * N + 1), b(n * N + 1), x(n * N + 1, std::numeric_limits<S>::quiet_NaN());
  ptest::fast_random g;
  std::vector<Mat> hW(n);
  std::vector<Vec> hb(n);
  for (std::size_t k = 0; k < n; ++k) {
    hW[k] = ptest::random_contraction<Mat>(g);
    hb[k] = ptest::random_matrix<Vec>(g);
  }
  std::memcpy(W.host.data() + 1, hW.data(), n * sizeof(Mat));
  std::memcpy(b.host.data() + 1, hb.data(), n * sizeof(Vec));
  W.upload();
  b.upload();
  x.upload();
  parascan::affine_recurrence(ptest::exec(), parascan::bdt<const Mat>(reinterpret_cast<Mat*>(W.data() + 1), count, 1, T),
                              parascan::bdt<const Vec>(reinterpret_cast<Vec*>(b.data() + 1), count, 1, T),
                              parascan::bdt(reinterpret_cast<Vec*>(x.data() + 1), count, 1, T));
  x.download();
  ptest::error_meter err;
  for (index_t s = 0; s < count; ++s) {
    VecD ref = VecD::Zero();
    for (index_t t = 0; t < T; ++t) {
      const std::size_t k = std::size_t(s * T + t);
      ref = hW[k].template cast<double>() * ref + hb[k].template cast<double>();
      for (int r = 0; r < N; ++r) err.add(double(x.host[1 + k * N + std::size_t(r)]), ref[r]);
    }
  }
  INFO("N=" << N << " T=" << T);
  CHECK(err.relative() <= 16 * ptest::eps_of<S>() * std::sqrt(double(N)));
}
}  // namespace

TEST_CASE("affine_recurrence: many sequences, row-major and column-major W one scalar off alignment") {
  check_unaligned<float, 4, Eigen::RowMajor>(37);
  check_unaligned<float, 4, Eigen::ColMajor>(37);  // the register walk's scalar loads (cuda/affine_registers.cuh)
  check_unaligned<float, 8, Eigen::ColMajor>(37);
  check_unaligned<float, 16, Eigen::RowMajor>(20);
}
