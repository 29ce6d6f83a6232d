// Cases for the backward passes of ops/runtime_matrix_chain.hpp (matrix_chain_backward,
// matrix_chain_product_backward): each gradient against an fp64 adjoint written from the products'
// definition (itself checked against central differences), for both orders, every option (reverse,
// exclusive, initial, grad_final, grad_initial), sizes that no warp divides, row- and column-major views
// with padded leading dimensions, chains interleaved in time, lengths 0 to 1000; nothing written outside
// the outputs; bad arguments refused with nothing written; on the GPU the opt-in TF32 arithmetic within
// its precision.
#include <cmath>
#include <string>
#include <vector>

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
using ptest::placement;
using dmat = Eigen::MatrixXd;

/// One chain's problem in fp64: factors M[t] (time order), the initial matrix X0 (I when absent), the
/// gradient reaching each output and the final product (prefix), or the result (reduction).
struct chain_problem {
  std::vector<dmat> m, g;  // g: dL/dout[t] (prefix only)
  dmat x0, grad_final;     // grad_final: dL/d(final product), or dL/d(result) of a reduction
};

struct backward_case {
  placement in, out, grad_out, grad_in;
  chain_order order = chain_order::left_to_right;
  bool prefix = true, reverse = false, exclusive = false, initial = false, grad_final = false, grad_initial = false;
  matrix_math math = matrix_math::exact;

  std::string describe() const {
    const auto st = [](const placement& p) { return p.storage == matrix_storage::row_major ? "row" : "col"; };
    return std::string(prefix ? "matrix_chain_backward" : "matrix_chain_product_backward") + " N=" +
           std::to_string(in.N) + " count=" + std::to_string(in.count) + " T=" + std::to_string(in.T) + " in:" +
           st(in) + " out:" + st(out) + " grad_out:" + st(grad_out) + " grad_in:" + st(grad_in) + " ld=" +
           std::to_string(in.ld) + "/" + std::to_string(grad_in.ld) + (in.time_major ? " time-major" : "") +
           (order == chain_order::right_to_left ? " right_to_left" : "") + (reverse ? " reverse" : "") +
           (exclusive ? " exclusive" : "") + (initial ? " initial" : "") + (grad_final ? " grad_final" : "") +
           (grad_initial ? " grad_initial" : "") + (math == matrix_math::tf32 ? " tf32" : "");
  }
};

/// The products a chain's forward pass forms, in scan order: before[k] = the product of the first k
/// factors of scan order with X0 (k = 0 .. n), each new factor on the order's side.
std::vector<dmat> products_before(const chain_problem& p, chain_order order, bool reverse) {
  const index_t n = index_t(p.m.size());
  std::vector<dmat> before{p.x0};
  for (index_t k = 0; k < n; ++k) {
    const dmat& f = p.m[std::size_t(reverse ? n - 1 - k : k)];
    before.push_back(order == chain_order::left_to_right ? dmat(before.back() * f) : dmat(f * before.back()));
  }
  return before;
}

/// dL/dM[t] (time order) and dL/dX0 of L = sum_t <g[t], out[t]> + <grad_final, final>, given
/// products_before, from the products' definition: before[k] (k factors of scan order) receives W[k] (an
/// inclusive scan's out[k - 1], an exclusive one's out[k], the final product at k = n); factor q (scan
/// order) reaches every before[k], k > q, as before[q] M[q] A (left_to_right, A the factors q + 1 .. k - 1)
/// or A M[q] before[q], so dL/dM[q] = before[q]^T S[q] with S[q] = sum_{k > q} W[k] A^T (or S[q]
/// before[q]^T, mirrored), and S[q - 1] = W[q] + S[q] M[q]^T (mirrored: M[q]^T S[q]).
std::pair<std::vector<dmat>, dmat> reference_adjoint(const chain_problem& p, const std::vector<dmat>& before,
                                                      chain_order order, bool reverse, bool exclusive, bool prefix) {
  const index_t n = index_t(p.m.size()), N = p.x0.rows();
  const bool l2r = order == chain_order::left_to_right;
  const auto time = [&](index_t q) { return std::size_t(reverse ? n - 1 - q : q); };
  std::vector<dmat> w(std::size_t(n + 1), dmat::Zero(N, N));
  if (prefix)
    for (index_t q = 0; q < n; ++q) w[std::size_t(exclusive ? q : q + 1)] += p.g[time(q)];
  w[std::size_t(n)] += p.grad_final;
  std::vector<dmat> grad(static_cast<std::size_t>(n));
  dmat s = w[std::size_t(n)];  // S[n - 1]
  for (index_t q = n - 1; q >= 0; --q) {
    const dmat& f = p.m[time(q)];
    grad[time(q)] = l2r ? dmat(before[std::size_t(q)].transpose() * s) : dmat(s * before[std::size_t(q)].transpose());
    s = w[std::size_t(q)] + (l2r ? dmat(s * f.transpose()) : dmat(f.transpose() * s));  // S[q - 1]
  }
  return {grad, s};  // S[-1]: dL/dX0
}

