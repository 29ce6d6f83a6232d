// Cases for ops/affine_recurrence.hpp at N = 4: every configuration in fp32 and fp64, the operator laws,
// Eigen expression inputs. Other sizes: affine_recurrence_sizes.hpp.
#include "support/affine_check.hpp"
#include "support/laws.hpp"

namespace {
const auto every_config = [](auto&& f) { ptest::for_each_config(f); };
}

TEST_CASE("affine_recurrence: N=4, fp32 and fp64, every configuration") {
  ptest::check_affine_recurrence<float, 4>(every_config, 16);
  ptest::check_affine_recurrence<double, 4>(every_config, 16);
}

TEST_CASE("affine_recurrence: operator laws") {
  using op_t = parascan::ops::affine_recurrence<double, 5>;
  ptest::fast_random g;
  ptest::check_operator_laws(
      op_t{},
      [&] { return op_t{}.lift(ptest::random_matrix<op_t::matrix>(g), ptest::random_matrix<op_t::vector>(g)); },
      [](const op_t::value_type& x, const op_t::value_type& y) {
        return std::max(ptest::relative_frobenius(x.W, y.W), ptest::relative_frobenius(x.b, y.b));
      },
      1e-14, 0.0);
}

TEST_CASE("affine_recurrence: row-major W lifts like its column-major copy") {
  using op_t = parascan::ops::affine_recurrence<float, 3>;
  ptest::fast_random g;
  const Eigen::Matrix<float, 3, 3, Eigen::RowMajor> w = ptest::random_matrix<op_t::matrix>(g);
  const Eigen::Vector3d b = ptest::random_matrix<Eigen::Vector3d>(g);
  const auto s = op_t{}.lift(w, b);
  CHECK(s.W == op_t::matrix(w));
  CHECK(s.b == b.cast<float>());
}

namespace {

using ptest::index_t;

/// affine_recurrence_backward with N x N matrices of S on every configuration (inclusive forwards),
/// against an fp64 adjoint: g_p = dy_p + W_{p+1}^T g_{p+1} (+ dL/d(final) at the end), dL/db_p = g_p,
/// dL/dW_p = g_p x_{p-1}^T, dL/dx0 = W_0^T g_0 (positions in the forward's scan order); 2-norm relative
/// error at most ulps * eps(S) * sqrt(N).
template <class S, int N>
void check_affine_backward(double ulps) {
  using Mat = Eigen::Matrix<S, N, N>;
  using Vec = Eigen::Matrix<S, N, 1>;
  using MatD = Eigen::Matrix<double, N, N>;
  using VecD = Eigen::Matrix<double, N, 1>;
  ptest::for_each_config([&](const ptest::shape& sh, const ptest::scan_flags& f) {
    if (f.exclusive) return;
    ptest::backend_offsets offs(sh);
    ptest::buffer<Mat> W(sh.elements()), dW(sh.elements());
    ptest::buffer<Vec> x(sh.elements()), dy(sh.elements()), db(sh.elements());
    ptest::buffer<Vec> init(sh.count()), gf(sh.count()), dx0(sh.count());
    ptest::fast_random g;
    ptest::fill(W, [&] { return ptest::random_contraction<Mat>(g); });
    ptest::fill(x, [&] { return ptest::random_matrix<Vec>(g); });  // any states: the adjoint is linear in them
    ptest::fill(dy, [&] { return ptest::random_matrix<Vec>(g); });
    ptest::fill(init, [&] { return ptest::random_matrix<Vec>(g); });
    ptest::fill(gf, [&] { return ptest::random_matrix<Vec>(g); });
    ptest::fill(dW, [] { return ptest::poison_matrix<Mat>(); });
    ptest::fill(db, [] { return ptest::poison_matrix<Vec>(); });
    ptest::fill(dx0, [] { return ptest::poison_matrix<Vec>(); });
    parascan::backward_options<Vec> opts;
    opts.reverse = f.reverse;
    opts.initial = f.with_initial ? init.data() : nullptr;
    opts.grad_final = f.with_final ? gf.data() : nullptr;
    opts.grad_initial = dx0.data();
    const auto view = [&](auto& buf) { return sh.view(buf.data(), offs.get(sh)); };
    parascan::affine_recurrence_backward(ptest::exec(), view(W), view(x), view(dy), view(dW), view(db), opts);
    dW.download(), db.download(), dx0.download();

    ptest::error_meter err;
    const index_t* host_offsets = sh.packed() ? sh.offsets.data() : nullptr;
    const auto hv = [&](auto& buf) { return sh.view(buf.host.data(), host_offsets); };
    const auto Wv = hv(W), dWv = hv(dW);
    const auto xv = hv(x), dyv = hv(dy), dbv = hv(db);
    for (index_t s = 0; s < sh.count(); ++s) {
      const index_t n = Wv.length_of(s);
      const auto time = [&](index_t p) { return f.reverse ? n - 1 - p : p; };
      VecD carried = f.with_final ? VecD(gf.host[s].template cast<double>()) : VecD::Zero();  // h_{p+1}
      for (index_t p = n; p-- > 0;) {
        const VecD gp = dyv.at(s, time(p)).template cast<double>() + carried;
        const VecD x_prev = p > 0 ? VecD(xv.at(s, time(p - 1)).template cast<double>())
                                  : (f.with_initial ? VecD(init.host[s].template cast<double>()) : VecD::Zero());
        const MatD dWp = gp * x_prev.transpose();
        for (int i = 0; i < N; ++i) {
          err.add(double(dbv.at(s, time(p))[i]), gp[i]);
          for (int j = 0; j < N; ++j) err.add(double(dWv.at(s, time(p))(i, j)), dWp(i, j));
        }
        carried = Wv.at(s, time(p)).template cast<double>().transpose() * gp;
      }
      for (int i = 0; i < N; ++i) err.add(double(dx0.host[s][i]), carried[i]);
    }
    CHECK(err.relative() <= ulps * ptest::eps_of<S>() * std::sqrt(double(N)));
  });
}

}  // namespace

