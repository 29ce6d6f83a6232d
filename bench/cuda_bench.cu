// CUDA benchmark: the engine against a copy kernel and CUB with the same operator, in one run.
// CUDA events, median of many runs after warm-up, L2 flushed (a 256 MiB memset) before each run.
// Effective GB/s counts the fewest bytes the scan must move: each input read once, each output written once.
//   parascan_bench_cuda [--quick]
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include <Eigen/Core>
#include <parascan/cuda.cuh>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/parascan.hpp>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class T>
struct device_array {
  T* p = nullptr;
  std::size_t n = 0;
  explicit device_array(std::size_t count) : n(count) { check(cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc"); }
  ~device_array() { cudaFree(p); }
  device_array(const device_array&) = delete;
};

/// Uniform floats in [lo, hi): random data, never zeros.
__global__ void fill_uniform(float* x, std::size_t n, float lo, float hi, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = lo + (hi - lo) * float(h & 0xffffff) / float(0x1000000);
  }
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n4) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

struct timer {
  device_array<char> flush{std::size_t(256) << 20};
  cudaEvent_t start, stop;
  timer() { cudaEventCreate(&start), cudaEventCreate(&stop); }
  /// Median milliseconds of `runs` timed calls after `warmup` untimed ones, L2 flushed before each.
  double median_ms(const std::function<void()>& f, int warmup = 3, int runs = 20) {
    for (int i = 0; i < warmup; ++i) f();
    std::vector<float> ms;
    for (int i = 0; i < runs; ++i) {
      check(cudaMemsetAsync(flush.p, i, flush.n), "flush");
      cudaEventRecord(start);
      f();
      cudaEventRecord(stop);
      check(cudaEventSynchronize(stop), "run");
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      ms.push_back(t);
    }
    check(cudaGetLastError(), "kernel");
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
  }
};

using pair_op = parascan::ops::linear_recurrence<float>;
struct pair_scan_op {  // CUB's operator on stored pairs
  __host__ __device__ float2 operator()(const float2& e, const float2& l) const { return {e.x * l.x, l.x * e.y + l.y}; }
};
__global__ void interleave(const float* a, const float* b, float2* ab, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    ab[i] = {a[i], b[i]};
}

struct row {
  std::string name;
  double ms, gbs;
};
std::vector<row> rows;
double copy_gbs = 0;

void report(const std::string& name, double ms, double bytes) {
  const double gbs = bytes / ms / 1e6;
  rows.push_back({name, ms, gbs});
  std::printf("%-58s %9.3f ms %8.1f GB/s %5.1f%% of copy\n", name.c_str(), ms, gbs, 100 * gbs / copy_gbs);
  std::fflush(stdout);
}

/// Times one call under an explicit policy (the sweep that chose default_policy's values).
template <class Policy, class Call>
void bench_variant(timer& tm, const std::string& label, double bytes, Call&& call) {
  const double ms = tm.median_ms([&] { call(Policy{}); });
  report("  policy " + label, ms, bytes);
}

template <class Policy = parascan::use_default_policy>
void bench_policy(timer& tm, const char* label, float* a, float* b, float* x, long B, long D, long T) {
  const auto view = [&](float* p) { return parascan::bdt(p, B, D, T); };
  const double ms = tm.median_ms([&] {
    parascan::prefix_scan<Policy>(parascan::cuda{}, pair_op{}, parascan::inputs(view(a), view(b)), view(x));
  });
  char name[128];
  std::snprintf(name, sizeof name, "  policy %s (%ld,%ld,%ld) bdt", label, B, D, T);
  report(name, ms, 12.0 * B * D * T);
}

void bench_linear_recurrence(timer& tm, long B, long D, long T, bool btd, bool policies = false) {
  const std::size_t n = std::size_t(B) * D * T;
  device_array<float> a(n), b(n), x(n);
  fill_uniform<<<1024, 256>>>(a.p, n, 0.9f, 1.0f, 1);
  fill_uniform<<<1024, 256>>>(b.p, n, -1.f, 1.f, 2);
  const auto view = [&](float* p) { return btd ? parascan::btd(p, B, T, D) : parascan::bdt(p, B, D, T); };
  const double ms = tm.median_ms([&] { parascan::linear_recurrence(parascan::cuda{}, view(a.p), view(b.p), view(x.p)); });
  char name[128];
  std::snprintf(name, sizeof name, "linear_recurrence fp32 (%ld,%ld,%ld) %s", B, D, T, btd ? "btd" : "bdt");
  report(name, ms, 12.0 * n);
  if (policies) {
    using parascan::combine_variant;
    bench_policy<parascan::cuda_policy<256, 8, combine_variant::automatic, 4>>(tm, "256x8 min4", a.p, b.p, x.p, B, D, T);
    bench_policy<parascan::cuda_policy<256, 4, combine_variant::automatic, 4>>(tm, "256x4 min4", a.p, b.p, x.p, B, D, T);
    bench_policy<parascan::cuda_policy<128, 4, combine_variant::automatic, 8>>(tm, "128x4 min8", a.p, b.p, x.p, B, D, T);
    bench_policy<parascan::cuda_policy<256, 2, combine_variant::automatic, 4>>(tm, "256x2 min4", a.p, b.p, x.p, B, D, T);
    bench_policy<parascan::cuda_policy<512, 4, combine_variant::automatic, 2>>(tm, "512x4 min2", a.p, b.p, x.p, B, D, T);
    bench_policy<parascan::cuda_policy<256, 6, combine_variant::automatic, 4>>(tm, "256x6 min4", a.p, b.p, x.p, B, D, T);
  }

  if (btd) return;
  // Baseline: CUB's segmented form (scan by key, one key per sequence) over interleaved pairs.
  device_array<float2> ab(n), out(n);
  device_array<int> keys(n);
  interleave<<<1024, 256>>>(a.p, b.p, ab.p, n);
  std::vector<int> hk(n);
  for (std::size_t i = 0; i < n; ++i) hk[i] = int(i / T);
  check(cudaMemcpy(keys.p, hk.data(), n * sizeof(int), cudaMemcpyHostToDevice), "keys");
  std::size_t temp_bytes = 0;
  cub::DeviceScan::InclusiveScanByKey(nullptr, temp_bytes, keys.p, ab.p, out.p, pair_scan_op{}, n);
  device_array<char> temp(temp_bytes);
  const double cub_ms = tm.median_ms([&] {
    cub::DeviceScan::InclusiveScanByKey(temp.p, temp_bytes, keys.p, ab.p, out.p, pair_scan_op{}, n);
  });
  std::snprintf(name, sizeof name, "  baseline CUB InclusiveScanByKey pairs (%ld,%ld,%ld)", B, D, T);
  report(name, cub_ms, 12.0 * n);  // same useful bytes as the scan above
}

void bench_single_sequence(timer& tm, long T) {
  const std::size_t n = std::size_t(T);
  device_array<float> a(n), b(n), x(n);
  fill_uniform<<<1024, 256>>>(a.p, n, 0.9f, 1.0f, 3);
  fill_uniform<<<1024, 256>>>(b.p, n, -1.f, 1.f, 4);
  const double ms = tm.median_ms([&] {
    parascan::linear_recurrence(parascan::cuda{}, parascan::single(a.p, T), parascan::single(b.p, T), parascan::single(x.p, T));
  });
  char name[128];
  std::snprintf(name, sizeof name, "linear_recurrence fp32 single T=%ld", T);
  report(name, ms, 12.0 * n);

  device_array<float2> ab(n), out(n);
  interleave<<<1024, 256>>>(a.p, b.p, ab.p, n);
  std::size_t temp_bytes = 0;
  cub::DeviceScan::InclusiveScan(nullptr, temp_bytes, ab.p, out.p, pair_scan_op{}, int(n));
  device_array<char> temp(temp_bytes);
  const double cub_ms = tm.median_ms([&] {
    cub::DeviceScan::InclusiveScan(temp.p, temp_bytes, ab.p, out.p, pair_scan_op{}, int(n));
  });
  std::snprintf(name, sizeof name, "  baseline CUB InclusiveScan pairs single T=%ld", T);
  report(name, cub_ms, 12.0 * n);
}

__global__ void to_bf16(const float* x, __nv_bfloat16* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(x[i]);
}

/// bf16 gates and tokens, fp32 state, bf16 output: 6 bytes per step.
void bench_bf16(timer& tm, long B, long D, long T) {
  const std::size_t n = std::size_t(B) * D * T;
  device_array<float> tmp(n);
  device_array<__nv_bfloat16> a(n), b(n), x(n);
  fill_uniform<<<1024, 256>>>(tmp.p, n, 0.9f, 1.0f, 6);
  to_bf16<<<1024, 256>>>(tmp.p, a.p, n);
  fill_uniform<<<1024, 256>>>(tmp.p, n, -1.f, 1.f, 7);
  to_bf16<<<1024, 256>>>(tmp.p, b.p, n);
  const double ms = tm.median_ms([&] {
    parascan::linear_recurrence(parascan::cuda{}, parascan::bdt(a.p, B, D, T), parascan::bdt(b.p, B, D, T),
                                parascan::bdt(x.p, B, D, T));
  });
  char name[128];
  std::snprintf(name, sizeof name, "linear_recurrence bf16 in/out (%ld,%ld,%ld) bdt", B, D, T);
  report(name, ms, 6.0 * n);
  using parascan::combine_variant;
  const auto call = [&](auto policy) {
    parascan::prefix_scan<decltype(policy)>(parascan::cuda{}, parascan::ops::linear_recurrence<float>{},
                                            parascan::inputs(parascan::bdt(a.p, B, D, T), parascan::bdt(b.p, B, D, T)),
                                            parascan::bdt(x.p, B, D, T));
  };
  bench_variant<parascan::cuda_policy<256, 8, combine_variant::automatic, 4>>(tm, "bf16 256x8 min4", 6.0 * n, call);
  bench_variant<parascan::cuda_policy<256, 4, combine_variant::automatic, 4>>(tm, "bf16 256x4 min4", 6.0 * n, call);
  bench_variant<parascan::cuda_policy<128, 8, combine_variant::automatic, 8>>(tm, "bf16 128x8 min8", 6.0 * n, call);
}

struct logaddexp_op {
  __host__ __device__ float operator()(float a, float b) const { return parascan::ops::logaddexp(a, b); }
};

void bench_logcumsumexp(timer& tm, long B, long D, long T) {
  const std::size_t n = std::size_t(B) * D * T;
  device_array<float> x(n), y(n);
  fill_uniform<<<1024, 256>>>(x.p, n, -5.f, 5.f, 8);
  const double ms = tm.median_ms([&] { parascan::logcumsumexp(parascan::cuda{}, parascan::bdt(x.p, B, D, T), parascan::bdt(y.p, B, D, T)); });
  char name[128];
  std::snprintf(name, sizeof name, "logcumsumexp fp32 (%ld,%ld,%ld) bdt", B, D, T);
  report(name, ms, 8.0 * n);
  {
    using parascan::combine_variant;
    const auto call = [&](auto policy) {
      parascan::prefix_scan<decltype(policy)>(parascan::cuda{}, parascan::ops::log_add_exp<float>{},
                                              parascan::bdt(x.p, B, D, T), parascan::bdt(y.p, B, D, T));
    };
    bench_variant<parascan::cuda_policy<256, 8, combine_variant::automatic, 4>>(tm, "lse 256x8 min4", 8.0 * n, call);
    bench_variant<parascan::cuda_policy<256, 4, combine_variant::automatic, 4>>(tm, "lse 256x4 min4", 8.0 * n, call);
    bench_variant<parascan::cuda_policy<128, 8, combine_variant::automatic, 8>>(tm, "lse 128x8 min8", 8.0 * n, call);
    bench_variant<parascan::cuda_policy<256, 16, combine_variant::automatic, 2>>(tm, "lse 256x16 min2", 8.0 * n, call);
  }
  device_array<int> keys(n);
  std::vector<int> hk(n);
  for (std::size_t i = 0; i < n; ++i) hk[i] = int(i / T);
  check(cudaMemcpy(keys.p, hk.data(), n * sizeof(int), cudaMemcpyHostToDevice), "keys");
  std::size_t temp_bytes = 0;
  cub::DeviceScan::InclusiveScanByKey(nullptr, temp_bytes, keys.p, x.p, y.p, logaddexp_op{}, n);
  device_array<char> temp(temp_bytes);
  const double cub_ms = tm.median_ms([&] { cub::DeviceScan::InclusiveScanByKey(temp.p, temp_bytes, keys.p, x.p, y.p, logaddexp_op{}, n); });
  std::snprintf(name, sizeof name, "  baseline CUB InclusiveScanByKey logaddexp (%ld,%ld,%ld)", B, D, T);
  report(name, cub_ms, 8.0 * n);
}

/// Cumulative products of 4x4 fp32 matrices: 128 bytes per step.
void bench_matrix_chain(timer& tm, long count, long T) {
  using M = Eigen::Matrix4f;
  const std::size_t n = std::size_t(count) * T;
  device_array<M> m(n), p(n);
  fill_uniform<<<1024, 256>>>(reinterpret_cast<float*>(m.p), n * 16, -0.5f, 0.5f, 9);
  const double ms = tm.median_ms([&] {
    parascan::matrix_chain(parascan::cuda{}, parascan::bdt(m.p, 1, count, T), parascan::bdt(p.p, 1, count, T));
  });
  char name[128];
  std::snprintf(name, sizeof name, "matrix_chain 4x4 fp32 (%ld sequences x %ld)", count, T);
  report(name, ms, 128.0 * n);
  using parascan::combine_variant;
  const auto call = [&](auto policy) {
    parascan::prefix_scan<decltype(policy)>(parascan::cuda{}, parascan::ops::matrix_product<M>{},
                                            parascan::bdt(m.p, 1, count, T), parascan::bdt(p.p, 1, count, T));
  };
  bench_variant<parascan::cuda_policy<64, 2>>(tm, "mat4 64x2", 128.0 * n, call);
  bench_variant<parascan::cuda_policy<128, 1>>(tm, "mat4 128x1", 128.0 * n, call);
  bench_variant<parascan::cuda_policy<128, 1, combine_variant::sequential>>(tm, "mat4 128 sequential", 128.0 * n, call);
  bench_variant<parascan::cuda_policy<64, 1, combine_variant::sequential>>(tm, "mat4 64 sequential", 128.0 * n, call);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  timer tm;
  {
    const std::size_t n4 = std::size_t(1) << 28;  // 4 GiB read + 4 GiB written
    device_array<float4> in(n4), out(n4);
    fill_uniform<<<1024, 256>>>(reinterpret_cast<float*>(in.p), n4 * 4, 0.f, 1.f, 5);
    const double ms = tm.median_ms([&] { copy_kernel<<<prop.multiProcessorCount * 8, 256>>>(in.p, out.p, n4); }, 2, 10);
    copy_gbs = 2.0 * n4 * sizeof(float4) / ms / 1e6;
    std::printf("%-58s %9.3f ms %8.1f GB/s (read + write)\n", "copy kernel 8 GiB", ms, copy_gbs);
  }
  bench_linear_recurrence(tm, 8, 1536, 4096, false, !quick);
  bench_linear_recurrence(tm, 8, 1536, 4096, true);
  if (!quick) {
    bench_linear_recurrence(tm, 8, 1536, 65536, false);
    bench_linear_recurrence(tm, 8, 1536, 65536, true);
    bench_single_sequence(tm, long(1) << 26);
    bench_bf16(tm, 8, 1536, 4096);
    bench_logcumsumexp(tm, 8, 1536, 4096);
    bench_matrix_chain(tm, 4096, 4096);
    bench_matrix_chain(tm, 8, 1 << 20);
  }
  return 0;
}
