// The sweep behind default_policy<Op, arch::sm90>: contiguous-time scans over (8, 1536, T) under explicit
// policies (threads x items, resident blocks per multiprocessor, pipeline stages), each as a fraction of
// the copy floor measured in the same run. Not a test, and not the benchmark (cuda_bench.cu): it is how
// the defaults were chosen, kept so that they can be chosen again on another device.
//   parascan_policy_sweep_<part>      (part: pair, pair_stream, bf16, scalar, scalar_stream, scalar_4096,
//   scalar_long, stream_prefetch, lookback, complex, short, matrix2; one executable each, built in parallel)
#include <cuda/std/complex>
#include <cuda_bf16.h>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <parascan/cuda.cuh>
#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/parascan.hpp>

#include "event_timer.cuh"

namespace {

using bench::check_or_exit;

/// Device memory from the stream-ordered pool, which main() makes keep what is freed: returning gigabytes
/// to the driver (cudaFree) sets it to work in the background, and the case timed next reads ~10 points
/// low (the copy floor's 4 GiB, then T = 4096 in an H100 sweep of cumsum, 2026-11-27; cuda_bench.cu's
/// device_array says more).
template <class T>
struct device_array {
  T* p = nullptr;
  explicit device_array(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(T);
    if (cudaMallocAsync(&p, bytes, 0) == cudaErrorMemoryAllocation) {  // the pool's keep in the way: trim
      (void)cudaGetLastError();
      cudaMemPool_t pool;
      check_or_exit(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
      check_or_exit(cudaDeviceSynchronize(), "before trimming the pool");
      check_or_exit(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
      check_or_exit(cudaMallocAsync(&p, bytes, 0), "cudaMallocAsync");
    }
    check_or_exit(cudaGetLastError(), "cudaMallocAsync");
  }
  ~device_array() { cudaFreeAsync(p, 0); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
};

/// The default pool keeps freed memory (device_array).
void keep_freed_memory() {
  cudaMemPool_t pool;
  check_or_exit(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  unsigned long long keep = ~0ull;
  check_or_exit(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

template <class T>
__global__ void fill(T* x, std::size_t n, float lo, float hi, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = T(lo + (hi - lo) * float(h & 0xffffff) / float(0x1000000));
  }
}

__global__ void copy4(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

device_array<char> flush(std::size_t(256) << 20);

/// Median of `runs` timed calls after 2 untimed ones, L2 flushed before each.
template <class F>
double median_ms(F&& f, int runs = 15) {
  return bench::median_event_ms(
      f, runs, 2, [](int i) { check_or_exit(cudaMemsetAsync(flush.p, i, std::size_t(256) << 20), "flush"); },
      check_or_exit);
}

double copy_gbs = 0;

void measure_copy() {
  int sms = 0;
  check_or_exit(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
  const std::size_t n4 = std::size_t(1) << 27;  // 2 GiB each way
  device_array<float4> in(n4), out(n4);
  fill<<<1024, 256>>>(reinterpret_cast<float*>(in.p), n4 * 4, 0.f, 1.f, 1);
  for (int per_sm : {4, 8, 16}) {
    const double ms = median_ms([&] { copy4<<<sms * per_sm, 256>>>(in.p, out.p, n4); }, 8);
    copy_gbs = std::max(copy_gbs, 2.0 * n4 * 16 / ms / 1e6);
  }
  // The driver's copy is the faster on an H200 (4.26 against 3.98 TB/s): the floor is the fastest.
  const double ms = median_ms([&] { cudaMemcpyAsync(out.p, in.p, n4 * 16, cudaMemcpyDeviceToDevice); }, 8);
  copy_gbs = std::max(copy_gbs, 2.0 * n4 * 16 / ms / 1e6);
  std::printf("copy floor %.1f GB/s\n", copy_gbs);
}

template <class Policy>
struct tag {};

/// A combine variant's name, for the sweep's lines.
[[maybe_unused]] const char* combine_name(parascan::combine_variant c) {
  switch (c) {
    case parascan::combine_variant::warp: return "warp";
    case parascan::combine_variant::sequential: return "seq";
    default: return "block";
  }
}

/// Op for linear_recurrence_backward (ops::linear_recurrence_adjoint under the given policies).
struct backward {};

[[maybe_unused]] long batch = 8;  // B of the (B, 1536, T) arrays sweep() times: a part may set it
[[maybe_unused]] long pitch_pad = 0;  // elements between one sequence's end and the next one's start
[[maybe_unused]] long scatter = 0;    // > 0: consecutive sequences (blocks) count / scatter sequences apart

/// Times one operator over (batch, 1536, T) for every policy of the list.
template <class Op, class A, class B, class Y, class... Policies>
void sweep(const char* what, long T, double bytes_per_step, tag<Policies>...) {
  const long count = batch * 1536, pitch = T + pitch_pad;
  const std::size_t n = std::size_t(count) * pitch, steps = std::size_t(count) * T;
  device_array<A> a(n);
  device_array<B> b(n);
  device_array<Y> y(n);
  fill<<<1024, 256>>>(a.p, n, 0.9f, 1.0f, 2);
  fill<<<1024, 256>>>(b.p, n, -1.f, 1.f, 3);
  std::unique_ptr<device_array<Y>> da, db;  // the backward's gradients
  if constexpr (std::is_same<Op, backward>::value) {
    fill<<<1024, 256>>>(y.p, n, -1.f, 1.f, 4);
    da = std::make_unique<device_array<Y>>(n), db = std::make_unique<device_array<Y>>(n);
  }
  const auto view = [&](auto* p) {
    if (scatter > 0) return parascan::strided(p, count / scatter, scatter, pitch, count / scatter * pitch, T, 1);
    return pitch_pad == 0 ? parascan::bdt(p, batch, 1536, T) : parascan::strided(p, batch, 1536, 1536 * pitch, pitch, T, 1);
  };
  const auto run = [&](auto policy) {
    using P = decltype(policy);
    if constexpr (std::is_same<Op, parascan::ops::sum<A>>::value ||
                  std::is_same<Op, parascan::ops::log_add_exp<A>>::value)  // one input
      parascan::prefix_scan<P>(parascan::cuda{}, Op{}, view(a.p), view(y.p));
    else if constexpr (std::is_same<Op, backward>::value)  // the gates, states and dL/dx in; dL/da, dL/db out
      parascan::linear_recurrence_backward<P>(parascan::cuda{}, view(a.p), view(b.p), view(y.p), view(da->p),
                                              view(db->p));
    else
      parascan::prefix_scan<P>(parascan::cuda{}, Op{}, parascan::inputs(view(a.p), view(b.p)), view(y.p));
  };
  const auto one = [&](auto policy) {
    using P = decltype(policy);
    const long long streamed = parascan::engine::stream_launches().load();
    const double ms = median_ms([&] { run(policy); });
    bool printed = false;
    if constexpr (parascan::detail::has_stream_policy<P>::value) {
      if (parascan::engine::stream_launches().load() != streamed) {  // the streamed_ladder's rung ran
        using S = typename P::stream_policy;
        std::printf("%-10s B=%-3ld T=%-6ld pad %-4ld scatter %-3ld stream threads %4d items %2d min_blocks %2d stages %d: %8.4f ms "
                    "%6.1f%% of copy\n",
                    what, batch, T, pitch_pad, scatter, S::threads, S::items, S::min_blocks, S::stages, ms,
                    100.0 * bytes_per_step * steps / ms / 1e6 / copy_gbs);
        printed = true;
      }
    }
    if (!printed) {
      std::printf("%-10s B=%-3ld T=%-6ld pad %-4ld %-5s threads %4d items %2d min_blocks %2d stages %d: %8.4f ms "
                  "%6.1f%% of copy\n",
                  what, batch, T, pitch_pad, combine_name(P::combine), P::threads, P::items, P::min_blocks, P::stages,
                  ms, 100.0 * bytes_per_step * steps / ms / 1e6 / copy_gbs);
    }
    std::fflush(stdout);
  };
  (one(Policies{}), ...);
}

/// The largest |y - reference| / (1 + |reference|) over n floats, into *worst (non-negative float bits
/// order as unsigned ints).
__global__ void worst_difference(const float* y, const float* reference, std::size_t n, unsigned* worst) {
  float mine = 0.f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float d = fabsf(y[i] - reference[i]) / (1.f + fabsf(reference[i]));
    mine = d == d ? fmaxf(mine, d) : INFINITY;
  }
  atomicMax(worst, __float_as_uint(mine));
}

/// One sequence of 2^28 steps (the single-pass look-back, cuda/lookback.cuh) under look-back tiles
/// `Tiles...` (threads x items at min_blocks resident); `cub` adds CUB's InclusiveSum of the same floats.
/// Each result is checked against a reference (CUB's sum; the default policy's recurrence): relative
/// difference at most 1e-3 (the sums reach 2.5e8, where a float's ulp is 16, through 2^15 .. 2^17 tile
/// prefixes each rounded once, so tile sizes differ by up to 5e-4 from CUB's; the recurrence by 1e-6).
template <class Op, class... Tiles>
void sweep_single(const char* what, double bytes_per_step, bool cub, tag<Tiles>...) {
  const std::size_t n = std::size_t(1) << 28;
  device_array<float> a(n), b(n), y(n), reference(n);
  device_array<unsigned> worst(1);
  fill<<<1024, 256>>>(a.p, n, 0.9f, 1.0f, 2);
  fill<<<1024, 256>>>(b.p, n, -1.f, 1.f, 3);
  if constexpr (std::is_same<Op, parascan::ops::sum<float>>::value) {
    std::size_t temp_bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, a.p, reference.p, int(n));
    device_array<char> temp(temp_bytes);
    cub::DeviceScan::InclusiveSum(temp.p, temp_bytes, a.p, reference.p, int(n));
  } else {
    parascan::prefix_scan(parascan::cuda{}, Op{}, parascan::inputs(parascan::single(a.p, long(n)),
                                                                   parascan::single(b.p, long(n))),
                          parascan::single(reference.p, long(n)));
  }
  const auto report = [&](const char* who, int threads, int items, int blocks, double ms) {
    cudaMemsetAsync(worst.p, 0, sizeof(unsigned), 0);
    worst_difference<<<1024, 256>>>(y.p, reference.p, n, worst.p);
    unsigned bits = 0;
    check_or_exit(cudaMemcpy(&bits, worst.p, sizeof bits, cudaMemcpyDeviceToHost), "worst difference");
    float difference;
    std::memcpy(&difference, &bits, sizeof difference);
    std::printf("%-10s single 2^28 %-8s threads %4d items %2d min_blocks %d: %8.4f ms %6.1f%% of copy%s (%.1e)\n", what,
                who, threads, items, blocks, ms, 100.0 * bytes_per_step * double(n) / ms / 1e6 / copy_gbs,
                difference <= 1e-3f ? "" : " FAIL", double(difference));
    std::fflush(stdout);
  };
  const auto one = [&](auto tiles) {
    using T = decltype(tiles);
    using P = parascan::single_pass_tiles<typename parascan::default_policy<Op, parascan::arch::sm90>::type, T>;
    const auto view = [&](float* p) { return parascan::single(p, long(n)); };
    const double ms = median_ms([&] {
      if constexpr (std::is_same<Op, parascan::ops::sum<float>>::value)
        parascan::prefix_scan<P>(parascan::cuda{}, Op{}, view(a.p), view(y.p));
      else
        parascan::prefix_scan<P>(parascan::cuda{}, Op{}, parascan::inputs(view(a.p), view(b.p)), view(y.p));
    });
    report("parascan", T::threads, T::items, T::min_blocks, ms);
  };
  (one(Tiles{}), ...);
  if (cub) {
    std::size_t temp_bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, a.p, y.p, int(n));
    device_array<char> temp(temp_bytes);
    const double ms = median_ms([&] { cub::DeviceScan::InclusiveSum(temp.p, temp_bytes, a.p, y.p, int(n)); });
    report("cub", 0, 0, 0, ms);
  }
}

#if defined(SWEEP_MATRIX2)
/// A 2 x 2 fp32 matrix as a plain struct (trivially copyable, 16-byte aligned), row-major, and its product:
/// what the engine reaches on a 16-byte state that it moves as bytes, against Eigen's Matrix2f (not
/// trivially copyable: copied element by element) on the same products in the same run.
struct alignas(16) plain_mat2 {
  float m00, m01, m10, m11;
};
struct plain_product {
  using value_type = plain_mat2;
  PARASCAN_HD value_type identity() const { return {1.f, 0.f, 0.f, 1.f}; }
  PARASCAN_HD value_type operator()(const value_type& x, const value_type& y) const {
    return {x.m00 * y.m00 + x.m01 * y.m10, x.m00 * y.m01 + x.m01 * y.m11, x.m10 * y.m00 + x.m11 * y.m10,
            x.m10 * y.m01 + x.m11 * y.m11};
  }
};

/// Rotations (orthogonal: products stay bounded), the same bits as an Eigen Matrix2f or a plain_mat2 (a
/// rotation's transpose is its inverse, so the two storage orders multiply the same rotations).
__global__ void fill_rotations(float* m, std::size_t count, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float angle = 6.2831853f * float(h & 0xffffff) / float(0x1000000), c = cosf(angle), s = sinf(angle);
    m[4 * i] = c, m[4 * i + 1] = -s, m[4 * i + 2] = s, m[4 * i + 3] = c;
  }
}

/// The prefix of B chains of T 2 x 2 fp32 matrices (32 bytes a step), Eigen's and the plain struct's,
/// under each policy; the two results compared.
template <class... Policies>
void sweep_matrix2(long B, long T, tag<Policies>...) {
  using M = Eigen::Matrix2f;
  const std::size_t n = std::size_t(B) * T;
  device_array<float> m(4 * n), p(4 * n), q(4 * n);
  fill_rotations<<<1024, 256>>>(m.p, n, 5);
  const auto one = [&](auto policy) {
    using P = decltype(policy);
    const auto eigen = [&] {
      parascan::prefix_scan<P>(parascan::cuda{}, parascan::ops::matrix_product<M>{},
                               parascan::bdt<const M>(reinterpret_cast<const M*>(m.p), B, 1, T),
                               parascan::bdt(reinterpret_cast<M*>(p.p), B, 1, T));
    };
    const auto plain = [&] {
      parascan::prefix_scan<P>(parascan::cuda{}, plain_product{},
                               parascan::bdt<const plain_mat2>(reinterpret_cast<const plain_mat2*>(m.p), B, 1, T),
                               parascan::bdt(reinterpret_cast<plain_mat2*>(q.p), B, 1, T));
    };
    const double eigen_ms = median_ms(eigen), plain_ms = median_ms(plain);
    std::vector<float> hp(4 * 4096), hq(4 * 4096);  // the first 4096 products of each
    check_or_exit(cudaMemcpy(hp.data(), p.p, hp.size() * 4, cudaMemcpyDeviceToHost), "download");
    check_or_exit(cudaMemcpy(hq.data(), q.p, hq.size() * 4, cudaMemcpyDeviceToHost), "download");
    // Entry by entry in memory: Eigen reads each factor as its transpose, and rotations commute, so the
    // two scans' memory agree to rounding.
    float diff = 0;
    for (std::size_t e = 0; e < hp.size(); ++e) diff = std::max(diff, std::abs(hp[e] - hq[e]));
    const auto pct = [&](double ms) { return 100.0 * 32.0 * double(n) / ms / 1e6 / copy_gbs; };
    std::printf("mat2 B=%-6ld T=%-6ld %-5s threads %4d items %2d min_blocks %2d stages %d: Eigen %8.4f ms %6.1f%%, "
                "plain %8.4f ms %6.1f%% of copy (max difference %.2g)\n",
                B, T, combine_name(P::combine), P::threads, P::items, P::min_blocks, P::stages, eigen_ms,
                pct(eigen_ms), plain_ms, pct(plain_ms), diff);
    std::fflush(stdout);
  };
  (one(Policies{}), ...);
}
#endif

using parascan::cuda_policy;
/// `Base` with one stream rung from 2048 steps (threads x items at `Blocks` resident blocks), spills of up
/// to 64 bytes allowed so that every candidate runs: the streamed sweeps' policies.
template <class Base, int Threads, int Items, int Blocks, int Stages = 1>
using from_2048 = parascan::streamed_ladder<
    Base, parascan::stream_rung<2048, parascan::sm90_tuning::stream<Threads, Items, Blocks, Stages>, 64>>;
/// The same from 128 steps (short sequences: one or two tiles a block).
template <class Base, int Threads, int Items, int Blocks>
using from_128 = parascan::streamed_ladder<
    Base, parascan::stream_rung<128, parascan::sm90_tuning::stream<Threads, Items, Blocks>, 64>>;
[[maybe_unused]] constexpr auto blk = parascan::combine_variant::block;
[[maybe_unused]] constexpr auto wrp = parascan::combine_variant::warp;

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check_or_exit(cudaGetDeviceProperties(&prop, 0), "device");
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  keep_freed_memory();
  measure_copy();
#if defined(SWEEP_SHORT)
  // Short sequences: block size (sequences a block) and items for a warp per sequence.
  for (long T : {128L, 256L, 512L, 1024L, 2048L}) {
    sweep<parascan::ops::linear_recurrence<float>, float, float, float>(
        "fp32 pair", T, 12.0, tag<cuda_policy<128, 4, wrp, 8, 4>>{}, tag<cuda_policy<256, 4, wrp, 4, 4>>{},
        tag<cuda_policy<512, 4, wrp, 2, 4>>{}, tag<cuda_policy<1024, 4, wrp, 1, 4>>{},
        tag<cuda_policy<256, 4, wrp, 4, 2>>{}, tag<cuda_policy<64, 4, wrp, 16, 4>>{},
        tag<cuda_policy<256, 2, wrp, 4, 4>>{}, tag<cuda_policy<128, 2, wrp, 8, 4>>{},
        tag<cuda_policy<256, 1, wrp, 4, 6>>{});
    sweep<parascan::ops::linear_recurrence<float>, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(
        "bf16 pair", T * 2, 6.0, tag<cuda_policy<128, 8, wrp, 6, 4>>{}, tag<cuda_policy<256, 8, wrp, 3, 4>>{},
        tag<cuda_policy<384, 8, wrp, 2, 4>>{}, tag<cuda_policy<192, 8, wrp, 4, 4>>{},
        tag<cuda_policy<256, 4, wrp, 4, 4>>{}, tag<cuda_policy<128, 4, wrp, 8, 4>>{});
    sweep<parascan::ops::sum<float>, float, float, float>("fp32 sum", T, 8.0, tag<cuda_policy<128, 4, wrp, 8, 3>>{},
                                                           tag<cuda_policy<256, 4, wrp, 4, 3>>{},
                                                           tag<cuda_policy<512, 4, wrp, 2, 3>>{});
  }
#elif defined(SWEEP_PAIR)
  for (long T : {128L, 256L, 512L, 1024L, 2048L, 4096L, 16384L, 65536L})
    sweep<parascan::ops::linear_recurrence<float>, float, float, float>(
        "fp32 pair", T, 12.0, tag<cuda_policy<128, 4, wrp, 8, 3>>{}, tag<cuda_policy<128, 4, wrp, 8, 4>>{},
        tag<cuda_policy<128, 2, wrp, 8, 4>>{}, tag<cuda_policy<128, 1, wrp, 8, 6>>{},
        tag<cuda_policy<256, 4, wrp, 4, 4>>{}, tag<cuda_policy<64, 4, wrp, 16, 3>>{},
        tag<cuda_policy<128, 8, wrp, 8, 3>>{}, tag<cuda_policy<64, 4, blk, 16, 3>>{},
        tag<cuda_policy<128, 4, blk, 8, 3>>{}, tag<cuda_policy<256, 4, blk, 4, 3>>{},
        tag<cuda_policy<256, 4, blk, 4, 2>>{}, tag<cuda_policy<128, 4, blk, 8, 2>>{},
        tag<cuda_policy<256, 4, blk, 4, 4>>{}, tag<cuda_policy<512, 4, blk, 2, 2>>{},
        tag<cuda_policy<1024, 4, blk, 1, 2>>{});
#elif defined(SWEEP_BF16)
  for (long T : {1024L, 4096L, 16384L, 65536L})
    sweep<parascan::ops::linear_recurrence<float>, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(
        "bf16 pair", T, 6.0, tag<cuda_policy<128, 8, wrp, 8, 3>>{}, tag<cuda_policy<128, 8, wrp, 8, 4>>{},
        tag<cuda_policy<64, 8, wrp, 12, 4>>{}, tag<cuda_policy<128, 8, wrp, 6, 4>>{},
        tag<cuda_policy<128, 16, wrp, 4, 3>>{}, tag<cuda_policy<128, 16, wrp, 4, 4>>{},
        tag<cuda_policy<128, 16, wrp, 5, 3>>{},
        tag<cuda_policy<64, 8, blk, 12, 4>>{}, tag<cuda_policy<128, 8, blk, 8, 3>>{},
        tag<cuda_policy<256, 8, blk, 4, 3>>{}, tag<cuda_policy<256, 8, blk, 4, 2>>{});
#elif defined(SWEEP_SCALAR)
  for (long T : {1024L, 4096L, 65536L})
    sweep<parascan::ops::sum<float>, float, float, float>(
        "fp32 sum", T, 8.0, tag<cuda_policy<128, 4, wrp, 8, 3>>{}, tag<cuda_policy<128, 8, wrp, 8, 3>>{},
        tag<cuda_policy<64, 8, wrp, 16, 3>>{}, tag<cuda_policy<128, 4, blk, 8, 3>>{},
        tag<cuda_policy<128, 8, blk, 8, 3>>{}, tag<cuda_policy<256, 4, blk, 4, 4>>{},
        tag<cuda_policy<256, 8, blk, 4, 3>>{});
#elif defined(SWEEP_SCALAR_STREAM)
  // Streamed cumsum (a block a sequence) from 2048 steps: the tile's threads x items, resident blocks and
  // L2-prefetched tiles (stages), spills allowed (64 bytes) so that every candidate runs; the warps below
  // 2048 steps.
  using parascan::sm90_tuning::scalar_warps;
  for (long T : {4096L, 8192L, 16384L, 65536L})
    sweep<parascan::ops::sum<float>, float, float, float>(
        "fp32 sum", T, 8.0, tag<from_2048<scalar_warps, 512, 4, 4>>{}, tag<from_2048<scalar_warps, 512, 4, 4, 2>>{},
        tag<from_2048<scalar_warps, 512, 4, 3>>{}, tag<from_2048<scalar_warps, 1024, 4, 2>>{},
        tag<from_2048<scalar_warps, 1024, 4, 2, 2>>{}, tag<from_2048<scalar_warps, 512, 8, 2>>{},
        tag<from_2048<scalar_warps, 512, 8, 2, 2>>{}, tag<from_2048<scalar_warps, 256, 8, 4>>{},
        tag<from_2048<scalar_warps, 256, 8, 6>>{}, tag<from_2048<scalar_warps, 256, 4, 8, 2>>{},
        tag<from_2048<scalar_warps, 1024, 8, 1>>{}, tag<from_2048<scalar_warps, 256, 16, 2>>{});
#elif defined(SWEEP_SCALAR_4096)
  // Cumsum at T = 4096 (issue 11's 97% of copy; 512 x 4@4s2 reads 96.8-97.1 on an H100): two 2048-step
  // tiles a block there, or one. Candidates keep 32-64 kB a multiprocessor in registers (the fp32
  // recurrence's 1024 x 4@2 reads 99% with 64 kB, one tile a block); three rounds, alternated.
  using parascan::sm90_tuning::scalar_warps;
  for (int round = 0; round < 3; ++round)
    for (long T : {4096L, 8192L})
      sweep<parascan::ops::sum<float>, float, float, float>(
          "fp32 sum", T, 8.0, tag<from_2048<scalar_warps, 512, 4, 4, 2>>{}, tag<from_2048<scalar_warps, 512, 4, 4, 3>>{},
          tag<from_2048<scalar_warps, 512, 8, 4>>{}, tag<from_2048<scalar_warps, 512, 8, 3>>{},
          tag<from_2048<scalar_warps, 256, 8, 8, 2>>{}, tag<from_2048<scalar_warps, 128, 8, 16, 2>>{},
          tag<from_2048<scalar_warps, 128, 16, 8>>{}, tag<from_2048<scalar_warps, 128, 16, 8, 2>>{},
          tag<from_2048<scalar_warps, 256, 16, 4>>{}, tag<from_2048<scalar_warps, 256, 8, 6, 2>>{},
          tag<from_2048<scalar_warps, 256, 4, 8, 3>>{}, tag<from_2048<scalar_warps, 1024, 4, 2, 2>>{});
#elif defined(SWEEP_SCALAR_LONG)
  // Why cumsum's 1024 x 4@2s2 reads 99.0% at T = 16384 and 96.5% at 65536 on an H100 (2026-11-27): the
  // same 805M floats cut into sequences of 4096 .. 65536 steps (more tiles a block at the same footprint),
  // and 65536-step sequences over fewer rows (a smaller footprint at the same tiles a block); each shape
  // twice, the rungs alternated.
  using parascan::sm90_tuning::scalar_warps;
  // Then sequences that do not start 2^k bytes apart (pad: elements between them): whether the loss at
  // 65536 steps is the addresses' (every block's stream 256 kB from the next one's).
  // Then consecutive sequences far apart (scatter: blocks s and s + 1 count / scatter sequences apart), at
  // the footprint of the fast short sequences: whether what the blocks in flight touch together costs.
  const long shapes[][4] = {{8, 65536, 0, 0},    {32, 16384, 0, 0},   {128, 4096, 0, 0},  {8, 65536, 0, 0},
                            {32, 16384, 0, 0},   {2, 65536, 0, 0},    {4, 65536, 0, 0},   {8, 65536, 32, 0},
                            {8, 65536, 1024, 0}, {8, 65536, 4096, 0}, {8, 65536, 0, 0},   {32, 16384, 32, 0},
                            {32, 16384, 0, 128}, {32, 16384, 0, 16},  {128, 4096, 0, 128}, {32, 16384, 0, 0}};
  for (const auto& shape : shapes) {
    batch = shape[0], pitch_pad = shape[2], scatter = shape[3];
    sweep<parascan::ops::sum<float>, float, float, float>(
        "fp32 sum", shape[1], 8.0, tag<from_2048<scalar_warps, 1024, 4, 2, 2>>{},
        tag<from_2048<scalar_warps, 512, 4, 4, 2>>{}, tag<from_2048<scalar_warps, 512, 4, 4>>{},
        tag<from_2048<scalar_warps, 1024, 4, 2, 3>>{});
  }
#elif defined(SWEEP_PAIR_STREAM)
  // The fp32 recurrence streamed (a block a sequence) from 2048 steps, one rung at a time (spills allowed,
  // 64 bytes, so that every candidate runs): the H100's ladder (512 x 4@4 from 2048, 1024 x 4@2 from 4096)
  // against tiles of more items, fewer threads or more resident blocks, for devices of more bandwidth.
  using parascan::sm90_tuning::pair_warps;
  for (long T : {2048L, 4096L, 8192L, 50000L, 65536L})
    sweep<parascan::ops::linear_recurrence<float>, float, float, float>(
        "fp32 pair", T, 12.0, tag<pair_warps>{},
        tag<from_2048<pair_warps, 512, 4, 4>>{},
        tag<from_2048<pair_warps, 1024, 4, 2>>{},
        tag<from_2048<pair_warps, 256, 4, 8>>{},
        tag<from_2048<pair_warps, 128, 4, 16>>{},
        tag<from_2048<pair_warps, 256, 8, 4>>{},
        tag<from_2048<pair_warps, 512, 8, 2>>{},
        tag<from_2048<pair_warps, 256, 8, 6>>{},
        tag<from_2048<pair_warps, 512, 4, 3>>{},
        tag<from_2048<pair_warps, 1024, 2, 2>>{});
#elif defined(SWEEP_STREAM_PREFETCH)
  // The streams' tiles with the next tiles prefetched into the L2 (stages 2 and 3) against none (1):
  // fp32 pairs, fp32 sums and bf16 pairs, the rungs of their ladders.
  using parascan::sm90_tuning::pair_warps;
  using parascan::sm90_tuning::scalar_warps;
  using narrow_warps = parascan::detail::widened<pair_warps, 8>::type;
  // Short sequences: more resident blocks than the ladder's 16 (64 x 2@16 reads 35% at T = 128 on an H200).
  for (long T : {128L, 256L, 512L})
    sweep<parascan::ops::linear_recurrence<float>, float, float, float>(
        "fp32 pair", T, 12.0, tag<from_128<pair_warps, 64, 2, 16>>{}, tag<from_128<pair_warps, 64, 2, 32>>{},
        tag<from_128<pair_warps, 32, 4, 32>>{}, tag<from_128<pair_warps, 64, 4, 16>>{},
        tag<from_128<pair_warps, 64, 4, 24>>{}, tag<from_128<pair_warps, 128, 2, 16>>{},
        tag<from_128<pair_warps, 32, 2, 32>>{}, tag<from_128<pair_warps, 128, 1, 16>>{});
  for (long T : {2048L, 4096L, 8192L, 16384L, 65536L}) {
    sweep<parascan::ops::linear_recurrence<float>, float, float, float>(
        "fp32 pair", T, 12.0, tag<from_2048<pair_warps, 256, 4, 8>>{}, tag<from_2048<pair_warps, 256, 4, 8, 2>>{},
        tag<from_2048<pair_warps, 256, 4, 8, 3>>{}, tag<from_2048<pair_warps, 512, 4, 4>>{},
        tag<from_2048<pair_warps, 512, 4, 4, 2>>{}, tag<from_2048<pair_warps, 512, 4, 4, 3>>{},
        tag<from_2048<pair_warps, 1024, 4, 2>>{}, tag<from_2048<pair_warps, 1024, 4, 2, 2>>{},
        tag<from_2048<pair_warps, 128, 4, 16, 2>>{}, tag<from_2048<pair_warps, 128, 4, 16, 3>>{});
    sweep<parascan::ops::sum<float>, float, float, float>(
        "fp32 sum", T, 8.0, tag<from_2048<scalar_warps, 256, 4, 8>>{}, tag<from_2048<scalar_warps, 256, 4, 8, 2>>{},
        tag<from_2048<scalar_warps, 512, 4, 4>>{}, tag<from_2048<scalar_warps, 512, 4, 4, 2>>{},
        tag<from_2048<scalar_warps, 512, 4, 4, 3>>{}, tag<from_2048<scalar_warps, 256, 8, 6, 2>>{},
        tag<from_2048<scalar_warps, 128, 8, 12, 2>>{}, tag<from_2048<scalar_warps, 128, 8, 12, 3>>{});
    sweep<parascan::ops::linear_recurrence<float>, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(
        "bf16 pair", T, 6.0, tag<from_2048<narrow_warps, 256, 8, 6>>{}, tag<from_2048<narrow_warps, 256, 8, 6, 2>>{},
        tag<from_2048<narrow_warps, 512, 8, 3>>{}, tag<from_2048<narrow_warps, 512, 8, 3, 2>>{},
        tag<from_2048<narrow_warps, 128, 8, 12>>{}, tag<from_2048<narrow_warps, 128, 8, 12, 2>>{},
        tag<from_2048<narrow_warps, 128, 8, 12, 3>>{});
    // The fused backward (20 / 10 bytes a step; its own ladders, ops/linear_recurrence.hpp) and
    // logcumsumexp (costly_combine_streams' 128 x 8@8).
    using wide_base = parascan::cuda_policy<128, 4, wrp, 4, 3>;
    using narrow_base = parascan::cuda_policy<128, 8, wrp, 4, 3>;
    sweep<backward, float, float, float>(
        "fp32 bwd", T, 20.0, tag<from_2048<wide_base, 512, 4, 2>>{}, tag<from_2048<wide_base, 512, 4, 2, 2>>{},
        tag<from_2048<wide_base, 256, 4, 4>>{}, tag<from_2048<wide_base, 256, 4, 4, 2>>{},
        tag<from_2048<wide_base, 128, 4, 8, 2>>{}, tag<from_2048<wide_base, 1024, 4, 1, 2>>{});
    sweep<backward, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(
        "bf16 bwd", T, 10.0, tag<from_2048<narrow_base, 256, 8, 4>>{}, tag<from_2048<narrow_base, 256, 8, 4, 2>>{},
        tag<from_2048<narrow_base, 128, 8, 8, 2>>{}, tag<from_2048<narrow_base, 512, 8, 2, 2>>{});
    sweep<parascan::ops::log_add_exp<float>, float, float, float>(
        "lse", T, 8.0, tag<from_2048<scalar_warps, 128, 8, 8>>{}, tag<from_2048<scalar_warps, 128, 8, 8, 2>>{},
        tag<from_2048<scalar_warps, 256, 8, 4, 2>>{}, tag<from_2048<scalar_warps, 64, 8, 16, 2>>{});
  }
#elif defined(SWEEP_LOOKBACK)
  // One long sequence: the look-back's tiles (threads x items, resident blocks). The last ones are small
  // blocks at many a multiprocessor, as CUB's sm_90 tuning for a float sum (128 x 24, tuning_scan.cuh):
  // other blocks keep loading while one looks back (H100, 2026-11-28: they spill and read 25-52%;
  // bench/results/h100-lookback-l2-prefetch-probe.log has a probe that also prefetched, into the L2, the
  // tile one or two waves of resident blocks ahead: fp32 sum 512 x 16@2 57.2 -> 61.5 / 51.2%, the fp32
  // recurrence 65.8 -> 51.9 / 50.9%; not kept).
  sweep_single<parascan::ops::linear_recurrence<float>>(
      "fp32 pair", 12.0, false, tag<cuda_policy<512, 16, blk, 2>>{}, tag<cuda_policy<256, 16, blk, 2>>{},
      tag<cuda_policy<256, 16, blk, 3>>{}, tag<cuda_policy<512, 8, blk, 2>>{}, tag<cuda_policy<256, 8, blk, 4>>{},
      tag<cuda_policy<128, 16, blk, 4>>{}, tag<cuda_policy<512, 16, blk, 1>>{}, tag<cuda_policy<256, 12, blk, 3>>{},
      tag<cuda_policy<128, 24, blk, 6>>{}, tag<cuda_policy<128, 16, blk, 8>>{}, tag<cuda_policy<128, 12, blk, 10>>{});
  sweep_single<parascan::ops::sum<float>>(
      "fp32 sum", 8.0, true, tag<cuda_policy<512, 16, blk, 2>>{}, tag<cuda_policy<256, 16, blk, 3>>{},
      tag<cuda_policy<256, 32, blk, 2>>{}, tag<cuda_policy<512, 8, blk, 3>>{}, tag<cuda_policy<256, 16, blk, 2>>{},
      tag<cuda_policy<128, 32, blk, 4>>{}, tag<cuda_policy<256, 24, blk, 3>>{}, tag<cuda_policy<128, 24, blk, 8>>{},
      tag<cuda_policy<128, 24, blk, 12>>{}, tag<cuda_policy<128, 24, blk, 16>>{}, tag<cuda_policy<128, 16, blk, 12>>{});
#elif defined(SWEEP_MATRIX2)
  // The 2 x 2 prefix (issue 8's 72.5% at (16384, 1024), H100): Eigen's Matrix2f against a plain struct.
  using wide = parascan::sm90_tuning::wide_warps;
  for (int round = 0; round < 2; ++round) {
    sweep_matrix2(16384, 1024, tag<wide>{}, tag<cuda_policy<128, 2, wrp, 8, 3>>{}, tag<cuda_policy<128, 2, wrp, 8, 4>>{},
                  tag<cuda_policy<128, 2, wrp, 8, 2>>{}, tag<cuda_policy<64, 2, wrp, 16, 3>>{},
                  tag<cuda_policy<256, 2, wrp, 4, 3>>{}, tag<cuda_policy<128, 1, wrp, 16, 4>>{},
                  tag<cuda_policy<128, 2, wrp, 6, 3>>{}, tag<cuda_policy<64, 2>>{}, tag<cuda_policy<64, 2, blk, 8, 3>>{},
                  tag<cuda_policy<128, 2, blk, 8, 3>>{});
    sweep_matrix2(4096, 4096, tag<wide>{}, tag<cuda_policy<128, 2, wrp, 8, 3>>{}, tag<cuda_policy<64, 2>>{},
                  tag<cuda_policy<128, 2, wrp, 8, 4>>{});
  }
#else
  using c64 = cuda::std::complex<float>;
  for (long T : {1024L, 4096L, 65536L})
    sweep<parascan::ops::linear_recurrence<c64>, c64, c64, c64>(
        "complex64", T, 24.0, tag<cuda_policy<128, 2, blk, 4, 3>>{}, tag<cuda_policy<128, 4, blk, 4, 2>>{},
        tag<cuda_policy<128, 2, wrp, 4, 3>>{}, tag<cuda_policy<128, 4, wrp, 4, 3>>{},
        tag<cuda_policy<256, 2, blk, 4, 3>>{}, tag<cuda_policy<64, 2, wrp, 8, 4>>{});
#endif
  return 0;
}