/// The size each gradient's rounding is relative to: reference_adjoint's recurrence over norms (|W[k]|
/// added, each factor's spectral norm multiplied), times before[q]'s spectral norm, so that a sum of
/// terms that cancel is not measured against its small result. The factors and initial matrices of these
/// tests are scaled orthogonal matrices: a spectral norm is the Frobenius norm / sqrt(N).
std::pair<std::vector<double>, double> adjoint_scales(const chain_problem& p, const std::vector<dmat>& before,
                                                      bool reverse, bool exclusive, bool prefix) {
  const index_t n = index_t(p.m.size());
  const double root = std::sqrt(double(p.x0.rows()));
  const auto time = [&](index_t q) { return std::size_t(reverse ? n - 1 - q : q); };
  std::vector<double> w(std::size_t(n + 1), 0.0);
  if (prefix)
    for (index_t q = 0; q < n; ++q) w[std::size_t(exclusive ? q : q + 1)] += p.g[time(q)].norm();
  w[std::size_t(n)] += p.grad_final.norm();
  std::vector<double> scale(static_cast<std::size_t>(n));
  double s = w[std::size_t(n)];
  for (index_t q = n - 1; q >= 0; --q) {
    scale[time(q)] = before[std::size_t(q)].norm() / root * s;
    s = w[std::size_t(q)] + s * p.m[time(q)].norm() / root;
  }
  return {scale, s};
}

/// The loss of reference_adjoint, for central differences.
double loss(const chain_problem& p, chain_order order, bool reverse, bool exclusive, bool prefix) {
  const index_t n = index_t(p.m.size());
  const std::vector<dmat> before = products_before(p, order, reverse);
  double l = (before.back().array() * p.grad_final.array()).sum();
  if (prefix)
    for (index_t q = 0; q < n; ++q)
      l += (before[std::size_t(exclusive ? q : q + 1)].array() * p.g[std::size_t(reverse ? n - 1 - q : q)].array())
               .sum();
  return l;
}

dmat random_gradient(ptest::fast_random& g, index_t N) {
  dmat x(N, N);
  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) x(i, j) = g.normal();
  return x;
}

