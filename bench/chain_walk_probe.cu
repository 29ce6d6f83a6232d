// Cumulative products of N x N fp32 matrices (N = 4 or 8) over many chains alone, as the bench's
// `matrix_chain 4x4` / `8x8` rows ((B, T) chains, 2^26 floats at the default (4096 / 1024, 1024),
// column-major factors, entries uniform and scaled so that products stay bounded), as dispatch runs them
// (the chain walk, cuda/chain_walk.cuh, from registers at 4 x 4: cuda/chain_registers.cuh): a call alone
// and calls back to back (medians of 21, event-timed), the copy floor of its bytes in the same process,
// and the chain product alone (reduce_scan) against a copy of its reads; both orders, four chains checked
// against fp64. For A/B runs built against copies of the headers.
//
// Usage: parascan_chain_walk_probe [B [T [N]]] (default 4096 1024 4; N = 8: 1024 chains by default)
#include <parascan/cuda.cuh>
#include <parascan/ops/matrix_product.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "event_timer.cuh"

using index_t = parascan::index_t;

template <parascan::chain_order Order, int N>
bool probe(const char* name, index_t B, index_t T, const std::vector<Eigen::Matrix<float, N, N>>& hm,
           const Eigen::Matrix<float, N, N>* m, Eigen::Matrix<float, N, N>* p, double copy) {
  using mat = Eigen::Matrix<float, N, N>;
  using matd = Eigen::Matrix<double, N, N>;
  const auto in = parascan::strided<const mat>(m, B, 1, T, 0, T, 1);
  const auto out = parascan::strided<mat>(p, B, 1, T, 0, T, 1);
  const auto call = [&] { parascan::matrix_chain<Order>(parascan::cuda{}, in, out); };
  call();
  cudaDeviceSynchronize();
  std::vector<mat> hp(hm.size());
  cudaMemcpy(hp.data(), p, hp.size() * sizeof(mat), cudaMemcpyDeviceToHost);
  double worst = 0;
  for (index_t s : {index_t(0), B / 3, B / 2 + 1, B - 1}) {
    matd ref = matd::Identity();
    for (index_t t = 0; t < T; ++t) {
      const std::size_t k = std::size_t(s * T + t);
      const matd f = hm[k].template cast<double>();
      ref = Order == parascan::chain_order::left_to_right ? matd(ref * f) : matd(f * ref);
      const double e = (hp[k].template cast<double>() - ref).cwiseAbs().maxCoeff() / std::max(1.0, ref.cwiseAbs().maxCoeff());
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  }
  const bool ok = worst <= 1e-5;
  const auto median_ms = [](auto&& f) { return bench::median_event_ms(f, 21, 2, [](int) {}, bench::check_or_exit); };
  const double ms = median_ms(call);
  const double back_to_back = median_ms([&] {  // 20 calls between the events: the host's time hidden
    for (int rep = 0; rep < 20; ++rep) call();
  }) / 20;
  mat* total;
  cudaMalloc(&total, std::size_t(B) * sizeof(mat));
  const double reduce = median_ms([&] { parascan::matrix_chain_product<Order>(parascan::cuda{}, in, total); });
  cudaFree(total);
  std::printf("%dx%d %s, (%lld, %lld): a call alone %.4f ms, %.1f%% of copy (%.4f ms); back to back %.4f ms, %.1f%%; "
              "product alone %.4f ms, %.1f%% of a copy of its reads; worst relative error %.2e (%s), %s\n",
              N, N, name, (long long)B, (long long)T, ms, 100 * copy / ms, copy, back_to_back, 100 * copy / back_to_back,
              reduce, 100 * copy / 2 / reduce, worst, ok ? "ok" : "FAILED", cudaGetErrorString(cudaGetLastError()));
  return ok;
}

template <int N>
bool run(index_t B, index_t T) {
  using mat = Eigen::Matrix<float, N, N>;
  const std::size_t n = std::size_t(B * T);
  std::vector<mat> hm(n);
  std::mt19937 g(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& f : hm)  // entries of 0.9 / N in magnitude on average: products stay bounded
    for (int e = 0; e < N * N; ++e) f.data()[e] = u(g) * 0.9f * std::sqrt(3.0f) / float(N);
  mat *m, *p;
  cudaMalloc(&m, n * sizeof(mat));
  cudaMalloc(&p, n * sizeof(mat));
  cudaMemcpy(m, hm.data(), n * sizeof(mat), cudaMemcpyHostToDevice);
  const std::size_t bytes = n * sizeof(mat);  // read once, written once
  void* dst;
  cudaMalloc(&dst, bytes);
  const double copy = bench::median_event_ms(
      [&] { cudaMemcpyAsync(dst, m, bytes, cudaMemcpyDeviceToDevice); }, 21, 2, [](int) {}, bench::check_or_exit);
  cudaFree(dst);
  bool ok = probe<parascan::chain_order::left_to_right>("left_to_right", B, T, hm, m, p, copy);
  ok = probe<parascan::chain_order::right_to_left>("right_to_left", B, T, hm, m, p, copy) && ok;
  cudaFree(m);
  cudaFree(p);
  return ok;
}

int main(int argc, char** argv) {
  const int N = argc > 3 ? std::atoi(argv[3]) : 4;
  const index_t B = argc > 1 ? std::atoll(argv[1]) : N == 8 ? 1024 : 4096, T = argc > 2 ? std::atoll(argv[2]) : 1024;
  cudaMemPool_t pool;  // as the bench: the default pool keeps its memory between calls
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long keep = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (N != 4 && N != 8) {
    std::fprintf(stderr, "N: 4 or 8\n");
    return 2;
  }
  return (N == 4 ? run<4>(B, T) : run<8>(B, T)) ? 0 : 1;
}