TEST_CASE("affine_recurrence_backward: the adjoint against central differences (fp64, N = 3)") {
  // L = sum_p w_p . x_p + wf . x_{n-1}: dL/dW_p, dL/db_p and dL/dx0 by differences, against the scan.
  using Mat = Eigen::Matrix<double, 3, 3>;
  using Vec = Eigen::Matrix<double, 3, 1>;
  const int n = 6;
  ptest::fast_random g;
  std::vector<Mat> W(n);
  std::vector<Vec> b(n), w(n), x(n);
  for (int p = 0; p < n; ++p)
    W[p] = ptest::random_contraction<Mat>(g), b[p] = ptest::random_matrix<Vec>(g), w[p] = ptest::random_matrix<Vec>(g);
  Vec x0 = ptest::random_matrix<Vec>(g), wf = ptest::random_matrix<Vec>(g);
  const auto loss = [&] {
    double l = 0;
    Vec state = x0;
    for (int p = 0; p < n; ++p) l += w[p].dot(state = W[p] * state + b[p]);
    return l + wf.dot(state);
  };
  Vec state = x0;
  for (int p = 0; p < n; ++p) x[p] = state = W[p] * state + b[p];
  std::vector<Mat> dW(n);
  std::vector<Vec> db(n);
  Vec dx0;
  parascan::backward_options<Vec> opts;
  opts.initial = &x0, opts.grad_final = &wf, opts.grad_initial = &dx0;
  const auto v = [&](auto& vec) { return parascan::single(vec.data(), n); };
  parascan::affine_recurrence_backward(parascan::host{1}, v(W), v(x), v(w), v(dW), v(db), opts);
  const auto numeric = [&](double& value) { return ptest::central_difference(value, loss); };
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < 3; ++i) {
      CHECK(std::abs(numeric(b[p][i]) - db[p][i]) <= 1e-7 * (1 + std::abs(db[p][i])));
      for (int j = 0; j < 3; ++j) CHECK(std::abs(numeric(W[p](i, j)) - dW[p](i, j)) <= 1e-7 * (1 + std::abs(dW[p](i, j))));
    }
  for (int i = 0; i < 3; ++i) CHECK(std::abs(numeric(x0[i]) - dx0[i]) <= 1e-7 * (1 + std::abs(dx0[i])));
}

TEST_CASE("affine_recurrence_backward: N=3, fp32 and fp64, every layout, reverse, initial and final gradients") {
  check_affine_backward<float, 3>(32);
  check_affine_backward<double, 3>(32);
}