/// Runs one backward call and checks grad_in and grad_initial against the fp64 adjoint, and that nothing
/// outside them was written.
template <class S>
void check_backward(const backward_case& c) {
  INFO(ptest::backend_name << " " << c.describe());
  const index_t count = c.in.count, T = c.in.T, N = c.in.N, NN = N * N;
  ptest::fast_random g;
  const S nan = std::numeric_limits<S>::quiet_NaN();
  ptest::buffer<S> in(std::size_t(c.in.scalars())), out(std::size_t(c.out.scalars())),
      gout(std::size_t(c.grad_out.scalars())), gin(std::size_t(c.grad_in.scalars()), nan),
      init(std::size_t(count * NN + 1)), gfin(std::size_t(count * NN + 1)), ginit(std::size_t(count * NN + 1), nan);
  // Dense per-chain matrices are stored like out (prefix) or in (reduction).
  const matrix_storage dense_storage = c.prefix ? c.out.storage : c.in.storage;
  const auto dense = [&](index_t s, index_t i, index_t j) {
    return std::size_t(s * NN + (dense_storage == matrix_storage::column_major ? i + j * N : i * N + j));
  };
  const auto round = [](const dmat& x) { return dmat(x.template cast<S>().template cast<double>()); };
  std::vector<chain_problem> problems(static_cast<std::size_t>(count));
  std::vector<std::vector<dmat>> products(static_cast<std::size_t>(count));
  for (index_t s = 0; s < count; ++s) {
    chain_problem& p = problems[std::size_t(s)];
    p.x0 = c.initial ? round(random_factor(g, N, g.uniform(0.5, 2))) : dmat::Identity(N, N);
    p.grad_final = c.grad_final || !c.prefix ? round(random_gradient(g, N)) : dmat::Zero(N, N);
    for (index_t t = 0; t < T; ++t) {
      p.m.push_back(round(random_factor(g, N, g.uniform(0.95, 1.05))));
      if (c.prefix) p.g.push_back(round(random_gradient(g, N)));
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) {
          in.host[std::size_t(c.in.entry(s, t, i, j))] = S(p.m.back()(i, j));
          if (c.prefix) gout.host[std::size_t(c.grad_out.entry(s, t, i, j))] = S(p.g.back()(i, j));
        }
    }
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) {
        init.host[dense(s, i, j)] = S(p.x0(i, j));
        gfin.host[dense(s, i, j)] = S(p.grad_final(i, j));
      }
    // The forward's outputs, as the caller has them (rounded to S).
    const std::vector<dmat>& before = products[std::size_t(s)] = products_before(p, c.order, c.reverse);
    for (index_t q = 0; q < T && c.prefix; ++q) {
      const index_t t = c.reverse ? T - 1 - q : q;
      const dmat& y = before[std::size_t(c.exclusive ? q : q + 1)];
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) out.host[std::size_t(c.out.entry(s, t, i, j))] = S(y(i, j));
    }
  }
  for (auto* b : {&in, &out, &gout, &gin, &init, &gfin, &ginit}) b->upload();

  parascan::matrix_backward_options<S> o;
  o.reverse = c.reverse;
  o.exclusive = c.exclusive;
  o.initial = c.initial ? init.data() : nullptr;
  o.grad_final = c.prefix && c.grad_final ? gfin.data() : nullptr;
  o.grad_initial = c.grad_initial ? ginit.data() : nullptr;
  o.math = c.math;
  const auto factors = c.in.view<const S>(in.data());
  const auto grads = c.grad_in.view(gin.data());
  const bool l2r = c.order == chain_order::left_to_right;
  if (c.prefix) {
    const auto products = c.out.view<const S>(out.data());
    const auto upstream = c.grad_out.view<const S>(gout.data());
    if (l2r)
      parascan::matrix_chain_backward(ptest::exec(), factors, products, upstream, grads, o);
    else
      parascan::matrix_chain_backward<chain_order::right_to_left>(ptest::exec(), factors, products, upstream, grads, o);
  } else if (l2r) {
    parascan::matrix_chain_product_backward(ptest::exec(), factors, gfin.data(), grads, o);
  } else {
    parascan::matrix_chain_product_backward<chain_order::right_to_left>(ptest::exec(), factors, gfin.data(), grads, o);
  }
  gin.download();
  ginit.download();

  // As the forward's bound (a product rounds about sqrt(N) ulps, errors add up like sqrt(T), 2: the GPU's
  // tree), twice: each gradient is a product of two such chains.
  const double per_product = c.math == matrix_math::exact ? std::sqrt(double(N)) : 1.0;
  const double tol = 16 * ptest::unit_roundoff<S>(c.math) * per_product * (1 + std::sqrt(double(T)));
  double worst = 0;
  std::vector<bool> written(gin.host.size(), false);
  for (index_t s = 0; s < count; ++s) {
    const chain_problem& p = problems[std::size_t(s)];
    const std::vector<dmat>& before = products[std::size_t(s)];
    const auto ref = reference_adjoint(p, before, c.order, c.reverse, c.exclusive, c.prefix);
    const auto size = adjoint_scales(p, before, c.reverse, c.exclusive, c.prefix);
    const auto error = [&](const dmat& got, const dmat& want, double scale) {
      return (got - want).norm() / (scale > 0 ? scale : 1.0);
    };
    for (index_t t = 0; t < T; ++t) {
      dmat got(N, N);
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) {
          const std::size_t k = std::size_t(c.grad_in.entry(s, t, i, j));
          got(i, j) = double(gin.host[k]);
          written[k] = true;
        }
      ptest::keep_worst(worst, error(got, ref.first[std::size_t(t)], size.first[std::size_t(t)]));
    }
    if (c.grad_initial) {
      dmat got(N, N);
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) got(i, j) = double(ginit.host[dense(s, i, j)]);
      ptest::keep_worst(worst, error(got, ref.second, size.second));
    }
  }
  INFO("worst error (Frobenius, relative to adjoint_scales) " << worst << ", tolerance " << tol);
  CHECK(worst <= tol);
  for (std::size_t k = 0; k < gin.host.size(); ++k)
    if (!written[k] && !std::isnan(double(gin.host[k]))) {
      FAIL("an entry outside grad_in was written: scalar " << k);
      break;
    }
  for (std::size_t k = c.grad_initial ? std::size_t(count * NN) : 0; k < ginit.host.size(); ++k)
    REQUIRE(std::isnan(double(ginit.host[k])));  // past the chains' dL/d(initial), or all without it
  // The inputs are read only.
  const std::vector<S> in_before = in.host;
  in.download();
  CHECK(std::equal(in.host.begin(), in.host.end(), in_before.begin(),
                   [](S x, S y) { return x == y || (std::isnan(double(x)) && std::isnan(double(y))); }));
}

