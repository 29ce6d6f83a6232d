// Cases for ops/affine_recurrence.hpp over many sequences (2400): the CUDA engine then walks each sequence
// in time, N lanes a sequence (cuda/affine.cuh), instead of composing maps. N = 2, 4, 8, 16, 32 in fp32,
// 8 in fp64, row-major W; every layout but single, lengths 1, 37, 130, a spread of the options.
#include "support/affine_check.hpp"

namespace {
using ptest::index_t;
using ptest::layout_kind;

/// Shapes of 2400 sequences (packed: 2400 of 0..T steps, one of T) and every fifth options combination.
template <index_t MaxT>
const auto many_sequences = [](auto&& f) {
  const auto flags = ptest::all_flags();
  for (layout_kind kind : {layout_kind::bdt, layout_kind::btd, layout_kind::strided, layout_kind::packed_td,
                           layout_kind::packed_dt})
    for (index_t T : {index_t(1), index_t(37), index_t(130)}) {
      if (T > MaxT) continue;
      ptest::shape sh{kind, 800, 3, T, {}};
      if (sh.kind == layout_kind::packed_td || sh.kind == layout_kind::packed_dt) {
        sh.n0 = 2400, sh.n1 = 1;
        sh.offsets.push_back(0);
        for (index_t i = 0; i < sh.n0; ++i)
          sh.offsets.push_back(sh.offsets.back() + (i == 7 ? T : index_t(ptest::uniform(0, double(T) + 0.999))));
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

TEST_CASE("affine_recurrence: many sequences, N = 16, 32") {
  ptest::check_affine_recurrence<float, 16>(many_sequences<37>, 16);
  ptest::check_affine_recurrence<float, 16, Eigen::RowMajor>(many_sequences<37>, 16);
  ptest::check_affine_recurrence<float, 32>(many_sequences<37>, 16);
}
