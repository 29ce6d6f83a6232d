// The affine recurrence check shared by cases/affine_recurrence.hpp and cases/affine_recurrence_sizes.hpp
// (split in two so that each translation unit instantiates few scans: nvcc compiles them per backend).
#pragma once

#include <parascan/ops/affine_recurrence.hpp>

#include "matrices.hpp"

namespace ptest {

/// Runs affine_recurrence with N x N matrices of S (stored with Eigen options WOptions: Eigen::RowMajor for
/// row-major W) on the configurations `sweep` visits, against an fp64 sequential reference; the relative
/// (2-norm) error must stay below ulps * eps(S) * sqrt(N).
template <class S, int N, int WOptions = 0, class Sweep>
void check_affine_recurrence(Sweep&& sweep, double ulps) {
  using Mat = Eigen::Matrix<S, N, N, WOptions>;
  using Vec = Eigen::Matrix<S, N, 1>;
  using VecD = Eigen::Matrix<double, N, 1>;
  const double tol = ulps * eps_of<S>() * std::sqrt(double(N));
  sweep([&](const shape& sh, const scan_flags& f) {
    backend_offsets offs(sh);
    buffer<Mat> W(sh.elements());
    buffer<Vec> b(sh.elements()), x(sh.elements()), init(sh.count()), fin(sh.count());
    fast_random g;
    fill(W, [&] { return random_contraction<Mat>(g); });
    fill(b, [&] { return random_matrix<Vec>(g); });
    fill(init, [&] { return random_matrix<Vec>(g); });
    fill(x, [] { return poison_matrix<Vec>(); });
    fill(fin, [] { return poison_matrix<Vec>(); });

    const auto opts = ptest::options_for<Vec>(f, init.data(), fin.data());
    parascan::affine_recurrence(exec(), sh.view(W.data(), offs.get(sh)), sh.view(b.data(), offs.get(sh)),
                                sh.view(x.data(), offs.get(sh)), opts);
    x.download();
    fin.download();

    error_meter err;
    const auto add = [&](const Vec& got, const VecD& ref) {
      for (int i = 0; i < N; ++i) err.add(double(got[i]), ref[i]);
    };
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto Wv = sh.view(W.host.data(), host_offsets);
    const auto bv = sh.view(b.host.data(), host_offsets);
    const auto xv = sh.view(x.host.data(), host_offsets);
    for (index_t s = 0; s < sh.count(); ++s) {
      const VecD start = f.with_initial ? VecD(init.host[s].template cast<double>()) : VecD::Zero();
      const VecD total = reference_scan(
          Wv.length_of(s), f.exclusive, f.reverse, start,
          [&](const VecD& c, index_t t) -> VecD {
            return Wv.at(s, t).template cast<double>() * c + bv.at(s, t).template cast<double>();
          },
          [&](index_t t, const VecD& c) { add(xv.at(s, t), c); });
      if (f.with_final) add(fin.host[s], total);
    }
    CHECK(err.relative() <= tol);
  });
}

}  // namespace ptest