/// Option combinations (one in `every`, and all at once) over sizes, lengths and chain counts, with
/// the views' storage, leading dimensions, gaps and time-major placement varied from case to case.
template <class S>
void sweep_backward(bool prefix, const std::vector<index_t>& sizes, const std::vector<index_t>& lengths,
                    const std::vector<index_t>& counts = {1, 3}, int every = 3) {
  int variant = 0;
  for (index_t N : sizes)
    for (index_t T : lengths)
      for (index_t count : counts) {
        ++variant;
        backward_case c;
        c.prefix = prefix;
        const bool time_major = variant % 2 == 0;
        const auto storage = [&](int k) {
          return (variant + k) % 3 == 0 ? matrix_storage::column_major : matrix_storage::row_major;
        };
        c.in = {count, T, N, N + (variant % 4 == 1 ? 3 : 0), variant % 7 == 3 ? 5 : 0, time_major, storage(0)};
        c.out = {count, T, N, N + (variant % 4 == 2 ? 2 : 0), variant % 7 == 4 ? 1 : 0, !time_major, storage(1)};
        c.grad_out = {count, T, N, N, variant % 5 == 1 ? 2 : 0, time_major, storage(2)};
        c.grad_in = {count, T, N, N + (variant % 4 == 3 ? 1 : 0), variant % 7 == 5 ? 3 : 0, !time_major, storage(0)};
        for (int flags = 0; flags < 32; ++flags) {
          if (!prefix && (flags & 2 || flags & 8)) continue;  // a reduction: no exclusive, no grad_final
          if ((flags + variant) % every != 0 && flags != 31 && flags != 21) continue;
          c.reverse = flags & 1;
          c.exclusive = flags & 2;
          c.initial = flags & 4;
          c.grad_final = flags & 8;
          c.grad_initial = flags & 16;
          // (flags + variant) % every == 0 for most cases run: the order from the other bits
          c.order = (flags / 2 + variant) % 2 ? chain_order::right_to_left : chain_order::left_to_right;
          check_backward<S>(c);
        }
      }
}

}  // namespace

TEST_CASE("runtime-size chain backward: the fp64 adjoint against central differences") {
  ptest::fast_random g;
  const index_t N = 3, T = 4;
  for (chain_order order : {chain_order::left_to_right, chain_order::right_to_left})
    for (int flags = 0; flags < 8; ++flags) {
      const bool reverse = flags & 1, exclusive = flags & 2, prefix = !(flags & 4);
      if (!prefix && exclusive) continue;
      chain_problem p;
      p.x0 = random_factor(g, N, 1.3);
      p.grad_final = random_gradient(g, N);
      for (index_t t = 0; t < T; ++t) {
        p.m.push_back(random_factor(g, N, 1.0) + 0.3 * random_gradient(g, N));
        p.g.push_back(prefix ? random_gradient(g, N) : dmat::Zero(N, N));
      }
      const auto ref = reference_adjoint(p, products_before(p, order, reverse), order, reverse, exclusive, prefix);
      const double h = 1e-4;
      const auto difference = [&](double& x) {
        const double keep = x;
        x = keep + h;
        const double up = loss(p, order, reverse, exclusive, prefix);
        x = keep - h;
        const double down = loss(p, order, reverse, exclusive, prefix);
        x = keep;
        return (up - down) / (2 * h);  // exact but for rounding: L is linear in each entry
      };
      for (index_t t = 0; t < T; ++t)
        for (index_t i = 0; i < N; ++i)
          for (index_t j = 0; j < N; ++j)
            CHECK(std::abs(difference(p.m[std::size_t(t)](i, j)) - ref.first[std::size_t(t)](i, j)) <= 1e-8);
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) CHECK(std::abs(difference(p.x0(i, j)) - ref.second(i, j)) <= 1e-8);
    }
}

