// parascan quick start: two scans, on the GPU when there is one, on the CPU otherwise.
//
//  1. A linear recurrence x[t] = a[t] * x[t-1] + b[t] over a (B, D, T) batch of fp32 channels (the
//     recurrence of diagonal state space models and linear RNNs).
//  2. A cumulative chain of 4x4 matrices, P[t] = M[0] M[1] ... M[t], and its total (a reduction).
//
// Compiled by nvcc (the CMake build does so when CUDA is enabled) it runs parascan::cuda{} on device
// buffers if a CUDA device is present; compiled by a plain C++ compiler, or with no device, it runs
// parascan::host{} (one thread per core). Every result is checked against a plain loop: exit 1 on a mismatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Core>

#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/parascan.hpp>
#if defined(__CUDACC__)
#include <parascan/cuda.cuh>
#endif

using parascan::index_t;
using Mat = Eigen::Matrix4f;

constexpr index_t B = 4, D = 256, T = 4096;  // the recurrence: 1024 sequences of 4096 steps
constexpr index_t chains = 8, length = 4096;  // the matrix chains

/// The two scans, for either backend: the pointers are memory that `exec` reads and writes.
template <class Exec>
void run_scans(const Exec& exec, const float* a, const float* b, float* x, const Mat* m, Mat* p, Mat* total) {
  parascan::linear_recurrence(exec, parascan::bdt(a, B, D, T), parascan::bdt(b, B, D, T), parascan::bdt(x, B, D, T));
  const auto ms = parascan::bdt(m, chains, 1, length);  // `chains` sequences of `length` matrices
  parascan::matrix_chain(exec, ms, parascan::bdt(p, chains, 1, length));
  parascan::matrix_chain_product(exec, ms, total);
}

#if defined(__CUDACC__)
static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}
template <class T>
static T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  check(cudaMalloc(&p, v.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  return p;
}
template <class T>
static void to_host(std::vector<T>& v, const T* p) {
  check(cudaMemcpy(v.data(), p, v.size() * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

/// Runs the scans on the GPU (device copies of every array) and copies the results back; returns seconds.
static double run_on_gpu(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& x,
                         const std::vector<Mat>& m, std::vector<Mat>& p, std::vector<Mat>& total) {
  float *da = to_device(a), *db = to_device(b), *dx = to_device(x);
  Mat *dm = to_device(m), *dp = to_device(p), *dtotal = to_device(total);
  run_scans(parascan::cuda{}, da, db, dx, dm, dp, dtotal);  // warm-up: loads the kernels
  check(cudaDeviceSynchronize(), "scans (warm-up)");
  const auto t0 = std::chrono::steady_clock::now();
  run_scans(parascan::cuda{}, da, db, dx, dm, dp, dtotal);
  check(cudaDeviceSynchronize(), "scans");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  to_host(x, dx), to_host(p, dp), to_host(total, dtotal);
  for (void* ptr : {(void*)da, (void*)db, (void*)dx, (void*)dm, (void*)dp, (void*)dtotal}) check(cudaFree(ptr), "cudaFree");
  return seconds;
}

/// The name of device 0, or "" when no CUDA device can be used.
static std::string cuda_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // no driver or no device: not an error here, the host backend runs
    return "";
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return prop.name;
}
#endif

/// A random rotation in one coordinate plane: products of them stay bounded and do not commute.
static Mat random_rotation(std::mt19937& rng) {
  std::uniform_int_distribution<int> axis(0, 3);
  std::uniform_real_distribution<float> angle(0.0f, 6.2831853f);
  const int i = axis(rng), j = (i + 1 + axis(rng) % 3) % 4;
  const float theta = angle(rng), c = std::cos(theta), s = std::sin(theta);
  Mat r = Mat::Identity();
  r(i, i) = c, r(i, j) = -s, r(j, i) = s, r(j, j) = c;
  return r;
}

int main() {
  // Inputs: gates in (0.9, 1) (a decaying memory), tokens in (-1, 1); random plane rotations.
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> gate(0.9f, 1.0f), token(-1.0f, 1.0f);
  std::vector<float> a(B * D * T), b(B * D * T), x(B * D * T);
  for (index_t i = 0; i < B * D * T; ++i) a[i] = gate(rng), b[i] = token(rng);
  std::vector<Mat> m(chains * length), p(chains * length), total(chains);
  for (auto& mi : m) mi = random_rotation(rng);

  std::string backend;
  double seconds = 0;
#if defined(__CUDACC__)
  const std::string device = cuda_device();
  if (!device.empty()) {
    backend = "parascan::cuda on " + device;
    seconds = run_on_gpu(a, b, x, m, p, total);
  } else {
    backend = "parascan::host (built with CUDA, but no CUDA device found)";
  }
#else
  backend = "parascan::host (built without CUDA)";
#endif
  if (seconds == 0) {
    const parascan::host exec{};  // one thread per hardware thread
    const auto t0 = std::chrono::steady_clock::now();
    run_scans(exec, a.data(), b.data(), x.data(), m.data(), p.data(), total.data());
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    backend += ", " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads";
  }

  // The same computations as plain loops, in double precision.
  double worst_x = 0, worst_p = 0;
  for (index_t s = 0; s < B * D; ++s) {
    double xr = 0;
    for (index_t t = 0; t < T; ++t) {
      const index_t i = s * T + t;
      xr = double(a[i]) * xr + double(b[i]);
      worst_x = std::max(worst_x, std::abs(double(x[i]) - xr) / (1 + std::abs(xr)));
    }
  }
  for (index_t c = 0; c < chains; ++c) {
    Eigen::Matrix4d pr = Eigen::Matrix4d::Identity();
    for (index_t t = 0; t < length; ++t) {
      pr = pr * m[c * length + t].cast<double>();
      worst_p = std::max(worst_p, (p[c * length + t].cast<double>() - pr).cwiseAbs().maxCoeff());
    }
    worst_p = std::max(worst_p, (total[c].cast<double>() - pr).cwiseAbs().maxCoeff());
  }

  std::printf("backend: %s\n", backend.c_str());
  std::printf("linear recurrence x[t] = a[t] x[t-1] + b[t], (B, D, T) = (%lld, %lld, %lld), fp32\n", (long long)B,
              (long long)D, (long long)T);
  for (index_t t : {index_t(0), index_t(1), index_t(2), T - 1})
    std::printf("  sequence 0: x[%lld] = %+.6f\n", (long long)t, x[t]);
  std::printf("  max relative difference to the loop: %.1e\n", worst_x);
  std::printf("matrix chain P[t] = M[0] ... M[t], %lld chains of %lld 4x4 fp32 rotations\n", (long long)chains,
              (long long)length);
  std::printf("  chain 0, total product P[%lld]:\n", (long long)length - 1);
  for (int r = 0; r < 4; ++r)
    std::printf("    %+.5f %+.5f %+.5f %+.5f\n", total[0](r, 0), total[0](r, 1), total[0](r, 2), total[0](r, 3));
  std::printf("  max absolute difference to the loop: %.1e\n", worst_p);
  std::printf("time: %.2f ms for both scans (%s)\n", seconds * 1e3, backend.c_str());

  const bool ok = worst_x <= 1e-4 && worst_p <= 1e-3;
  std::printf("%s\n", ok ? "OK: every result matches the loop" : "FAILED: results differ from the loop");
  return ok ? 0 : 1;
}
