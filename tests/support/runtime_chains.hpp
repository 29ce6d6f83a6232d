// Helpers of the runtime-size matrix chain tests (cases/matrix_chain_runtime*.hpp): where a test's
// matrices live, well-conditioned random factors, the unit roundoff of each GPU arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <parascan/matrix_sequences.hpp>

#include "matrices.hpp"

namespace ptest {

/// Where a test's matrices live in one buffer: N x N with leading dimension ld, chains one after another
/// (`time_major` false) or interleaved step by step, `gap` scalars of padding between matrices.
struct placement {
  index_t count, T, N, ld, gap;
  bool time_major;
  parascan::matrix_storage storage;

  index_t footprint() const { return N * ld + gap; }
  index_t scalars() const { return count * T * footprint() + 1; }
  index_t offset(index_t s, index_t t) const {
    return time_major ? (t * count + s) * footprint() : (s * T + t) * footprint();
  }
  template <class S>
  parascan::matrix_sequences<S> view(S* data) const {
    const index_t f = footprint();
    const auto origins = time_major ? parascan::strided(data, count, 1, f, 0, T, count * f)
                                    : parascan::strided(data, count, 1, T * f, 0, T, f);
    return parascan::matrices_at(origins, N, ld, storage);
  }
  index_t entry(index_t s, index_t t, index_t i, index_t j) const {
    return offset(s, t) + (storage == parascan::matrix_storage::column_major ? i + j * ld : i * ld + j);
  }
};

/// `scale` times the product of two random Householder reflections (I - 2 v v^T / v^T v): orthogonal up to
/// the scale, so products stay well-conditioned, and not symmetric, so that a factor read transposed
/// shows (one reflection alone is its own transpose).
inline Eigen::MatrixXd random_factor(fast_random& g, index_t N, double scale) {
  const auto vector = [&] {
    Eigen::VectorXd v(N);
    for (index_t i = 0; i < N; ++i) v[i] = g.normal();
    return v;
  };
  const Eigen::VectorXd v = vector(), w = vector();
  Eigen::MatrixXd h = Eigen::MatrixXd::Identity(N, N) - (2 / v.squaredNorm()) * v * v.transpose();
  h -= (2 / w.squaredNorm()) * (h * w) * w.transpose();  // h (I - 2 w w^T / w^T w), in N^2 work
  return scale * h;
}

template <class S>
double unit_roundoff(parascan::matrix_math math) {
  if (math == parascan::matrix_math::tf32) return 0x1p-11;
  if (math == parascan::matrix_math::bf16) return 0x1p-8;
  return std::numeric_limits<S>::epsilon() / 2;
}

#if defined(__CUDACC__)
/// Runs `run(exec, target)` into `direct` on the default stream, then on a stream of its own captured into
/// a CUDA graph and replayed into `replayed` (NaN before the replay). Returns the largest difference
/// between the two (infinite where a replayed entry is NaN) over the largest entry of `direct`.
template <class Run>
double replay_difference(Run&& run, buffer<float>& direct, buffer<float>& replayed) {
  run(exec(), direct.data());
  direct.download();
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  cudaGraphExec_t instance;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  run(parascan::cuda{stream}, replayed.data());
  check_cuda(cudaStreamEndCapture(stream, &graph), "capture");
  check_cuda(cudaGraphInstantiate(&instance, graph, 0), "instantiate");
  check_cuda(cudaMemset(replayed.data(), 0xff, replayed.size() * sizeof(float)), "poison");  // NaN
  check_cuda(cudaGraphLaunch(instance, stream), "launch");
  check_cuda(cudaStreamSynchronize(stream), "replay");
  replayed.download();
  cudaGraphExecDestroy(instance);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  double worst = 0, largest = 0;
  for (std::size_t k = 0; k < direct.host.size(); ++k) {
    const double d = std::abs(double(replayed.host[k]) - double(direct.host[k]));
    worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
    largest = std::max(largest, std::abs(double(direct.host[k])));
  }
  return largest > 0 ? worst / largest : std::numeric_limits<double>::infinity();
}
#endif

}  // namespace ptest