TEST_CASE("runtime-size chain backward: prefix, float, every option, odd sizes and lengths") {
  sweep_backward<float>(true, {1, 3, 17}, {0, 1, 2, 5, 17, 33});
}

TEST_CASE("runtime-size chain backward: reduction, float, every option, odd sizes and lengths") {
  sweep_backward<float>(false, {1, 3, 17}, {0, 1, 2, 5, 17, 33});
}

TEST_CASE("runtime-size chain backward: double, many chains") {
  sweep_backward<double>(true, {2, 9}, {1, 7, 33}, {1, 17});
  sweep_backward<double>(false, {2, 9}, {1, 7, 33}, {1, 17});
}

TEST_CASE("runtime-size chain backward: long chains and GPU-sized matrices") {
  if (!ptest::on_gpu) {
    sweep_backward<float>(true, {4}, {1000}, {1});
    sweep_backward<float>(false, {4}, {1000}, {1});
    return;
  }
  // The fp64 reference costs about five N^3 products a step on the host: few option combinations here.
  sweep_backward<float>(true, {64}, {1000}, {1, 3}, 16);
  sweep_backward<float>(false, {64}, {1000}, {1, 3}, 16);
  sweep_backward<float>(true, {130}, {100}, {1, 3}, 16);
  sweep_backward<float>(false, {130}, {100}, {1, 3}, 16);
}

TEST_CASE("runtime-size chain backward: TF32 arithmetic (GPU), within its precision") {
  for (bool prefix : {true, false})
    for (index_t N : {index_t(16), index_t(64), index_t(256)}) {
      backward_case c;
      c.prefix = prefix;
      c.in = {2, N >= 256 ? 16 : 50, N, N, 0, false, matrix_storage::row_major};
      c.out = c.grad_out = c.grad_in = c.in;
      c.initial = c.grad_initial = true;
      c.grad_final = prefix;
      c.math = matrix_math::tf32;
      check_backward<float>(c);  // the host computes exactly, within the same bound
    }
}

