// Runtime-size chains alone (ops/runtime_matrix_chain.hpp, cuBLAS), as the bench's rows: one column-major
// fp32 chain, the prefix of 1024 factors and the product of 1000, exact and TF32, medians of 7 event-timed
// calls after an L2 flush each. Factors: a pool of 8 Haar-random orthogonal matrices in an irregular
// order. Each TF32 result is compared with the exact one of the same run (largest relative entry error
// against the largest entry).
//
// Usage: parascan_chain_probe [N ...] (default 128 256 512 1024); PROBE_GRAPH=1 also times each call
// captured in a CUDA graph (the device's time alone); PROBE_ONCE=1 runs one TF32 prefix and product
// untimed (for ncu); PROBE_ROW_MAJOR=1 reads the factors as row-major.
#include <parascan/cuda_matrices.cuh>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "event_timer.cuh"
#include "kept_pool.cuh"

using index_t = parascan::index_t;

namespace {

void check(cudaError_t e, const char* what) { bench::check_or_exit(e, what); }

bench::kept_pool_allocator kept;  // main() keeps the default pool (bench/kept_pool.cuh)

std::vector<float> orthogonal_pool(index_t N, int size) {
  std::mt19937 g(11);
  std::normal_distribution<double> z;
  std::vector<float> pool(std::size_t(size * N * N));
  for (int q = 0; q < size; ++q) {
    Eigen::MatrixXd a(N, N);
    for (index_t j = 0; j < N; ++j)
      for (index_t i = 0; i < N; ++i) a(i, j) = z(g);
    const Eigen::MatrixXd m = Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ();
    for (index_t j = 0; j < N; ++j)
      for (index_t i = 0; i < N; ++i) pool[std::size_t(q * N * N + i + j * N)] = float(m(i, j));
  }
  return pool;
}

void probe(index_t N) {
  const index_t NN = N * N, T = 1024;
  const int pool_size = 8;
  const std::vector<float> host_pool = orthogonal_pool(N, pool_size);
  float *in, *out, *exact, *pool;
  unsigned char* flush;
  const std::size_t flush_bytes = std::size_t(256) << 20;
  check(cudaMalloc(&in, std::size_t(T * NN) * 4), "in");
  check(cudaMalloc(&out, std::size_t(T * NN) * 4), "out");
  check(cudaMalloc(&exact, std::size_t(T * NN) * 4), "exact");
  check(cudaMalloc(&pool, host_pool.size() * 4), "pool");
  check(cudaMalloc(&flush, flush_bytes), "flush");
  check(cudaMemcpy(pool, host_pool.data(), host_pool.size() * 4, cudaMemcpyHostToDevice), "pool");
  for (index_t t = 0; t < T; ++t)
    check(cudaMemcpy(in + t * NN, pool + int((t * 5 + t / 16) % pool_size) * NN, NN * 4, cudaMemcpyDeviceToDevice),
          "fill");
  // (PROBE_ROW_MAJOR=1: the same factors read as row-major, their transposes: another layout of the kernels)
  const char* row_major = std::getenv("PROBE_ROW_MAJOR");
  const auto col = row_major != nullptr && row_major[0] == '1' ? parascan::matrix_storage::row_major
                                                                : parascan::matrix_storage::column_major;
  if (std::getenv("PROBE_ONCE") != nullptr) {  // one TF32 prefix and product, untimed (for ncu's kernel list)
    parascan::matrix_options<float> o;
    o.math = parascan::matrix_math::tf32;
    cudaStream_t st;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    const bool graph = std::getenv("PROBE_GRAPH") != nullptr;  // the two calls captured, then launched once
    cudaGraph_t g;
    cudaGraphExec_t exe;
    if (graph) check(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed), "capture");
    parascan::matrix_chain(parascan::cuda{st, &kept}, parascan::dense_chains<const float>(in, 1, 1024, N, col),
                           parascan::dense_chains(out, 1, 1024, N, col), o);
    parascan::matrix_chain_product(parascan::cuda{st, &kept}, parascan::dense_chains<const float>(in, 1, 1000, N, col),
                                   exact, o);
    if (graph) {
      check(cudaStreamEndCapture(st, &g), "capture");
      check(cudaGraphInstantiate(&exe, g, 0), "instantiate");
      check(cudaGraphLaunch(exe, st), "launch");
    }
    check(cudaStreamSynchronize(st), "once");
    return;
  }
  for (bool prefix : {true, false}) {
    const index_t n = prefix ? 1024 : 1000;
    const auto factors = parascan::dense_chains<const float>(in, 1, n, N, col);
    double ms[2] = {}, graph_ms[2] = {};
    const bool graphs = std::getenv("PROBE_GRAPH") != nullptr;
    for (int m = 0; m < 2; ++m) {
      parascan::matrix_options<float> o;
      o.math = m == 0 ? parascan::matrix_math::exact : parascan::matrix_math::tf32;
      float* target = m == 0 ? exact : out;
      const auto call = [&] {
        if (prefix)
          parascan::matrix_chain(parascan::cuda{nullptr, &kept}, factors, parascan::dense_chains(target, 1, n, N, col), o);
        else
          parascan::matrix_chain_product(parascan::cuda{nullptr, &kept}, factors, target, o);
      };
      ms[m] = bench::median_event_ms(call, 7, 2, [&](int) { check(cudaMemsetAsync(flush, m, flush_bytes), "flush"); },
                                     check);
      if (graphs) {  // the same call captured once and replayed: the device's time without the host's
        cudaStream_t st;
        check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
        parascan::cuda exec{st, &kept};
        cudaGraph_t graph;
        cudaGraphExec_t exe;
        check(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed), "capture");
        if (prefix)
          parascan::matrix_chain(exec, factors, parascan::dense_chains(target, 1, n, N, col), o);
        else
          parascan::matrix_chain_product(exec, factors, target, o);
        check(cudaStreamEndCapture(st, &graph), "capture");
        check(cudaGraphInstantiate(&exe, graph, 0), "instantiate");
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<float> times;
        for (int i = 0; i < 9; ++i) {
          check(cudaMemsetAsync(flush, i, flush_bytes, st), "flush");
          cudaEventRecord(e0, st);
          check(cudaGraphLaunch(exe, st), "graph");
          cudaEventRecord(e1, st);
          check(cudaEventSynchronize(e1), "graph");
          float t;
          cudaEventElapsedTime(&t, e0, e1);
          if (i >= 2) times.push_back(t);
        }
        std::sort(times.begin(), times.end());
        graph_ms[m] = times[times.size() / 2];
        cudaGraphExecDestroy(exe);
        cudaGraphDestroy(graph);
        cudaStreamDestroy(st);
      }
    }
    // TF32 against exact: the last product (prefix: the last output).
    std::vector<float> a(static_cast<std::size_t>(NN)), b(static_cast<std::size_t>(NN));
    const index_t last = prefix ? (n - 1) * NN : 0;
    check(cudaMemcpy(a.data(), exact + last, NN * 4, cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(b.data(), out + last, NN * 4, cudaMemcpyDeviceToHost), "download");
    double worst = 0, largest = 0;
    for (index_t k = 0; k < NN; ++k) {
      worst = std::max(worst, std::abs(double(a[std::size_t(k)]) - double(b[std::size_t(k)])));
      largest = std::max(largest, std::abs(double(a[std::size_t(k)])));
    }
    std::printf("N %4lld %-7s exact %8.3f ms  tf32 %8.3f ms  speed-up %5.2f  tf32 error %.2e%s\n",
                static_cast<long long>(N), prefix ? "prefix" : "product", ms[0], ms[1], ms[0] / ms[1],
                worst / largest, std::isfinite(worst) ? "" : " (NOT FINITE)");
    if (graphs)
      std::printf("N %4lld %-7s graphs: exact %8.3f ms  tf32 %8.3f ms\n", static_cast<long long>(N),
                  prefix ? "prefix" : "product", graph_ms[0], graph_ms[1]);
    std::fflush(stdout);
  }
  cudaFree(in);
  cudaFree(out);
  cudaFree(exact);
  cudaFree(pool);
  cudaFree(flush);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<index_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {128, 256, 512, 1024};
  check(bench::keep_default_pool(), "keep the default memory pool");  // as the bench
  for (index_t N : sizes) probe(N);
  return 0;
}