TEST_CASE("runtime-size chain backward: bad arguments are refused, nothing written") {
  const index_t N = 4, T = 3, B = 2, NN = N * N;
  ptest::buffer<float> in(std::size_t(B * T * NN), 1.0f), out(std::size_t(B * T * NN), 1.0f),
      gout(std::size_t(B * T * NN), 1.0f), gin(std::size_t(B * T * NN + 8)), dense(std::size_t(4 * B * NN), 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(gin.host.begin(), gin.host.end(), nan);
  std::fill(dense.host.begin() + 2 * B * NN, dense.host.end(), nan);
  for (auto* b : {&in, &out, &gout, &gin, &dense}) b->upload();
  const auto factors = parascan::dense_chains<const float>(in.data(), B, T, N);
  const auto products = parascan::dense_chains<const float>(out.data(), B, T, N);
  const auto upstream = parascan::dense_chains<const float>(gout.data(), B, T, N);
  const auto grads = parascan::dense_chains(gin.data(), B, T, N);
  float* grad_result = dense.data();
  float* writable = dense.data() + 2 * B * NN;  // B matrices, then B more
  const auto refused = [&](auto&& call, const char* argument) {
    try {
      call();
      FAIL("accepted; expected an error naming " << argument);
    } catch (const parascan::error& e) {
      const std::string message = e.what(), head = std::string("parascan: ") + argument;
      // "parascan: <argument>[.field]: <what it expects>"
      const bool named = message.rfind(head, 0) == 0 && message.size() > head.size() &&
                         (message[head.size()] == ':' || message[head.size()] == '.');
      CHECK_MESSAGE(named, message);
    }
  };
  const auto prefix = [&](auto in_, auto out_, auto gout_, auto gin_, parascan::matrix_backward_options<float> o) {
    parascan::matrix_chain_backward(ptest::exec(), in_, out_, gout_, gin_, o);
  };
  const auto reduce = [&](const float* g, auto gin_, parascan::matrix_backward_options<float> o) {
    parascan::matrix_chain_product_backward(ptest::exec(), factors, g, gin_, o);
  };
  parascan::matrix_backward_options<float> o;
  refused([&] { prefix(factors, parascan::dense_chains<const float>(out.data(), B, T - 1, N), upstream, grads, o); },
          "out.origins");
  refused([&] { prefix(factors, products, parascan::dense_chains<const float>(gout.data(), B, T, N - 1), grads, o); },
          "grad_out");
  auto bad = grads;
  bad.ld = N - 1;
  refused([&] { prefix(factors, products, upstream, bad, o); }, "grad_in.ld");
  bad = grads;
  bad.origins.time_stride = N;  // matrices overlap each other
  refused([&] { prefix(factors, products, upstream, bad, o); }, "grad_in");
  const auto over_out = parascan::dense_chains(const_cast<float*>(out.data()), B, T, N);
  refused([&] { prefix(factors, products, upstream, over_out, o); }, "grad_in");
  refused([&] { reduce(grad_result, parascan::dense_chains(const_cast<float*>(in.data()), B, T, N), o); }, "grad_in");
  refused([&] { reduce(nullptr, grads, o); }, "grad_result");
  o.exclusive = true;
  refused([&] { reduce(grad_result, grads, o); }, "options.exclusive");
  o = {};
  o.grad_final = grad_result;
  refused([&] { reduce(grad_result, grads, o); }, "options.grad_final");
  o = {};
  o.grad_initial = gin.data() + 8;  // inside grad_in
  refused([&] { prefix(factors, products, upstream, grads, o); }, "options.grad_initial");
  o.grad_initial = const_cast<float*>(in.data());
  refused([&] { prefix(factors, products, upstream, grads, o); }, "options.grad_initial");
  o = {};
  o.grad_initial = writable;
  o.initial = writable + NN;  // overlaps the chain-1 slot of grad_initial
  refused([&] { prefix(factors, products, upstream, grads, o); }, "options.grad_initial");
  o = {};
  o.initial = gin.data();
  refused([&] { prefix(factors, products, upstream, grads, o); }, "grad_in");
  parascan::matrix_backward_options<double> od;
  od.math = matrix_math::tf32;
  std::vector<double> none;
  refused(
      [&] {
        parascan::matrix_chain_product_backward(ptest::exec(), parascan::dense_chains<const double>(nullptr, 0, 0, 4),
                                                none.data(), parascan::dense_chains<double>(nullptr, 0, 0, 4), od);
      },
      "options.math");
  gin.download();
  dense.download();
  in.download();
  for (float x : in.host) REQUIRE(x == 1.0f);
  for (float x : gin.host) REQUIRE(std::isnan(x));
  for (std::size_t k = std::size_t(2 * B * NN); k < dense.host.size(); ++k) REQUIRE(std::isnan(dense.host[k]));
}

#if defined(__CUDACC__)
TEST_CASE("runtime-size chain backward: captured into a CUDA graph and replayed") {
  // Its inner chains run on workspace that a captured call may not ask the driver about (not mapped yet).
  const index_t N = 20, T = 30, NN = N * N;
  ptest::fast_random g;
  const std::size_t steps = std::size_t(T * NN);
  ptest::buffer<float> in(steps), out(steps), upstream(steps), direct(2 * steps), replayed(2 * steps),
      grad_result(static_cast<std::size_t>(NN));
  for (index_t t = 0; t < T; ++t) {
    const dmat x = ptest::random_factor(g, N, g.uniform(0.9, 1.1)), u = ptest::random_factor(g, N, 1.0);
    for (index_t k = 0; k < NN; ++k) {
      in.host[std::size_t(t * NN + k)] = float(x(k / N, k % N));
      upstream.host[std::size_t(t * NN + k)] = float(u(k / N, k % N));
    }
  }
  for (index_t k = 0; k < NN; ++k) grad_result.host[std::size_t(k)] = float(k % 7) - 3;
  for (auto* b : {&in, &upstream, &grad_result}) b->upload();
  const auto factors = parascan::dense_chains<const float>(in.data(), 1, T, N);
  parascan::matrix_chain(ptest::exec(), factors, parascan::dense_chains(out.data(), 1, T, N));
  const auto run = [&](parascan::cuda exec, float* target) {
    parascan::matrix_backward_options<float> o;
    parascan::matrix_chain_backward(exec, factors, parascan::dense_chains<const float>(out.data(), 1, T, N),
                                    parascan::dense_chains<const float>(upstream.data(), 1, T, N),
                                    parascan::dense_chains(target, 1, T, N), o);
    parascan::matrix_chain_product_backward(exec, factors, grad_result.data(),
                                            parascan::dense_chains(target + T * NN, 1, T, N), o);
  };
  // The same products; cuBLAS may pick other kernels while capturing.
  CHECK(ptest::replay_difference(run, direct, replayed) <= 1e-5);
}
#endif
