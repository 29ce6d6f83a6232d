// CUDA benchmark of parascan: every case against the copy floor measured in the same run, with CUB
// baselines where CUB computes the same thing (one long sequence).
//
// Rules, for every case:
//  - inputs are random and never zero (gates in [0.9, 1), tokens in [-1, 1), complex gates of modulus
//    in [0.9, 1) and random phase); outputs are poisoned (NaN) before the one checked run;
//  - the checked run is compared once against an fp64 sequential reference computed on the host over a
//    slice (a few whole sequences: the first, one in the middle, the last; a whole long sequence is
//    streamed through in chunks); a wrong result prints FAIL with its largest error and is not timed;
//  - timing: CUDA events around one call, median of --runs (default 20) runs after --warmup (default 3)
//    untimed calls, L2 flushed before every run: by a 256 MiB memset (--flush write, the default, as
//    triton.testing.do_bench), which leaves up to an L2 of dirty lines that the timed call writes back, or
//    by a read of 256 MiB (--flush read: clean lines; the copy floor's 4 GiB hardly feel the difference,
//    a 400 MB case about 3.5%);
//  - effective GB/s counts the fewest bytes the case must move (each input read once, each output
//    written once), and "% copy" divides it by the copy floor: the fastest of several copy kernels
//    (16-byte grid-stride loops, several launch shapes, and cudaMemcpyAsync) on 2 GiB, read + write.
//
// Cases (make_cases; --list prints them): the fp32 linear recurrence over (8, 1536, T) bdt for T = 128 ..
// 65536 and 1000, 5000, 50000 (12 bytes a step); bf16 and fp16 storage with an fp32 state (6 bytes);
// complex64 (24 bytes); the backward pass (linear_recurrence_backward, fp32 20 bytes: a, x, dL/dx read,
// dL/da, dL/db written; bf16 10 bytes), and the backward passes of the 4x4 and 8x8 affine recurrences and
// the 4x4 matrix chain (cumulative and whole products) over (1, count, 2048); reduce_scan (final state only, 8 bytes); a user functor written below; scalar
// cumsum (8 bytes), and one sequence of 2^28 next to CUB InclusiveSum; every pointer one element off
// (unaligned); one sequence of 2^28 next to CUB InclusiveScan over interleaved float2 pairs, and
// (1, 16, 2^24); (8, T, 1536) btd; (1, 2^22, 16) btd (narrow rows); logcumsumexp; the log-space
// recurrence; packed (total, 64) batches with host offsets (lengths uniform in 1..8192, 4 sequences of
// 2^18 rows among 4000 of 1..64, and the same 4 among 40: fewer groups than the device runs), and (total,
// 16) of lengths 1..8192;
// matrix chains (B, 1024, N, N) of 2^26 floats and the product of one chain of 1000, N = 2 .. 32 (their
// torch peer: bench/matrix_peers.py); the affine recurrence (16384 / N, 1024) for N = 4 .. 32, x only.
// --sweep adds explicit-policy variants for (B, T, D), logcumsumexp, 4x4 matrix chains and the fused backward
// (the contiguous-time defaults come from bench/policy_sweep.cu), in builds configured with
// -DPARASCAN_BUILD_SWEEPS=ON.
//
// Usage: parascan_bench_cuda [--quick] [--filter SUBSTR] [--json FILE] [--commit SHA] [--sweep]
//                            [--runs N] [--warmup N] [--flush write|read] [--list]
// JSON: one object per case (and per copy kernel, impl "copy"): impl, case, op, dtype, layout, shape, T,
// sequences, bytes, ms, gbs, fraction_of_copy, copy_gbs, max_error, tolerance, device, commit, status
// ("ok", "FAIL", "skipped"), and policy / note where they apply. bench/plot.py reads it.
#include <Eigen/QR>
#include <cub/device/device_scan.cuh>
#include <cublas_v2.h>
#include <cuda/std/complex>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include "event_timer.cuh"
#include "kept_pool.cuh"
#include "packed_batches.hpp"
#include <parascan/cuda_matrices.cuh>
#include <parascan/cuda.cuh>
#include <parascan/ops/affine_recurrence.hpp>
#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/log_linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/parascan.hpp>

namespace {

using parascan::index_t;
using bf16 = __nv_bfloat16;
using f16 = __half;
using c64 = cuda::std::complex<float>;
using mat4 = Eigen::Matrix4f;
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------------
// Errors: CUDA failures and failed allocations are exceptions, so that one case failing is recorded and
// the run goes on (unless the CUDA context itself is lost).

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct out_of_memory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw cuda_failure(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Whether the CUDA context still works after an error (illegal addresses and the like are sticky).
bool context_alive() {
  (void)cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess) return false;
  void* p = nullptr;
  if (cudaMalloc(&p, 256) != cudaSuccess) return false;
  const bool ok = cudaMemset(p, 0, 256) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  cudaFree(p);
  return ok;
}

/// Device memory from the default stream-ordered pool, which main() tells to keep what is freed, as
/// PyTorch's caching allocator keeps it for the peers. Returning gigabytes to the driver (cudaFree) sets
/// it to work in the background, and the case timed next ran slower for tens of milliseconds: on an H100
/// (2026-11-22, .scratch probe of this bench's sequence), the fp32 recurrence at T = 1000 measured 70%
/// of copy right after the copy floor's 4 GiB were freed, and 80% with them kept or after a 100 ms pause;
/// T = 1000 and 5000, which follow the 65536 case, had read 70 / 80% in every run before.
template <class T>
struct device_array {
  T* p = nullptr;
  std::size_t n = 0;
  explicit device_array(std::size_t count) : n(count) {
    const std::size_t bytes = std::max<std::size_t>(1, n) * sizeof(T);
    cudaError_t e = cudaMallocAsync(&p, bytes, 0);
    if (e == cudaErrorMemoryAllocation) {  // what the pool keeps may be in the way: give it back, retry
      (void)cudaGetLastError();
      cudaMemPool_t pool;
      int device = 0;
      check(cudaGetDevice(&device), "cudaGetDevice");
      check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
      check(cudaDeviceSynchronize(), "before trimming the pool");
      check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
      e = cudaMallocAsync(&p, bytes, 0);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw out_of_memory("out of device memory allocating " + std::to_string(bytes >> 20) + " MiB");
    }
    check(e, "cudaMallocAsync");
  }
  ~device_array() { cudaFreeAsync(p, 0); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  std::size_t bytes() const { return n * sizeof(T); }
  /// NaN in every float format (0xff bytes): a scan that skips an output leaves it visible.
  void poison() { check(cudaMemset(p, 0xff, std::max<std::size_t>(1, n) * sizeof(T)), "poison"); }
};

int grid_blocks() {
  static int blocks = [] {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return std::max(1, sms) * 8;
  }();
  return blocks;
}

// ---------------------------------------------------------------------------------------------------
// Random inputs, generated on the device from (seed, index): the same seed gives the same data in every
// case, so that a baseline and parascan see the same numbers.

enum class dist {
  gate,      // [0.9, 1)
  token,     // [-1, 1), never zero (odd multiples of 2^-24)
  log_gate,  // log of a gate
  matrix,    // [-0.5, 0.5), never zero
};

__host__ __device__ inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// 24 random bits for element i of stream `seed`, and a float drawn from `d` with them.
__device__ inline float draw(dist d, std::uint64_t seed, std::size_t i) {
  const std::uint32_t k = std::uint32_t(mix64(seed * 0x9e3779b97f4a7c15ull + i) >> 40);  // 24 bits
  const float token = float(std::int32_t(2 * k + 1) - (1 << 24)) * 5.9604644775390625e-08f;  // exact, != 0
  switch (d) {
    case dist::gate: return 0.9f + 0.1f * float(k) * 5.9604644775390625e-08f;
    case dist::log_gate: return logf(0.9f + 0.1f * float(k) * 5.9604644775390625e-08f);
    case dist::matrix: return 0.5f * token;
    default: return token;
  }
}

template <class T>
__device__ inline T from_float(float v) {
  return T(v);
}
template <>
__device__ inline bf16 from_float<bf16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ inline f16 from_float<f16>(float v) {
  return __float2half(v);
}

template <class T>
__global__ void fill_kernel(T* x, std::size_t n, dist d, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = from_float<T>(draw(d, seed, i));
}
/// Complex gates: modulus in [0.9, 1), phase uniform; complex tokens: both parts in [-1, 1).
__global__ void fill_complex_kernel(c64* x, std::size_t n, dist d, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float u = draw(dist::gate, seed, 2 * i), v = draw(dist::token, seed, 2 * i + 1);
    if (d == dist::gate) {
      float s, c;
      sincospif(v, &s, &c);
      x[i] = c64(u * c, u * s);
    } else {
      x[i] = c64(draw(dist::token, seed, 2 * i), v);
    }
  }
}

template <class T>
void fill(T* p, std::size_t n, dist d, std::uint64_t seed) {
  if constexpr (std::is_same<T, c64>::value) {
    fill_complex_kernel<<<grid_blocks(), 256>>>(p, n, d, seed);
  } else if constexpr (std::is_same<T, mat4>::value) {
    fill_kernel<<<grid_blocks(), 256>>>(reinterpret_cast<float*>(p), n * 16, d, seed);
  } else {
    fill_kernel<<<grid_blocks(), 256>>>(p, n, d, seed);
  }
  check(cudaGetLastError(), "fill");
}

__global__ void interleave_kernel(const float* a, const float* b, float2* ab, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    ab[i] = {a[i], b[i]};
}

// ---------------------------------------------------------------------------------------------------
// Copy kernels for the copy floor: grid-stride loops of 16-byte loads and stores, ILP loads in flight.

template <int ILP>
__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n4) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  for (; i + (ILP - 1) * stride < n4; i += ILP * stride) {
    float4 v[ILP];
#pragma unroll
    for (int k = 0; k < ILP; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < ILP; ++k) out[i + k * stride] = v[k];
  }
  for (; i < n4; i += stride) out[i] = in[i];
}

// ---------------------------------------------------------------------------------------------------
// Records, settings, the timer.

struct record {
  std::string impl = "parascan", name, op, dtype, layout, policy, note;
  std::vector<long long> shape;
  long long T = 0, sequences = 0;
  double bytes = 0, ms = nan_value, gbs = nan_value, fraction = nan_value;
  double max_error = nan_value, tolerance = nan_value;
  double flops = nan_value;  // useful floating-point operations (matrix products), for compute-bound cases
  std::string status = "skipped";

  std::string shape_text() const {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + ")";
  }
  /// What --filter matches: "cub linear_recurrence fp32 single (268435456)".
  std::string label() const {
    return impl + " " + name + " " + dtype + " " + layout + " " + shape_text() + (policy.empty() ? "" : " " + policy);
  }
};

struct settings {
  bool quick = false, sweep = false, list = false, read_flush = false;
  std::string filter, json, commit = "unknown";
  int runs = 20, warmup = 3;
};

struct context {
  settings opt;
  std::string device;
  int sms = 0;
  double copy_gbs = 0;
  std::vector<record> records;
  std::unique_ptr<device_array<char>> flush;    // 256 MiB, written or read before every timed run
  std::unique_ptr<device_array<char>> staging;  // slices downloaded for the checks

  /// Median milliseconds of opt.runs timed calls after opt.warmup untimed ones, L2 flushed before each.
  double median_ms(const std::function<void()>& f, int runs = 0) {
    return bench::median_event_ms(
        f, runs > 0 ? runs : opt.runs, opt.warmup,
        [&](int i) {
          if (opt.read_flush) {
            bench::read_flush(flush->p, flush->n, sms * 8);
            check(cudaGetLastError(), "L2 flush");
          } else {
            check(cudaMemsetAsync(flush->p, i & 0xff, flush->n), "L2 flush");
          }
        },
        check);
  }
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

void write_json(const context& ctx) {
  if (ctx.opt.json.empty()) return;
  std::ofstream f(ctx.opt.json);
  f << "[\n";
  for (std::size_t i = 0; i < ctx.records.size(); ++i) {
    const record& r = ctx.records[i];
    f << "  {\"impl\": \"" << json_escape(r.impl) << "\", \"case\": \"" << json_escape(r.name) << "\", \"op\": \""
      << json_escape(r.op) << "\", \"dtype\": \"" << r.dtype << "\", \"layout\": \"" << r.layout << "\", \"shape\": [";
    for (std::size_t k = 0; k < r.shape.size(); ++k) f << (k ? ", " : "") << r.shape[k];
    f << "], \"T\": " << r.T << ", \"sequences\": " << r.sequences << ", \"bytes\": " << json_number(r.bytes)
      << ", \"ms\": " << json_number(r.ms) << ", \"gbs\": " << json_number(r.gbs)
      << ", \"fraction_of_copy\": " << json_number(r.fraction) << ", \"copy_gbs\": " << json_number(ctx.copy_gbs)
      << ", \"max_error\": " << json_number(r.max_error) << ", \"tolerance\": " << json_number(r.tolerance)
      << ", \"device\": \"" << json_escape(ctx.device) << "\", \"commit\": \"" << json_escape(ctx.opt.commit)
      << "\", \"flush\": \"" << (ctx.opt.read_flush ? "read" : "write") << "\", \"status\": \"" << r.status << "\"";
    if (!r.policy.empty()) f << ", \"policy\": \"" << json_escape(r.policy) << "\"";
    if (std::isfinite(r.flops) && std::isfinite(r.ms)) f << ", \"tflops\": " << json_number(r.flops / r.ms / 1e9);
    if (!r.note.empty()) f << ", \"note\": \"" << json_escape(r.note) << "\"";
    f << "}" << (i + 1 < ctx.records.size() ? "," : "") << "\n";
  }
  f << "]\n";
}

void print_header() {
  std::printf("%-8s %-36s %-22s %-9s %-9s %10s %8s %7s  %s\n", "impl", "case", "shape", "dtype", "layout", "ms", "GB/s",
              "% copy", "check (max error / tolerance)");
}
void print_row(const record& r) {
  char err[96] = "";
  if (std::isfinite(r.max_error) || std::isfinite(r.tolerance))
    std::snprintf(err, sizeof err, " (%.2g / %.2g)", r.max_error, r.tolerance);
  const std::string name = r.policy.empty() ? r.name : r.name + " " + r.policy;
  if (r.status == "ok")
    std::printf("%-8s %-36s %-22s %-9s %-9s %10.4f %8.1f %6.1f%%  ok%s\n", r.impl.c_str(), name.c_str(),
                r.shape_text().c_str(), r.dtype.c_str(), r.layout.c_str(), r.ms, r.gbs, 100 * r.fraction, err);
  else
    std::printf("%-8s %-36s %-22s %-9s %-9s %10s %8s %7s  %s%s%s%s\n", r.impl.c_str(), name.c_str(),
                r.shape_text().c_str(), r.dtype.c_str(), r.layout.c_str(), "-", "-", "-", r.status.c_str(), err,
                r.note.empty() ? "" : ": ", r.note.c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------------
// Checks: slices of the device data downloaded and compared with an fp64 sequential reference.

double to_host(float x) { return x; }
double to_host(bf16 x) { return double(__bfloat162float(x)); }
double to_host(f16 x) { return double(__half2float(x)); }
std::complex<double> to_host(const c64& x) { return {x.real(), x.imag()}; }

template <class T>
using host_vec = std::vector<std::remove_const_t<T>>;

template <class T>
__global__ void gather_kernel(const T* base, index_t stride, index_t n, T* out) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x)
    out[i] = base[i * stride];
}

/// Steps [t0, t0 + m) of sequence s of view v (host offsets for packed views) into h.
template <class T>
void fetch(context& ctx, const parascan::sequences<T>& v, index_t s, index_t t0, index_t m, host_vec<T>& h) {
  using U = std::remove_const_t<T>;
  const parascan::cursor<T> c = v.cursor_of(s);
  U* stage = reinterpret_cast<U*>(ctx.staging->p);
  gather_kernel<U><<<grid_blocks(), 256>>>(c.base + t0 * c.stride, c.stride, m, stage);
  check(cudaGetLastError(), "gather");
  h.resize(std::size_t(m));
  check(cudaMemcpy(h.data(), stage, std::size_t(m) * sizeof(U), cudaMemcpyDeviceToHost), "download");
}

template <class... T>
constexpr std::size_t largest() {
  std::size_t m = 1;
  ((m = std::max(m, sizeof(T))), ...);
  return m;
}

template <class Tuple, class... X, std::size_t... K>
void fetch_inputs(context& ctx, Tuple& h, index_t s, index_t t0, index_t m, std::index_sequence<K...>,
                  const parascan::sequences<X>&... in) {
  (fetch(ctx, in, s, t0, m, std::get<K>(h)), ...);
}
template <class Step, class Tuple, class Y, std::size_t... K>
void call_step(Step& step, index_t t, const Y* got, const Tuple& h, std::size_t i, std::index_sequence<K...>) {
  step(t, got, std::get<K>(h)[i]...);
}

/// Walks sequence s of the inputs (and of `out` when given) in chunks, calling
/// step(t, pointer to output t or null, input elements at t...).
template <class Y, class Step, class... X>
void walk(context& ctx, index_t s, const parascan::sequences<Y>* out, Step&& step, const parascan::sequences<X>&... in) {
  const index_t n = std::get<0>(std::tie(in...)).length_of(s);
  const index_t chunk = index_t(ctx.staging->n / largest<Y, X...>());
  std::tuple<host_vec<X>...> h;
  host_vec<Y> got;
  for (index_t t0 = 0; t0 < n; t0 += chunk) {
    const index_t m = std::min(chunk, n - t0);
    fetch_inputs(ctx, h, s, t0, m, std::index_sequence_for<X...>{}, in...);
    if (out != nullptr) fetch(ctx, *out, s, t0, m, got);
    for (index_t i = 0; i < m; ++i)
      call_step(step, t0 + i, out != nullptr ? &got[std::size_t(i)] : static_cast<const std::remove_const_t<Y>*>(nullptr),
                h, std::size_t(i), std::index_sequence_for<X...>{});
  }
}

/// The largest error seen and where.
struct error_meter {
  double tolerance, worst = 0;
  std::string where;
  void add(double e, index_t s, index_t t, double got, double ref) {
    if (std::isnan(worst) || !(std::isnan(e) || e > worst)) return;  // the first NaN stays the worst
    worst = e;
    char b[160];
    std::snprintf(b, sizeof b, "sequence %lld step %lld: got %.9g, reference %.9g", (long long)s, (long long)t, got, ref);
    where = b;
  }
};

template <class N>
double real_part(const N& v) {
  return std::real(v);
}

/// Sequences to check out of `count`: the first, one past the middle, the last, and `extra`.
std::vector<index_t> pick(index_t count, std::vector<index_t> extra = {}) {
  std::vector<index_t> s = {0, count / 2 + 1, count - 1};
  s.insert(s.end(), extra.begin(), extra.end());
  std::vector<index_t> out;
  for (index_t v : s)
    if (v >= 0 && v < count && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

/// x[t] = a[t] x[t-1] + b[t]; error relative to S[t] = |a[t]| S[t-1] + |b[t]|, the size of the terms that
/// make x[t] (the bound rounding errors scale with; plain relative error is unbounded where x crosses 0).
/// Checks every output of the picked sequences, or, with `result`, only each sequence's final value.
template <class G, class X, class Y>
error_meter check_linear(context& ctx, const parascan::sequences<G>& a, const parascan::sequences<X>& b,
                         const parascan::sequences<Y>* y, const std::vector<index_t>& seqs, double tol,
                         const float* result = nullptr) {
  using N = decltype(to_host(std::declval<std::remove_const_t<G>>()) * to_host(std::declval<std::remove_const_t<X>>()));
  error_meter m{tol};
  for (index_t s : seqs) {
    N x = 0;
    double S = 0;
    walk(ctx, s, y,
         [&](index_t t, const auto* got, const auto& at, const auto& bt) {
           const auto ah = to_host(at);
           const auto bh = to_host(bt);
           x = ah * x + bh;
           S = std::abs(ah) * S + std::abs(bh);
           if (got != nullptr) m.add(std::abs(to_host(*got) - x) / S, s, t, real_part(to_host(*got)), real_part(x));
         },
         a, b);
    if (result != nullptr) {
      float r = 0;
      check(cudaMemcpy(&r, result + s, sizeof r, cudaMemcpyDeviceToHost), "download result");
      m.add(std::abs(double(r) - x) / S, s, a.length_of(s) - 1, r, real_part(x));
    }
  }
  return m;
}

/// Running sum; error relative to the sum of |terms|.
template <class X, class Y>
error_meter check_cumsum(context& ctx, const parascan::sequences<X>& in, const parascan::sequences<Y>& y,
                         const std::vector<index_t>& seqs, double tol) {
  error_meter m{tol};
  for (index_t s : seqs) {
    double x = 0, S = 0;
    walk(ctx, s, &y,
         [&](index_t t, const auto* got, const auto& v) {
           x += to_host(v);
           S += std::abs(to_host(v));
           m.add(std::abs(to_host(*got) - x) / S, s, t, to_host(*got), x);
         },
         in);
  }
  return m;
}

double log_add_exp(double x, double y) {
  const double hi = std::max(x, y), lo = std::min(x, y);
  return hi == -INFINITY ? hi : hi + std::log1p(std::exp(lo - hi));
}

/// logcumsumexp; absolute error of the log-value relative to 1 + |value|.
template <class X, class Y>
error_meter check_logcumsumexp(context& ctx, const parascan::sequences<X>& in, const parascan::sequences<Y>& y,
                               const std::vector<index_t>& seqs, double tol) {
  error_meter m{tol};
  for (index_t s : seqs) {
    double x = -INFINITY;
    walk(ctx, s, &y,
         [&](index_t t, const auto* got, const auto& v) {
           x = log_add_exp(x, to_host(v));
           m.add(std::abs(to_host(*got) - x) / (1 + std::abs(x)), s, t, to_host(*got), x);
         },
         in);
  }
  return m;
}

/// The log-space linear recurrence: log x[t] = logaddexp(log a[t] + log x[t-1], log b[t]).
template <class X, class Y>
error_meter check_log_linear(context& ctx, const parascan::sequences<X>& la, const parascan::sequences<X>& lb,
                             const parascan::sequences<Y>& y, const std::vector<index_t>& seqs, double tol) {
  error_meter m{tol};
  for (index_t s : seqs) {
    double x = -INFINITY;
    walk(ctx, s, &y,
         [&](index_t t, const auto* got, const auto& a, const auto& b) {
           x = log_add_exp(to_host(a) + x, to_host(b));
           m.add(std::abs(to_host(*got) - x) / (1 + std::abs(x)), s, t, to_host(*got), x);
         },
         la, lb);
  }
  return m;
}

/// Cumulative 4x4 products P[t] = P[t-1] M[t]; error relative to the largest entry of |M0| ... |Mt|.
[[maybe_unused]] error_meter check_matrix_chain(context& ctx, const parascan::sequences<mat4>& in,
                                                const parascan::sequences<mat4>& y, const std::vector<index_t>& seqs,
                                                double tol) {  // (the --sweep cases use it)
  error_meter m{tol};
  for (index_t s : seqs) {
    Eigen::Matrix4d P = Eigen::Matrix4d::Identity(), A = Eigen::Matrix4d::Identity();
    walk(ctx, s, &y,
         [&](index_t t, const mat4* got, const mat4& v) {
           P = P * v.cast<double>();
           A = A * v.cast<double>().cwiseAbs();
           const double e = (got->cast<double>() - P).cwiseAbs().maxCoeff() / std::max(A.maxCoeff(), 1e-300);
           m.add(e, s, t, (*got)(0, 0), P(0, 0));
         },
         in);
  }
  return m;
}

/// Tolerances (relative to the terms' size, see the checks): fp32 and complex64 states ~ 1e-5; a 16-bit
/// output adds its own rounding (bf16 2^-9, fp16 2^-12 relative).
template <class Y>
double tolerance_for() {
  if constexpr (std::is_same<Y, bf16>::value) return 1e-2;
  else if constexpr (std::is_same<Y, f16>::value) return 2e-3;
  else return 1e-5;
}
template <class T>
const char* dtype_name() {
  if constexpr (std::is_same<T, bf16>::value) return "bf16";
  else if constexpr (std::is_same<T, f16>::value) return "fp16";
  else if constexpr (std::is_same<T, c64>::value) return "complex64";
  else return "fp32";
}

// ---------------------------------------------------------------------------------------------------
// Running one case: poison, one checked run, then timing.

/// Runs `call` once over poisoned outputs, checks it, and times it when the check passes.
void measure(context& ctx, record& r, const std::function<void()>& poison, const std::function<void()>& call,
             const std::function<error_meter()>& verify, int runs = 0) {
  poison();
  call();
  check(cudaDeviceSynchronize(), "checked run");
  const error_meter m = verify();
  r.max_error = m.worst;
  r.tolerance = m.tolerance;
  if (!(m.worst <= m.tolerance)) {
    r.status = "FAIL";
    r.note = m.where;
    return;
  }
  r.ms = ctx.median_ms(call, runs);
  r.gbs = r.bytes / r.ms / 1e6;
  r.fraction = r.gbs / ctx.copy_gbs;
  r.status = "ok";
}

struct user_recurrence;

/// x[t] = a[t] x[t-1] + b[t] with gates, tokens and outputs stored as S, (B, D, T) or (B, T, D), every
/// pointer `offset` elements past an allocation (unaligned for offset 1); Policy: the default (through
/// the library's linear_recurrence wrapper) or an explicit one; Op = user_recurrence uses the user functor.
template <class S, class Policy = parascan::use_default_policy, class Op = void>
void run_linear(context& ctx, record& r, index_t B, index_t D, index_t T, bool btd, index_t offset = 0) {
  const std::size_t n = std::size_t(B * D * T) + std::size_t(offset);
  device_array<S> a(n), b(n), x(n);
  fill(a.p, n, dist::gate, 1);
  fill(b.p, n, dist::token, 2);
  const auto view = [&](S* p) { return btd ? parascan::btd(p + offset, B, T, D) : parascan::bdt(p + offset, B, D, T); };
  const auto va = view(a.p), vb = view(b.p), vx = view(x.p);
  measure(
      ctx, r, [&] { x.poison(); },
      [&] {
        if constexpr (!std::is_void<Op>::value)
          parascan::prefix_scan<Policy>(parascan::cuda{}, Op{}, parascan::inputs(va, vb), vx);
        else if constexpr (std::is_same<Policy, parascan::use_default_policy>::value)
          parascan::linear_recurrence(parascan::cuda{}, va, vb, vx);
        else
          parascan::prefix_scan<Policy>(parascan::cuda{}, parascan::ops::linear_recurrence_for<S, S>{},
                                        parascan::inputs(va, vb), vx);
      },
      [&] { return check_linear(ctx, va, vb, &vx, pick(B * D), tolerance_for<S>()); });
}

/// The final state only: reduce_scan of the recurrence, one float per sequence.
void run_reduce(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> a(n), b(n), result(std::size_t(B * D));
  fill(a.p, n, dist::gate, 1);
  fill(b.p, n, dist::token, 2);
  const auto va = parascan::bdt(a.p, B, D, T), vb = parascan::bdt(b.p, B, D, T);
  measure(
      ctx, r, [&] { result.poison(); },
      [&] {
        parascan::reduce_scan(parascan::cuda{}, parascan::ops::linear_recurrence<float>{}, parascan::inputs(va, vb),
                              result.p);
      },
      [&] {
        return check_linear(ctx, va, vb, static_cast<const parascan::sequences<float>*>(nullptr), pick(B * D), 1e-5,
                            result.p);
      });
}

/// The backward pass of the recurrence (linear_recurrence_backward) with every view stored as V: reads a,
/// x and dL/dx, writes dL/da and dL/db (20 bytes a step in fp32, 10 in bf16: the floor of a fused pass).
/// Checked on a few sequences against an fp64 adjoint of the same (stored) data, relative to the size of
/// its terms (tolerance_for<V>: a bf16 gradient is rounded once).
template <class V, class Policy = parascan::use_default_policy>
void run_backward(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<V> a(n), x(n), dy(n), da(n), db(n);
  fill(a.p, n, dist::gate, 1);
  fill(x.p, n, dist::token, 2);
  fill(dy.p, n, dist::token, 3);
  const auto v = [&](V* p) { return parascan::bdt(p, B, D, T); };
  measure(
      ctx, r, [&] { da.poison(), db.poison(); },
      [&] {
        parascan::linear_recurrence_backward<Policy>(parascan::cuda{}, v(a.p), v(x.p), v(dy.p), v(da.p), v(db.p));
      },
      [&] {
        error_meter m{tolerance_for<V>()};
        std::vector<V> ha(T), hx(T), hdy(T), hda(T), hdb(T);
        for (index_t s : pick(B * D)) {
          const auto down = [&](std::vector<V>& h, const V* d) {
            check(cudaMemcpy(h.data(), d + s * T, sizeof(V) * T, cudaMemcpyDeviceToHost), "download");
          };
          down(ha, a.p), down(hx, x.p), down(hdy, dy.p), down(hda, da.p), down(hdb, db.p);
          double carried = 0, scale = 0;  // h[t+1] and the size of its terms
          for (index_t t = T - 1; t >= 0; --t) {
            const double g = to_host(hdy[t]) + carried, g_scale = std::abs(to_host(hdy[t])) + scale;
            const double x_prev = t > 0 ? to_host(hx[t - 1]) : 0.0;
            const double got_db = to_host(hdb[t]), got_da = to_host(hda[t]);
            m.add(std::abs(got_db - g) / g_scale, s, t, got_db, g);
            m.add(std::abs(got_da - g * x_prev) / (g_scale * std::abs(x_prev) + 1e-30), s, t, got_da, g * x_prev);
            carried = to_host(ha[t]) * g, scale = std::abs(to_host(ha[t])) * g_scale;
          }
        }
        return m;
      });
}

/// Downloads sequence s (contiguous, T steps) of a (1, count, T) device view into double-precision
/// Eigen matrices, for the host reference.
template <class Md, class M>
std::vector<Md> download_as(const M* d, index_t s, index_t T) {
  std::vector<M> h(T);
  check(cudaMemcpy(h.data(), d + s * T, sizeof(M) * T, cudaMemcpyDeviceToHost), "download");
  std::vector<Md> out(T);
  for (index_t t = 0; t < T; ++t) out[t] = h[t].template cast<double>();
  return out;
}

/// Largest |got - reference| of sequence s, relative to the largest |reference| entry of the sequence.
template <class Md, class M>
void add_normwise(error_meter& m, index_t s, const std::vector<Md>& ref, const std::vector<M>& got) {
  double scale = 1e-300, worst = 0;
  index_t where = 0;
  for (const Md& r : ref) scale = std::max(scale, r.cwiseAbs().maxCoeff());
  for (std::size_t t = 0; t < ref.size(); ++t) {
    const double e = (got[t].template cast<double>() - ref[t]).cwiseAbs().maxCoeff();
    if (e > worst || std::isnan(e)) worst = e, where = index_t(t);
    if (std::isnan(e)) break;
  }
  m.add(worst / scale, s, where, got[where](0, 0), ref[where](0, 0));
}

/// The backward pass of the N x N affine recurrence (affine_recurrence_backward) over (1, count, T):
/// reads W, x, dL/dx, writes dL/dW and dL/db (8 N^2 + 12 N bytes a step). W entries in [-0.5, 0.5)
/// (contracting on average); checked on a few sequences against the host backend's backward in fp64 on
/// the same data (itself tested against fp64 references and finite differences), relative to each
/// sequence's largest gradient entry.
template <int N>
void run_affine_backward(context& ctx, record& r, index_t count, index_t T) {
  using M = Eigen::Matrix<float, N, N>;
  using V = Eigen::Matrix<float, N, 1>;
  using Md = Eigen::Matrix<double, N, N>;
  using Vd = Eigen::Matrix<double, N, 1>;
  const std::size_t n = std::size_t(count * T);
  device_array<M> W(n), dW(n);
  device_array<V> x(n), dy(n), db(n);
  fill(reinterpret_cast<float*>(W.p), n * N * N, dist::matrix, 21);
  fill(reinterpret_cast<float*>(x.p), n * N, dist::token, 22);
  fill(reinterpret_cast<float*>(dy.p), n * N, dist::token, 23);
  const auto v = [&](auto* p) { return parascan::bdt(p, 1, count, T); };
  measure(
      ctx, r, [&] { dW.poison(), db.poison(); },
      [&] { parascan::affine_recurrence_backward(parascan::cuda{}, v(W.p), v(x.p), v(dy.p), v(dW.p), v(db.p)); },
      [&] {
        error_meter m{1e-4};
        for (index_t s : pick(count)) {
          const auto hW = download_as<Md>(W.p, s, T);
          const auto hx = download_as<Vd>(x.p, s, T), hdy = download_as<Vd>(dy.p, s, T);
          std::vector<Md> rW(T);
          std::vector<Vd> rb(T);
          const auto one = [&](auto& h) { return parascan::single(h.data(), T); };
          parascan::affine_recurrence_backward(parascan::host{1}, one(hW), one(hx), one(hdy), one(rW), one(rb));
          std::vector<M> gW(T);
          std::vector<V> gb(T);
          check(cudaMemcpy(gW.data(), dW.p + s * T, sizeof(M) * T, cudaMemcpyDeviceToHost), "download");
          check(cudaMemcpy(gb.data(), db.p + s * T, sizeof(V) * T, cudaMemcpyDeviceToHost), "download");
          add_normwise(m, s, rW, gW);
          add_normwise(m, s, rb, gb);
        }
        return m;
      });
}

/// The backward pass of the 4 x 4 matrix chain (matrix_chain_backward, left_to_right) over (1, count, T):
/// reads the factors, the products (computed first, untimed) and dL/dP, writes dL/dM (256 bytes a step);
/// checked as run_affine_backward.
void run_chain_backward(context& ctx, record& r, index_t count, index_t T) {
  using Md = Eigen::Matrix4d;
  const std::size_t n = std::size_t(count * T);
  device_array<mat4> m(n), p(n), dp(n), dm(n);
  fill(m.p, n, dist::matrix, 24);
  fill(dp.p, n, dist::matrix, 25);
  const auto v = [&](mat4* q) { return parascan::bdt(q, 1, count, T); };
  parascan::matrix_chain(parascan::cuda{}, v(m.p), v(p.p));
  measure(
      ctx, r, [&] { dm.poison(); },
      [&] { parascan::matrix_chain_backward(parascan::cuda{}, v(m.p), v(p.p), v(dp.p), v(dm.p)); },
      [&] {
        error_meter err{1e-4};
        for (index_t s : pick(count)) {
          const auto hm = download_as<Md>(m.p, s, T), hp = download_as<Md>(p.p, s, T);
          const auto hdp = download_as<Md>(dp.p, s, T);
          std::vector<Md> ref(T);
          const auto one = [&](auto& h) { return parascan::single(h.data(), T); };
          parascan::matrix_chain_backward(parascan::host{1}, one(hm), one(hp), one(hdp), one(ref));
          std::vector<mat4> got(T);
          check(cudaMemcpy(got.data(), dm.p + s * T, sizeof(mat4) * T, cudaMemcpyDeviceToHost), "download");
          add_normwise(err, s, ref, got);
        }
        return err;
      });
}

/// I + scale m[i] for n 4 x 4 matrices: factors whose long products neither vanish nor overflow.
__global__ void near_identity(float* m, std::size_t n, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < 16 * n; i += std::size_t(gridDim.x) * blockDim.x)
    m[i] = (i % 16 % 5 == 0 ? 1.0f : 0.0f) + scale * m[i];
}

/// The backward pass of the 4 x 4 chain product (matrix_chain_product_backward, left_to_right) over (1,
/// count, T): reads the factors (I + 0.05 x [-0.5, 0.5): every gradient involves a product of T - 1 of
/// them) and one dL/d(product) a chain, writes dL/dM (128 bytes a step at the floor; its two passes move
/// 320: the products before each step written, then read back with the factors); checked as
/// run_affine_backward.
void run_chain_product_backward(context& ctx, record& r, index_t count, index_t T) {
  using Md = Eigen::Matrix4d;
  const std::size_t n = std::size_t(count * T);
  const std::size_t chains = std::size_t(count);
  device_array<mat4> m(n), dm(n), dr(chains);
  fill(m.p, n, dist::matrix, 26);
  near_identity<<<grid_blocks(), 256>>>(reinterpret_cast<float*>(m.p), n, 0.05f);
  check(cudaGetLastError(), "near_identity");
  fill(dr.p, chains, dist::matrix, 27);
  const auto v = [&](mat4* q) { return parascan::bdt(q, 1, count, T); };
  measure(
      ctx, r, [&] { dm.poison(); },
      [&] { parascan::matrix_chain_product_backward(parascan::cuda{}, v(m.p), dr.p, v(dm.p)); },
      [&] {
        error_meter err{1e-4};
        for (index_t s : pick(count)) {
          const auto hm = download_as<Md>(m.p, s, T), hdr = download_as<Md>(dr.p, s, 1);
          std::vector<Md> ref(T);
          parascan::matrix_chain_product_backward(parascan::host{1}, parascan::single(hm.data(), T), hdr.data(),
                                                  parascan::single(ref.data(), T));
          std::vector<mat4> got(T);
          check(cudaMemcpy(got.data(), dm.p + s * T, sizeof(mat4) * T, cudaMemcpyDeviceToHost), "download");
          add_normwise(err, s, ref, got);
        }
        return err;
      });
}

/// A user functor for the same recurrence, written here (not the library's operator).
struct user_recurrence {
  struct value_type {
    float a, b;
  };
  PARASCAN_HD value_type identity() const { return {1.f, 0.f}; }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return {earlier.a * later.a, later.a * earlier.b + later.b};
  }
  PARASCAN_HD value_type lift(float a, float b) const { return {a, b}; }
  PARASCAN_HD float project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(float x0) const { return {1.f, x0}; }
};

/// One sequence of T steps: parascan (single view) or CUB InclusiveScan over interleaved (a, b) pairs.
struct pair_scan_op {
  __host__ __device__ float2 operator()(const float2& e, const float2& l) const { return {e.x * l.x, l.x * e.y + l.y}; }
};

void run_single_linear(context& ctx, record& r, index_t T, bool cub) {
  const std::size_t n = std::size_t(T);
  if (!cub) {
    device_array<float> a(n), b(n), x(n);
    fill(a.p, n, dist::gate, 1);
    fill(b.p, n, dist::token, 2);
    const auto va = parascan::single(a.p, T), vb = parascan::single(b.p, T), vx = parascan::single(x.p, T);
    measure(
        ctx, r, [&] { x.poison(); }, [&] { parascan::linear_recurrence(parascan::cuda{}, va, vb, vx); },
        [&] { return check_linear(ctx, va, vb, &vx, {0}, 1e-5); });
    return;
  }
  device_array<float2> ab(n), out(n);
  {
    device_array<float> a(n), b(n);  // the same numbers as the parascan case
    fill(a.p, n, dist::gate, 1);
    fill(b.p, n, dist::token, 2);
    interleave_kernel<<<grid_blocks(), 256>>>(a.p, b.p, ab.p, n);
    check(cudaDeviceSynchronize(), "interleave");
  }
  std::size_t temp_bytes = 0;
  check(cub::DeviceScan::InclusiveScan(nullptr, temp_bytes, ab.p, out.p, pair_scan_op{}, int(n)), "cub");
  device_array<char> temp(temp_bytes);
  float* const pa = reinterpret_cast<float*>(ab.p);
  float* const po = reinterpret_cast<float*>(out.p);
  measure(
      ctx, r, [&] { out.poison(); },
      [&] { check(cub::DeviceScan::InclusiveScan(temp.p, temp_bytes, ab.p, out.p, pair_scan_op{}, int(n)), "cub"); },
      [&] {
        const auto y = parascan::single(po + 1, T, 2);
        return check_linear(ctx, parascan::single(pa, T, 2), parascan::single(pa + 1, T, 2), &y, {0}, 1e-5);
      });
}

/// Scalar cumsum over (B, D, T), or one sequence (B = D = 1, single) with parascan or CUB InclusiveSum.
void run_cumsum(context& ctx, record& r, index_t B, index_t D, index_t T, bool single, bool cub) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> in(n), out(n);
  fill(in.p, n, dist::token, 2);
  const auto view = [&](float* p) { return single ? parascan::single(p, T) : parascan::bdt(p, B, D, T); };
  const auto vi = view(in.p), vo = view(out.p);
  std::unique_ptr<device_array<char>> temp;
  std::size_t temp_bytes = 0;
  if (cub) {
    check(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, in.p, out.p, int(n)), "cub");
    temp = std::make_unique<device_array<char>>(temp_bytes);
  }
  measure(
      ctx, r, [&] { out.poison(); },
      [&] {
        if (cub) check(cub::DeviceScan::InclusiveSum(temp->p, temp_bytes, in.p, out.p, int(n)), "cub");
        else parascan::cumsum(parascan::cuda{}, vi, vo);
      },
      [&] { return check_cumsum(ctx, vi, vo, pick(vi.count()), 1e-5); });
}

/// logcumsumexp over (B, D, T), under the default policy (what parascan::logcumsumexp runs) or, for
/// --sweep, an explicit one.
template <class Policy = parascan::use_default_policy>
void run_logcumsumexp(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> in(n), out(n);
  fill(in.p, n, dist::token, 2);
  const auto vi = parascan::bdt(in.p, B, D, T), vo = parascan::bdt(out.p, B, D, T);
  measure(
      ctx, r, [&] { out.poison(); },
      [&] { parascan::prefix_scan<Policy>(parascan::cuda{}, parascan::ops::log_add_exp<float>{}, vi, vo); },
      [&] { return check_logcumsumexp(ctx, vi, vo, pick(B * D), 2e-5); });
}

void run_log_linear(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> la(n), lb(n), lx(n);
  fill(la.p, n, dist::log_gate, 1);
  fill(lb.p, n, dist::token, 2);
  const auto va = parascan::bdt(la.p, B, D, T), vb = parascan::bdt(lb.p, B, D, T), vx = parascan::bdt(lx.p, B, D, T);
  measure(
      ctx, r, [&] { lx.poison(); }, [&] { parascan::log_linear_recurrence(parascan::cuda{}, va, vb, vx); },
      [&] { return check_log_linear(ctx, va, vb, vx, pick(B * D), 2e-5); });
}

/// log_linear_recurrence_backward over (B, D, T): reads log a, log b, log x (the forward's, computed
/// first) and dL/d(log x); writes dL/d(log a), dL/d(log b). Checked against an fp64 adjoint of the
/// stored values on a few sequences, relative to the size of the terms.
void run_log_backward(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> la(n), lb(n), y(n), dy(n), da(n), db(n);
  fill(la.p, n, dist::log_gate, 1);
  fill(lb.p, n, dist::token, 2);
  fill(dy.p, n, dist::token, 3);
  const auto v = [&](float* p) { return parascan::bdt(p, B, D, T); };
  parascan::log_linear_recurrence(parascan::cuda{}, v(la.p), v(lb.p), v(y.p));
  measure(
      ctx, r, [&] { da.poison(), db.poison(); },
      [&] {
        parascan::log_linear_recurrence_backward(parascan::cuda{}, v(la.p), v(lb.p), v(y.p), v(dy.p), v(da.p),
                                                 v(db.p));
      },
      [&] {
        error_meter m{1e-5};
        std::vector<float> h[6];
        for (index_t s : pick(B * D)) {
          const float* dev[6] = {la.p, lb.p, y.p, dy.p, da.p, db.p};
          for (int k = 0; k < 6; ++k) {
            h[k].resize(T);
            check(cudaMemcpy(h[k].data(), dev[k] + s * T, sizeof(float) * T, cudaMemcpyDeviceToHost), "download");
          }
          double carried = 0, scale = 0;  // r[t+1] h[t+1] and the size of its terms
          for (index_t t = T - 1; t >= 0; --t) {
            const double hh = h[3][t] + carried, hs = std::abs(double(h[3][t])) + scale;
            const double y_prev = t > 0 ? double(h[2][t - 1]) : -INFINITY;
            const double share = std::exp(double(h[0][t]) + y_prev - h[2][t]), w = std::exp(double(h[1][t]) - h[2][t]);
            m.add(std::abs(h[5][t] - hh * w) / (hs * w + 1e-30), s, t, h[5][t], hh * w);
            m.add(std::abs(h[4][t] - hh * share) / (hs * share + 1e-30), s, t, h[4][t], hh * share);
            carried = share * hh, scale = share * hs;
          }
        }
        return m;
      });
}

/// signed_log_linear_recurrence_backward over (B, D, T), the (log a, b) form: reads log a, b, x (the
/// forward's signed logs, 8 bytes) and dL/d(log|x|); writes dL/d(log a), dL/db (28 bytes a step). Checked
/// against an fp64 adjoint of the stored values on a few sequences, relative to the size of the terms.
void run_signed_log_backward(context& ctx, record& r, index_t B, index_t D, index_t T) {
  using signed_log = parascan::ops::signed_log<float>;
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> la(n), b(n), dy(n), da(n), db(n);
  device_array<signed_log> x(n);
  fill(la.p, n, dist::log_gate, 1);
  fill(b.p, n, dist::token, 2);
  fill(dy.p, n, dist::token, 3);
  const auto v = [&](auto* p) { return parascan::bdt(p, B, D, T); };
  parascan::signed_log_linear_recurrence(parascan::cuda{}, v(la.p), v(b.p), v(x.p));
  measure(
      ctx, r, [&] { da.poison(), db.poison(); },
      [&] {
        parascan::signed_log_linear_recurrence_backward(parascan::cuda{}, v(la.p), v(b.p), v(x.p), v(dy.p), v(da.p),
                                                        v(db.p));
      },
      [&] {
        error_meter m{1e-5};
        std::vector<float> h[5];
        std::vector<signed_log> hx(std::size_t(T), signed_log{0, 1});
        for (index_t s : pick(B * D)) {
          const float* dev[5] = {la.p, b.p, dy.p, da.p, db.p};
          for (int k = 0; k < 5; ++k) {
            h[k].resize(T);
            check(cudaMemcpy(h[k].data(), dev[k] + s * T, sizeof(float) * T, cudaMemcpyDeviceToHost), "download");
          }
          check(cudaMemcpy(hx.data(), x.p + s * T, sizeof(signed_log) * T, cudaMemcpyDeviceToHost), "download");
          double carried = 0, scale = 0;  // r[t+1] h[t+1] and the size of its terms
          for (index_t t = T - 1; t >= 0; --t) {
            const double hh = h[2][t] + carried, hs = std::abs(double(h[2][t])) + scale;
            const double ly = hx[t].log_abs, sy = hx[t].sign;
            const double ly_prev = t > 0 ? double(hx[t - 1].log_abs) : -INFINITY, sy_prev = t > 0 ? hx[t - 1].sign : 1;
            const double share = sy * sy_prev * std::exp(double(h[0][t]) + ly_prev - ly), w = sy * std::exp(-ly);
            m.add(std::abs(h[4][t] - hh * w) / (hs * std::abs(w) + 1e-30), s, t, h[4][t], hh * w);
            m.add(std::abs(h[3][t] - hh * share) / (hs * std::abs(share) + 1e-30), s, t, h[3][t], hh * share);
            carried = share * hh, scale = std::abs(share) * hs;
          }
        }
        return m;
      });
}

/// logcumsumexp_backward over (B, D, T): reads x, y (the forward's, computed first) and dL/dy; writes
/// dL/dx = sum over u >= t of dy[u] exp(x[t] - y[u]). Checked against fp64 sums of the stored values on a
/// few sequences, relative to the size of their terms.
void run_logcumsumexp_backward(context& ctx, record& r, index_t B, index_t D, index_t T) {
  const std::size_t n = std::size_t(B * D * T);
  device_array<float> x(n), y(n), dy(n), dx(n);
  fill(x.p, n, dist::token, 2);
  fill(dy.p, n, dist::token, 3);
  const auto v = [&](float* p) { return parascan::bdt(p, B, D, T); };
  parascan::logcumsumexp(parascan::cuda{}, v(x.p), v(y.p));
  measure(
      ctx, r, [&] { dx.poison(); },
      [&] { parascan::logcumsumexp_backward(parascan::cuda{}, v(x.p), v(y.p), v(dy.p), v(dx.p)); },
      [&] {
        error_meter m{1e-5};
        std::vector<float> h[4];
        for (index_t s : pick(B * D)) {
          const float* dev[4] = {x.p, y.p, dy.p, dx.p};
          for (int k = 0; k < 4; ++k) {
            h[k].resize(T);
            check(cudaMemcpy(h[k].data(), dev[k] + s * T, sizeof(float) * T, cudaMemcpyDeviceToHost), "download");
          }
          double sum = 0, size = 0;  // sum over u >= t of dy[u] exp(-y[u]), and of |dy[u]| exp(-y[u])
          for (index_t t = T - 1; t >= 0; --t) {
            sum += h[2][t] * std::exp(-double(h[1][t])), size += std::abs(double(h[2][t])) * std::exp(-double(h[1][t]));
            const double w = std::exp(double(h[0][t])), ref = sum * w;
            m.add(std::abs(h[3][t] - ref) / (size * w + 1e-30), s, t, h[3][t], ref);
          }
        }
        return m;
      });
}

/// Packed (total, D) batch with host offsets (cu_seqlens); checks the first, the last and the longest.
void run_packed(context& ctx, record& r, const std::vector<index_t>& offsets, index_t D) {
  const index_t N = index_t(offsets.size()) - 1, total = offsets.back();
  const std::size_t n = std::size_t(total * D);
  index_t longest = 0;
  for (index_t i = 0; i < N; ++i)
    if (offsets[i + 1] - offsets[i] > offsets[longest + 1] - offsets[longest]) longest = i;
  device_array<float> a(n), b(n), x(n);
  fill(a.p, n, dist::gate, 1);
  fill(b.p, n, dist::token, 2);
  const auto view = [&](float* p) { return parascan::packed_td(p, offsets.data(), N, D); };
  const auto va = view(a.p), vb = view(b.p), vx = view(x.p);
  measure(
      ctx, r, [&] { x.poison(); }, [&] { parascan::linear_recurrence(parascan::cuda{}, va, vb, vx); },
      [&] { return check_linear(ctx, va, vb, &vx, pick(N * D, {longest * D + D / 3}), 1e-5); });
}

/// Sweep only: cumulative 4x4 fp32 matrix products over (1, count, T).
template <class Policy = parascan::use_default_policy>
void run_matrix_chain(context& ctx, record& r, index_t count, index_t T) {
  const std::size_t n = std::size_t(count * T);
  device_array<mat4> m(n), p(n);
  fill(m.p, n, dist::matrix, 9);
  const auto vm = parascan::bdt(m.p, 1, count, T), vp = parascan::bdt(p.p, 1, count, T);
  measure(
      ctx, r, [&] { p.poison(); },
      [&] {
        if constexpr (std::is_same<Policy, parascan::use_default_policy>::value)
          parascan::matrix_chain(parascan::cuda{}, vm, vp);
        else
          parascan::prefix_scan<Policy>(parascan::cuda{}, parascan::ops::matrix_product<mat4>{}, vm, vp);
      },
      [&] { return check_matrix_chain(ctx, vm, vp, pick(count), 1e-4); });
}

/// Orthogonal N x N factors (Householder reflections I - 2 v v^T / v^T v, 997 distinct ones repeated):
/// products of any length stay of norm 1, so every entry is checked against an absolute tolerance.
template <int N>
void fill_reflections(Eigen::Matrix<float, N, N>* d, std::size_t n, double scale = 1.0) {
  using M = Eigen::Matrix<float, N, N>;
  std::mt19937_64 g(31);
  std::normal_distribution<double> normal;
  std::vector<M> pool(997);
  for (M& m : pool) {
    Eigen::Matrix<double, N, 1> v;
    for (int i = 0; i < N; ++i) v[i] = normal(g);
    m = (scale * (Eigen::Matrix<double, N, N>::Identity() - (2 / v.squaredNorm()) * v * v.transpose()))
            .template cast<float>();
  }
  std::vector<M> block(std::min<std::size_t>(n, 1 << 16));
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = pool[i % pool.size()];
  for (std::size_t i = 0; i < n; i += block.size())
    check(cudaMemcpy(d + i, block.data(), std::min(block.size(), n - i) * sizeof(M), cudaMemcpyHostToDevice), "fill");
}

/// The fp64 products of sequence s's factors (in Order) against `got` (its outputs, or only its total
/// when `total_only`); error: the largest entry difference (the exact products are orthogonal).
template <int N, parascan::chain_order Order = parascan::chain_order::left_to_right>
error_meter check_products(context& ctx, const parascan::sequences<const Eigen::Matrix<float, N, N>>& in,
                           const Eigen::Matrix<float, N, N>* got, const std::vector<index_t>& seqs, bool total_only) {
  using M = Eigen::Matrix<float, N, N>;
  using MD = Eigen::Matrix<double, N, N>;
  const index_t T = in.length;
  error_meter m{4 * 1.2e-7 * std::sqrt(double(N)) * (1 + std::sqrt(double(T)))};
  std::vector<M> h(static_cast<std::size_t>(T)), y(static_cast<std::size_t>(total_only ? 1 : T));
  for (index_t s : seqs) {
    check(cudaMemcpy(h.data(), in.begin_of(s), h.size() * sizeof(M), cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(y.data(), got + (total_only ? s : s * T), y.size() * sizeof(M), cudaMemcpyDeviceToHost),
          "download");
    MD P = MD::Identity();
    for (index_t t = 0; t < T; ++t) {
      if constexpr (Order == parascan::chain_order::left_to_right)
        P = P * h[std::size_t(t)].template cast<double>();
      else
        P = h[std::size_t(t)].template cast<double>() * P;
      if (total_only && t < T - 1) continue;
      const M& out = y[total_only ? 0 : std::size_t(t)];
      m.add((out.template cast<double>() - P).cwiseAbs().maxCoeff(), s, t, out(0, 0), P(0, 0));
    }
  }
  (void)ctx;
  return m;
}

/// Cumulative products of N x N fp32 matrices over (B, T) chains (matrix_chain<Order>; with TENSOR_CORES,
/// prefix_scan of ops::matrix_product_3xtf32).
template <int N, bool TENSOR_CORES = false, parascan::chain_order Order = parascan::chain_order::left_to_right>
void run_matrix_prefix(context& ctx, record& r, index_t B, index_t T) {
  using M = Eigen::Matrix<float, N, N>;
  const std::size_t n = std::size_t(B * T);
  device_array<M> m(n), p(n);
  fill_reflections<N>(m.p, n);
  const auto vm = parascan::bdt<const M>(m.p, B, 1, T);
  const auto vp = parascan::bdt(p.p, B, 1, T);
  measure(
      ctx, r, [&] { p.poison(); },
      [&] {
        if constexpr (TENSOR_CORES)
          parascan::prefix_scan(parascan::cuda{}, parascan::ops::matrix_product_3xtf32<M, Order>{}, vm, vp);
        else
          parascan::matrix_chain<Order>(parascan::cuda{}, vm, vp);
      },
      [&] { return check_products<N, Order>(ctx, vm, p.p, pick(B), false); });
}

/// The product of each of B chains of T N x N fp32 matrices (matrix_chain_product).
template <int N>
void run_matrix_reduce(context& ctx, record& r, index_t B, index_t T) {
  using M = Eigen::Matrix<float, N, N>;
  device_array<M> m(static_cast<std::size_t>(B * T)), total(static_cast<std::size_t>(B));
  fill_reflections<N>(m.p, m.n);
  const auto vm = parascan::bdt<const M>(m.p, B, 1, T);
  measure(
      ctx, r, [&] { total.poison(); }, [&] { parascan::matrix_chain_product(parascan::cuda{}, vm, total.p); },
      [&] { return check_products<N>(ctx, vm, total.p, pick(B), true); });
}

/// Haar-random orthogonal N x N matrices (QR of Gaussian ones, R's diagonal made positive), column-major,
/// rounded to fp32; kept per N (a QR at N = 1024 takes a while on the host).
const std::vector<float>& orthogonal_pool(index_t N, int count) {
  static std::map<index_t, std::vector<float>> pools;
  std::vector<float>& pool = pools[N];
  if (!pool.empty()) return pool;
  std::mt19937_64 g(31 + std::uint64_t(N));
  std::normal_distribution<double> normal;
  pool.resize(std::size_t(count * N * N));
  for (int k = 0; k < count; ++k) {
    Eigen::MatrixXd a(N, N);
    for (index_t j = 0; j < N; ++j)
      for (index_t i = 0; i < N; ++i) a(i, j) = normal(g);
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
    Eigen::MatrixXd q = qr.householderQ();
    for (index_t j = 0; j < N; ++j)
      if (qr.matrixQR()(j, j) < 0) q.col(j) = -q.col(j);
    for (index_t j = 0; j < N; ++j)
      for (index_t i = 0; i < N; ++i) pool[std::size_t(k * N * N + i + j * N)] = float(q(i, j));
  }
  return pool;
}

/// parascan::cuda with its temporaries from the default pool, which main() keeps (bench/kept_pool.cuh).
parascan::cuda kept_workspace() {
  static bench::kept_pool_allocator allocator;
  return parascan::cuda{nullptr, &allocator};
}

/// Runtime-size N x N fp32 chains (ops/runtime_matrix_chain.hpp, cuBLAS), column-major (or, `rows`,
/// row-major: PyTorch's layout), one chain of T:
/// the prefix (matrix_chain) or the product (matrix_chain_product), exact or TF32. Factors: 16 (8 from
/// N = 512) Haar-random orthogonal matrices in an irregular order, as bench/matrix_peers.py's (near-identity
/// factors such as single reflections make TF32's rounding systematic); checked against an fp64 sequential
/// product on the GPU (cuBLAS DGEMM) of the stored factors at every 97th step and the last, entrywise.
void run_runtime_chain(context& ctx, record& r, index_t N, index_t T, bool prefix, parascan::matrix_math math,
                       bool rows = false) {
  const index_t NN = N * N;
  const int pool_size = N >= 512 ? 8 : 16;
  const auto pick_factor = [&](index_t t) { return int((t * 5 + t / 16) % pool_size); };
  const std::vector<float>& pool32 = orthogonal_pool(N, pool_size);
  const std::vector<double> pool64(pool32.begin(), pool32.end());
  device_array<float> in(std::size_t(T * NN)), out(std::size_t(prefix ? T * NN : NN)), pool(pool32.size());
  device_array<double> ref(std::size_t(2 * NN)), pool_d(pool64.size());
  check(cudaMemcpy(pool.p, pool32.data(), pool32.size() * 4, cudaMemcpyHostToDevice), "pool");
  check(cudaMemcpy(pool_d.p, pool64.data(), pool64.size() * 8, cudaMemcpyHostToDevice), "pool");
  for (index_t t = 0; t < T; ++t)
    check(cudaMemcpy(in.p + t * NN, pool.p + pick_factor(t) * NN, NN * 4, cudaMemcpyDeviceToDevice), "fill");
  const auto col = rows ? parascan::matrix_storage::row_major : parascan::matrix_storage::column_major;
  const auto factors = parascan::dense_chains<const float>(in.p, 1, T, N, col);
  parascan::matrix_options<float> o;
  o.math = math;
  const auto call = [&] {
    if (prefix) parascan::matrix_chain(kept_workspace(), factors, parascan::dense_chains(out.p, 1, T, N, col), o);
    else parascan::matrix_chain_product(kept_workspace(), factors, out.p, o);
  };
  const auto verify = [&] {
    const bool exact = math == parascan::matrix_math::exact;
    error_meter m{4 * (exact ? 1.2e-7 * std::sqrt(double(N)) : 4.9e-4) * (1 + std::sqrt(double(T)))};
    cublasHandle_t h;
    cublasCreate(&h);
    const double one = 1, zero = 0;
    double* p = ref.p;
    double* q = ref.p + NN;
    check(cudaMemcpy(p, pool_d.p + pick_factor(0) * NN, NN * 8, cudaMemcpyDeviceToDevice), "reference");
    std::vector<double> want(static_cast<std::size_t>(NN));
    std::vector<float> got(static_cast<std::size_t>(NN));
    for (index_t t = 0; t < T; ++t) {
      if (t > 0) {  // (row-major: the transposes, read column-major, multiply in the other order)
        const double* factor = pool_d.p + pick_factor(t) * NN;
        cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(N), int(N), &one, rows ? factor : p, int(N),
                    rows ? p : factor, int(N), &zero, q, int(N));
        std::swap(p, q);
      }
      if (t != T - 1 && (!prefix || t % 97 != 0)) continue;
      check(cudaMemcpy(want.data(), p, NN * 8, cudaMemcpyDeviceToHost), "reference");
      check(cudaMemcpy(got.data(), out.p + (prefix ? t * NN : 0), NN * 4, cudaMemcpyDeviceToHost), "download");
      for (index_t k = 0; k < NN; ++k)
        m.add(std::abs(double(got[std::size_t(k)]) - want[std::size_t(k)]), 0, t, got[std::size_t(k)], want[std::size_t(k)]);
    }
    cublasDestroy(h);
    return m;
  };
  r.flops = 2.0 * double(N) * double(N) * double(N) * double(T - 1);  // the sequential product's multiply-adds
  measure(ctx, r, [&] { out.poison(); }, call, verify, N >= 512 ? 5 : 0);
}

/// The backward passes of runtime-size chains (matrix_chain_backward, matrix_chain_product_backward), one
/// column-major fp32 chain of T of run_runtime_chain's factors: the prefix from its products (computed once
/// by matrix_chain) and a random upstream gradient, the reduction from a random dL/d(result). Checked
/// entrywise against fp64 on the last two steps (prefix: out[T-2]^T G[T-1] and out[T-3]^T (G[T-2] + G[T-1]
/// M[T-1]^T); reduction: the last step, L^T G with L the product of the other factors by cuBLAS DGEMM).
/// flops: the sequential adjoint's multiply-adds (prefix 2 products a step, reduction 3); the GPU's tree
/// does more (prefix: 2N x 2N products, about 8 N^3 each).
void run_runtime_chain_backward(context& ctx, record& r, index_t N, index_t T, bool prefix) {
  const index_t NN = N * N;
  const int pool_size = N >= 512 ? 8 : 16;
  const auto pick_factor = [&](index_t t) { return int((t * 5 + t / 16) % pool_size); };
  const std::vector<float>& pool32 = orthogonal_pool(N, pool_size);
  device_array<float> in(std::size_t(T * NN)), out(std::size_t(prefix ? T * NN : 1)),
      grad_out(std::size_t(prefix ? T * NN : NN)), grad_in(std::size_t(T * NN)), pool(pool32.size());
  check(cudaMemcpy(pool.p, pool32.data(), pool32.size() * 4, cudaMemcpyHostToDevice), "pool");
  for (index_t t = 0; t < T; ++t)
    check(cudaMemcpy(in.p + t * NN, pool.p + pick_factor(t) * NN, NN * 4, cudaMemcpyDeviceToDevice), "fill");
  fill(grad_out.p, std::size_t(prefix ? T * NN : NN), dist::token, 77);
  const auto col = parascan::matrix_storage::column_major;
  const auto factors = parascan::dense_chains<const float>(in.p, 1, T, N, col);
  const auto grads = parascan::dense_chains(grad_in.p, 1, T, N, col);
  if (prefix) parascan::matrix_chain(kept_workspace(), factors, parascan::dense_chains(out.p, 1, T, N, col));
  const auto call = [&] {
    if (prefix)
      parascan::matrix_chain_backward(kept_workspace(), factors, parascan::dense_chains<const float>(out.p, 1, T, N, col),
                                      parascan::dense_chains<const float>(grad_out.p, 1, T, N, col), grads);
    else
      parascan::matrix_chain_product_backward(kept_workspace(), factors, grad_out.p, grads);
  };
  using dmatrix = Eigen::MatrixXd;
  const auto download = [&](const float* p) {  // one column-major matrix, to fp64
    std::vector<float> h(static_cast<std::size_t>(NN));
    check(cudaMemcpy(h.data(), p, NN * 4, cudaMemcpyDeviceToHost), "download");
    return dmatrix(Eigen::Map<const Eigen::MatrixXf>(h.data(), N, N).cast<double>());
  };
  const auto verify = [&] {
    error_meter m{4 * 1.2e-7 * std::sqrt(double(N)) * (1 + std::sqrt(double(T))) * 2};
    const auto compare = [&](const dmatrix& want, index_t t) {
      const dmatrix got = download(grad_in.p + t * NN);
      const double scale = std::max(1.0, want.cwiseAbs().maxCoeff());
      for (index_t k = 0; k < NN; ++k) m.add(std::abs(got(k % N, k / N) - want(k % N, k / N)) / scale, 0, t,
                                             got(k % N, k / N), want(k % N, k / N));
    };
    if (prefix) {
      const dmatrix g1 = download(grad_out.p + (T - 1) * NN);
      compare(download(out.p + (T - 2) * NN).transpose() * g1, T - 1);
      const dmatrix r = download(grad_out.p + (T - 2) * NN) + g1 * download(in.p + (T - 1) * NN).transpose();
      compare(download(out.p + (T - 3) * NN).transpose() * r, T - 2);
      return m;
    }
    // L = M[0] ... M[T-2] in fp64 (cuBLAS DGEMM over the fp64 pool), then L^T G.
    const std::vector<double> pool64(pool32.begin(), pool32.end());
    device_array<double> pool_d(pool64.size()), ref(std::size_t(2 * NN));
    check(cudaMemcpy(pool_d.p, pool64.data(), pool64.size() * 8, cudaMemcpyHostToDevice), "pool");
    cublasHandle_t h;
    cublasCreate(&h);
    const double one = 1, zero = 0;
    double *p = ref.p, *q = ref.p + NN;
    check(cudaMemcpy(p, pool_d.p + pick_factor(0) * NN, NN * 8, cudaMemcpyDeviceToDevice), "reference");
    for (index_t t = 1; t < T - 1; ++t) {
      cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(N), int(N), &one, p, int(N), pool_d.p + pick_factor(t) * NN,
                  int(N), &zero, q, int(N));
      std::swap(p, q);
    }
    std::vector<double> l(static_cast<std::size_t>(NN));
    check(cudaMemcpy(l.data(), p, NN * 8, cudaMemcpyDeviceToHost), "reference");
    cublasDestroy(h);
    compare(Eigen::Map<const dmatrix>(l.data(), N, N).transpose() * download(grad_out.p), T - 1);
    return m;
  };
  r.flops = (prefix ? 4.0 : 6.0) * double(N) * double(N) * double(N) * double(T);
  measure(ctx, r, [&] { grad_in.poison(); }, call, verify, N >= 512 ? 5 : 0);
}

/// x[t] = W[t] x[t-1] + b[t] over (B, T) sequences of N-vectors, x only (the forward pass): W 0.9 times a
/// reflection (a contraction: x stays bounded), b uniform in [-1, 1). Checked on a few sequences against
/// fp64, relative to max(1, |x|).
template <int N>
void run_affine_forward(context& ctx, record& r, index_t B, index_t T) {
  using M = Eigen::Matrix<float, N, N>;
  using V = Eigen::Matrix<float, N, 1>;
  const std::size_t n = std::size_t(B * T);
  device_array<M> W(n);
  device_array<V> b(n), x(n);
  fill_reflections<N>(W.p, n, 0.9);
  fill(reinterpret_cast<float*>(b.p), n * N, dist::token, 41);
  const auto vW = parascan::bdt<const M>(W.p, B, 1, T);
  const auto vb = parascan::bdt<const V>(b.p, B, 1, T);
  const auto vx = parascan::bdt(x.p, B, 1, T);
  measure(
      ctx, r, [&] { x.poison(); }, [&] { parascan::affine_recurrence(parascan::cuda{}, vW, vb, vx); },
      [&] {
        error_meter m{1e-5 * std::sqrt(double(N))};
        std::vector<M> hW(static_cast<std::size_t>(T));
        std::vector<V> hb(static_cast<std::size_t>(T)), hx(static_cast<std::size_t>(T));
        for (index_t s : pick(B)) {
          check(cudaMemcpy(hW.data(), W.p + s * T, T * sizeof(M), cudaMemcpyDeviceToHost), "download");
          check(cudaMemcpy(hb.data(), b.p + s * T, T * sizeof(V), cudaMemcpyDeviceToHost), "download");
          check(cudaMemcpy(hx.data(), x.p + s * T, T * sizeof(V), cudaMemcpyDeviceToHost), "download");
          Eigen::Matrix<double, N, 1> ref = Eigen::Matrix<double, N, 1>::Zero();
          for (index_t t = 0; t < T; ++t) {
            ref = hW[std::size_t(t)].template cast<double>() * ref + hb[std::size_t(t)].template cast<double>();
            const double e = (hx[std::size_t(t)].template cast<double>() - ref).cwiseAbs().maxCoeff() /
                             std::max(1.0, ref.cwiseAbs().maxCoeff());
            m.add(e, s, t, hx[std::size_t(t)][0], ref[0]);
          }
        }
        return m;
      });
}

// ---------------------------------------------------------------------------------------------------
// The cases.

struct bench_case {
  record r;
  bool quick = false;
  std::function<void(context&, record&)> run;
};

[[maybe_unused]] std::string policy_name(int threads, int items, const char* combine, int min_blocks) {
  return "<" + std::to_string(threads) + "," + std::to_string(items) + "," + combine + ",min" +
         std::to_string(min_blocks) + ">";
}

std::vector<bench_case> make_cases(bool sweep) {
  std::vector<bench_case> cases;
  using fn = std::function<void(context&, record&)>;
  const auto add = [&](std::string impl, std::string name, std::string op, std::string dtype, std::string layout,
                       std::vector<long long> shape, long long T, long long sequences, double bytes_per_step,
                       long long steps, bool quick, fn run, std::string policy = "") {
    bench_case c;
    c.r.impl = std::move(impl), c.r.name = std::move(name), c.r.op = std::move(op), c.r.dtype = std::move(dtype);
    c.r.layout = std::move(layout), c.r.shape = std::move(shape), c.r.T = T, c.r.sequences = sequences;
    c.r.bytes = bytes_per_step * double(steps), c.r.policy = std::move(policy);
    c.quick = quick, c.run = std::move(run);
    cases.push_back(std::move(c));
  };
  const long long B = 8, D = 1536;
  const auto bdt_shape = [&](long long T) { return std::vector<long long>{B, D, T}; };
  const auto in = [](long long T, std::initializer_list<long long> set) {
    return std::find(set.begin(), set.end(), T) != set.end();
  };

  for (long long T : {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 1000, 5000, 50000})
    add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "bdt", bdt_shape(T), T, B * D, 12, B * D * T,
        in(T, {1024, 4096, 65536}), [=](context& c, record& r) { run_linear<float>(c, r, B, D, T, false); });
  for (long long T : {1024, 4096, 16384, 65536}) {
    add("parascan", "linear_recurrence", "linear_recurrence", "bf16", "bdt", bdt_shape(T), T, B * D, 6, B * D * T,
        T == 4096, [=](context& c, record& r) { run_linear<bf16>(c, r, B, D, T, false); });
    add("parascan", "linear_recurrence", "linear_recurrence", "fp16", "bdt", bdt_shape(T), T, B * D, 6, B * D * T,
        false, [=](context& c, record& r) { run_linear<f16>(c, r, B, D, T, false); });
  }
  for (long long T : {4096, 65536})
    add("parascan", "linear_recurrence", "linear_recurrence", "complex64", "bdt", bdt_shape(T), T, B * D, 24,
        B * D * T, false, [=](context& c, record& r) { run_linear<c64>(c, r, B, D, T, false); });
  for (long long T : {4096, 65536}) {
    add("parascan", "linear_recurrence_backward", "linear_recurrence_backward", "fp32", "bdt", bdt_shape(T), T, B * D,
        20, B * D * T, false, [=](context& c, record& r) { run_backward<float>(c, r, B, D, T); });
    add("parascan", "linear_recurrence_backward", "linear_recurrence_backward", "bf16", "bdt", bdt_shape(T), T, B * D,
        10, B * D * T, false, [=](context& c, record& r) { run_backward<bf16>(c, r, B, D, T); });
  }
  add("parascan", "affine_recurrence_backward 4x4", "affine_recurrence_backward", "fp32", "bdt", {1, 4096, 2048}, 2048,
      4096, 8 * 16 + 12 * 4, 4096 * 2048, false, [=](context& c, record& r) { run_affine_backward<4>(c, r, 4096, 2048); });
  add("parascan", "affine_recurrence_backward 8x8", "affine_recurrence_backward", "fp32", "bdt", {1, 1024, 2048}, 2048,
      1024, 8 * 64 + 12 * 8, 1024 * 2048, false, [=](context& c, record& r) { run_affine_backward<8>(c, r, 1024, 2048); });
  add("parascan", "matrix_chain_backward 4x4", "matrix_chain_backward", "fp32", "bdt", {1, 4096, 2048}, 2048, 4096,
      256, 4096 * 2048, false, [=](context& c, record& r) { run_chain_backward(c, r, 4096, 2048); });
  add("parascan", "matrix_chain_product_backward 4x4", "matrix_chain_product_backward", "fp32", "bdt",
      {1, 4096, 2048}, 2048, 4096, 128, 4096 * 2048, false,
      [=](context& c, record& r) { run_chain_product_backward(c, r, 4096, 2048); });
  // Matrix products (issue 8's cases): prefix over (B, 1024) chains of N x N fp32, 2^26 floats in all
  // (8 bytes a float: read, written); the product of one chain of 1000 (4 bytes a float read).
  const auto matrices = [&](auto size) {
    constexpr int N = decltype(size)::value;
    const long long chains = (1LL << 26) / (1024LL * N * N);
    add("parascan", "matrix_chain " + std::to_string(N) + "x" + std::to_string(N), "matrix_chain", "fp32", "bt",
        {chains, 1024, N, N}, 1024, chains, 8.0 * N * N, chains * 1024, N == 16,
        [=](context& c, record& r) { run_matrix_prefix<N>(c, r, chains, 1024); });
    if constexpr (N == 32)  // the other order (later factors on the left)
      add("parascan", "matrix_chain " + std::to_string(N) + "x" + std::to_string(N) + " right_to_left", "matrix_chain",
          "fp32", "bt", {chains, 1024, N, N}, 1024, chains, 8.0 * N * N, chains * 1024, false,
          [=](context& c, record& r) {
            run_matrix_prefix<N, false, parascan::chain_order::right_to_left>(c, r, chains, 1024);
          });
    if constexpr (N == 16 || N == 32)  // opted in to tensor cores (3xTF32)
      add("parascan", "matrix_chain " + std::to_string(N) + "x" + std::to_string(N) + " 3xtf32", "matrix_chain",
          "fp32", "bt", {chains, 1024, N, N}, 1024, chains, 8.0 * N * N, chains * 1024, false,
          [=](context& c, record& r) { run_matrix_prefix<N, true>(c, r, chains, 1024); });
    add("parascan", "matrix_chain_product " + std::to_string(N) + "x" + std::to_string(N), "matrix_chain_product",
        "fp32", "bt", {1, 1000, N, N}, 1000, 1, 4.0 * N * N, 1000, N == 16,
        [=](context& c, record& r) { run_matrix_reduce<N>(c, r, 1, 1000); });
  };
  // The affine recurrence, x only, over (B, 1024) sequences with B N = 16384 ((N^2 + 2N) floats a step:
  // W and b read, x written).
  const auto affine = [&](auto size) {
    constexpr int N = decltype(size)::value;
    const long long count = 16384 / N;
    add("parascan", "affine_recurrence " + std::to_string(N) + "x" + std::to_string(N), "affine_recurrence", "fp32",
        "bt", {count, 1024, N}, 1024, count, 4.0 * (N * N + 2 * N), count * 1024, N == 8,
        [=](context& c, record& r) { run_affine_forward<N>(c, r, count, 1024); });
  };
  affine(std::integral_constant<int, 4>{});
  affine(std::integral_constant<int, 8>{});
  affine(std::integral_constant<int, 16>{});
  affine(std::integral_constant<int, 32>{});
  matrices(std::integral_constant<int, 2>{});
  matrices(std::integral_constant<int, 4>{});
  matrices(std::integral_constant<int, 8>{});
  matrices(std::integral_constant<int, 16>{});
  matrices(std::integral_constant<int, 32>{});
  // Runtime-size matrices (cuBLAS): the prefix of one chain of 1024 and the product of one chain of 1000,
  // N = 64 .. 1024, exact fp32 and TF32 (bytes: the factors read, and the products written by a prefix).
  for (long long N : {64, 128, 256, 512, 1024})
    for (auto math : {parascan::matrix_math::exact, parascan::matrix_math::tf32}) {
      const std::string size = std::to_string(N) + "x" + std::to_string(N);
      const std::string dtype = math == parascan::matrix_math::exact ? "fp32" : "fp32 (tf32)";
      add("parascan", "matrix_chain runtime " + size, "matrix_chain (runtime N, cuBLAS)", dtype, "bt",
          {1, 1024, N, N}, 1024, 1, 8.0 * N * N, 1024, false,
          [=](context& c, record& r) { run_runtime_chain(c, r, N, 1024, true, math); });
      add("parascan", "matrix_chain_product runtime " + size, "matrix_chain_product (runtime N, cuBLAS)", dtype, "bt",
          {1, 1000, N, N}, 1000, 1, 4.0 * N * N, 1000, N == 256,
          [=](context& c, record& r) { run_runtime_chain(c, r, N, 1000, false, math); });
      if (N == 256)  // (row-major: the other layout of the TF32 panels' kernels, and PyTorch's)
        add("parascan", "matrix_chain runtime " + size + " row-major", "matrix_chain (runtime N, cuBLAS)", dtype, "bt",
            {1, 1024, N, N}, 1024, 1, 8.0 * N * N, 1024, false,
            [=](context& c, record& r) { run_runtime_chain(c, r, N, 1024, true, math, true); });
    }
  // Their backward passes (bytes: prefix in, out, grad_out read and grad_in written; reduction in read,
  // grad_in written). The prefix's workspace is about 12 N^2 floats a step: N = 1024 would need 51 GB.
  for (long long N : {64, 256, 1024}) {
    const std::string size = std::to_string(N) + "x" + std::to_string(N);
    if (N <= 256)
      add("parascan", "matrix_chain_backward runtime " + size, "matrix_chain_backward (runtime N, cuBLAS)", "fp32",
          "bt", {1, 1024, N, N}, 1024, 1, 16.0 * N * N, 1024, false,
          [=](context& c, record& r) { run_runtime_chain_backward(c, r, N, 1024, true); });
    add("parascan", "matrix_chain_product_backward runtime " + size, "matrix_chain_product_backward (runtime N, cuBLAS)",
        "fp32", "bt", {1, 1000, N, N}, 1000, 1, 8.0 * N * N, 1000, false,
        [=](context& c, record& r) { run_runtime_chain_backward(c, r, N, 1000, false); });
  }
  add("parascan", "reduce_scan linear_recurrence", "linear_recurrence (final state)", "fp32", "bdt", bdt_shape(65536),
      65536, B * D, 8, B * D * 65536, false, [=](context& c, record& r) { run_reduce(c, r, B, D, 65536); });
  for (long long T : {4096, 65536})
    add("parascan", "user functor linear_recurrence", "prefix_scan(user_recurrence)", "fp32", "bdt", bdt_shape(T), T,
        B * D, 12, B * D * T, false, [=](context& c, record& r) {
          run_linear<float, parascan::use_default_policy, user_recurrence>(c, r, B, D, T, false);
        });
  for (long long T : {4096, 65536})
    add("parascan", "cumsum", "cumsum", "fp32", "bdt", bdt_shape(T), T, B * D, 8, B * D * T, false,
        [=](context& c, record& r) { run_cumsum(c, r, B, D, T, false, false); });
  const long long big = 1ll << 28;
  add("parascan", "cumsum", "cumsum", "fp32", "single", {big}, big, 1, 8, big, false,
      [=](context& c, record& r) { run_cumsum(c, r, 1, 1, big, true, false); });
  add("cub", "cumsum", "cub::DeviceScan::InclusiveSum", "fp32", "single", {big}, big, 1, 8, big, false,
      [=](context& c, record& r) { run_cumsum(c, r, 1, 1, big, true, true); });
  for (long long T : {4096, 65536})
    add("parascan", "linear_recurrence unaligned", "linear_recurrence", "fp32", "bdt", bdt_shape(T), T, B * D, 12,
        B * D * T, false, [=](context& c, record& r) { run_linear<float>(c, r, B, D, T, false, 1); });
  add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "single", {big}, big, 1, 12, big, true,
      [=](context& c, record& r) { run_single_linear(c, r, big, false); });
  add("cub", "linear_recurrence", "cub::DeviceScan::InclusiveScan(float2 pairs)", "fp32", "single", {big}, big, 1, 12,
      big, true, [=](context& c, record& r) { run_single_linear(c, r, big, true); });
  const long long T24 = 1ll << 24;
  add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "bdt", {1, 16, T24}, T24, 16, 12, 16 * T24, false,
      [=](context& c, record& r) { run_linear<float>(c, r, 1, 16, T24, false); });
  for (long long T : {1024, 4096, 65536}) {
    add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "btd", {B, T, D}, T, B * D, 12, B * D * T,
        T == 4096, [=](context& c, record& r) { run_linear<float>(c, r, B, D, T, true); });
    add("parascan", "linear_recurrence", "linear_recurrence", "bf16", "btd", {B, T, D}, T, B * D, 6, B * D * T, false,
        [=](context& c, record& r) { run_linear<bf16>(c, r, B, D, T, true); });
  }
  for (long long b : {1, 2})  // fewer channels than two warps a multiprocessor: split in time
    add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "btd", {b, 65536, D}, 65536, b * D, 12,
        b * D * 65536, false, [=](context& c, record& r) { run_linear<float>(c, r, b, D, 65536, true); });
  const long long T22 = 1ll << 22;  // narrow rows: 16 channels, a run of 16 lanes of each warp
  add("parascan", "linear_recurrence", "linear_recurrence", "fp32", "btd", {1, T22, 16}, T22, 16, 12, 16 * T22, false,
      [=](context& c, record& r) { run_linear<float>(c, r, 1, 16, T22, true); });
  add("parascan", "linear_recurrence", "linear_recurrence", "bf16", "btd", {1, T22, 16}, T22, 16, 6, 16 * T22, false,
      [=](context& c, record& r) { run_linear<bf16>(c, r, 1, 16, T22, true); });
  for (long long T : {4096, 65536})
    add("parascan", "logcumsumexp", "logcumsumexp", "fp32", "bdt", bdt_shape(T), T, B * D, 8, B * D * T, false,
        [=](context& c, record& r) { run_logcumsumexp(c, r, B, D, T); });
  for (long long T : {4096, 65536})
    add("parascan", "logcumsumexp_backward", "logcumsumexp_backward", "fp32", "bdt", bdt_shape(T), T, B * D, 16,
        B * D * T, false, [=](context& c, record& r) { run_logcumsumexp_backward(c, r, B, D, T); });
  add("parascan", "log_linear_recurrence", "log_linear_recurrence", "fp32", "bdt", bdt_shape(65536), 65536, B * D, 12,
      B * D * 65536, false, [=](context& c, record& r) { run_log_linear(c, r, B, D, 65536); });
  add("parascan", "log_linear_recurrence_backward", "log_linear_recurrence_backward", "fp32", "bdt", bdt_shape(65536),
      65536, B * D, 24, B * D * 65536, false, [=](context& c, record& r) { run_log_backward(c, r, B, D, 65536); });
  add("parascan", "signed_log_linear_recurrence_backward", "signed_log_linear_recurrence_backward", "fp32", "bdt",
      bdt_shape(65536), 65536, B * D, 28, B * D * 65536, false,
      [=](context& c, record& r) { run_signed_log_backward(c, r, B, D, 65536); });
  struct packed_case {
    const char* name;
    std::vector<index_t> offsets;
    long long D;
  };
  const packed_case packed_cases[] = {
      {"packed linear_recurrence (realistic)", bench::realistic_offsets((index_t(1) << 26) / 64), 64},
      {"packed linear_recurrence (skewed)", bench::skewed_offsets(4000, 4, 1 << 18), 64},
      {"packed linear_recurrence (few long)", bench::skewed_offsets(40, 4, 1 << 18), 64},
      {"packed linear_recurrence (realistic, D = 16)", bench::realistic_offsets((index_t(1) << 26) / 16), 16}};
  for (const packed_case& pc : packed_cases) {
    const std::vector<index_t>& off = pc.offsets;
    const long long N = (long long)off.size() - 1, total = off.back(), PD = pc.D;
    long long longest = 0;
    for (std::size_t i = 0; i + 1 < off.size(); ++i) longest = std::max<long long>(longest, off[i + 1] - off[i]);
    add("parascan", pc.name, "linear_recurrence", "fp32", "packed_td", {N, total, PD}, longest, N * PD, 12,
        total * PD, false, [=](context& c, record& r) { run_packed(c, r, off, PD); });
  }

#if defined(PARASCAN_BENCH_SWEEP)  // -DPARASCAN_BUILD_SWEEPS=ON: dozens of kernels, most of this file's compile
  if (sweep) {  // explicit policies for the layouts and operators bench/policy_sweep.cu does not sweep
    // (that one chose the contiguous-time defaults: scalar, pair, bf16 and complex states)
    using parascan::combine_variant;
    using parascan::cuda_policy;
    constexpr auto A = combine_variant::automatic;
    const long long T = 4096;
    const auto lin_btd = [&](auto policy, const std::string& name) {
      using P = decltype(policy);
      add("parascan", "sweep linear_recurrence", "linear_recurrence", "fp32", "btd", {B, T, D}, T, B * D, 12,
          B * D * T, false, [=](context& c, record& r) { run_linear<float, P>(c, r, B, D, T, true); }, name);
    };
    // (B, T, D) runs one-warp channel groups: only the pipeline's depth (stages) applies.
    lin_btd(cuda_policy<128, 4, A, 8, 2>{}, policy_name(128, 4, "auto", 8) + " 2 stages");
    lin_btd(cuda_policy<128, 4, A, 8, 3>{}, policy_name(128, 4, "auto", 8) + " 3 stages");
    lin_btd(cuda_policy<128, 4, A, 8, 6>{}, policy_name(128, 4, "auto", 8) + " 6 stages");
    lin_btd(cuda_policy<128, 4, A, 8, 8>{}, policy_name(128, 4, "auto", 8) + " 8 stages");
    const auto lse = [&](auto policy, const std::string& name) {
      using P = decltype(policy);
      add("parascan", "sweep logcumsumexp", "logcumsumexp", "fp32", "bdt", bdt_shape(T), T, B * D, 8, B * D * T, false,
          [=](context& c, record& r) { run_logcumsumexp<P>(c, r, B, D, T); }, name);
    };
    lse(cuda_policy<256, 8, A, 4>{}, policy_name(256, 8, "auto", 4));
    lse(cuda_policy<256, 4, A, 4>{}, policy_name(256, 4, "auto", 4));
    lse(cuda_policy<128, 8, A, 8>{}, policy_name(128, 8, "auto", 8));
    lse(cuda_policy<256, 16, A, 2>{}, policy_name(256, 16, "auto", 2));
    const auto chain = [&](auto policy, const std::string& name, long long count, long long len) {
      using P = decltype(policy);
      add("parascan", "sweep matrix_chain 4x4", "matrix_chain", "fp32", "bdt", {1, count, len}, len, count, 128,
          count * len, false, [=](context& c, record& r) { run_matrix_chain<P>(c, r, count, len); }, name);
    };
    const auto backward = [&](auto policy, auto storage, const std::string& name) {
      using P = decltype(policy);
      using V = decltype(storage);
      const double bytes = 5.0 * sizeof(V);
      for (long long len : {4096, 65536})
        add("parascan", "sweep linear_recurrence_backward", "linear_recurrence_backward", dtype_name<V>(), "bdt",
            bdt_shape(len), len, B * D, bytes, B * D * len, false,
            [=](context& c, record& r) { run_backward<V, P>(c, r, B, D, len); }, name);
    };
    constexpr auto W = combine_variant::warp;
    backward(cuda_policy<128, 4, W, 8, 4>{}, float{}, policy_name(128, 4, "warp", 8) + " 4 stages");
    backward(cuda_policy<128, 4, W, 6, 4>{}, float{}, policy_name(128, 4, "warp", 6) + " 4 stages");
    backward(cuda_policy<128, 4, W, 5, 4>{}, float{}, policy_name(128, 4, "warp", 5) + " 4 stages");
    backward(cuda_policy<128, 4, W, 4, 4>{}, float{}, policy_name(128, 4, "warp", 4) + " 4 stages");
    backward(cuda_policy<128, 4, W, 5, 3>{}, float{}, policy_name(128, 4, "warp", 5) + " 3 stages");
    backward(cuda_policy<128, 4, W, 4, 3>{}, float{}, policy_name(128, 4, "warp", 4) + " 3 stages");
    backward(cuda_policy<128, 4, W, 5, 2>{}, float{}, policy_name(128, 4, "warp", 5) + " 2 stages");
    backward(cuda_policy<128, 8, W, 6, 4>{}, bf16{}, policy_name(128, 8, "warp", 6) + " 4 stages");
    backward(cuda_policy<128, 8, W, 4, 4>{}, bf16{}, policy_name(128, 8, "warp", 4) + " 4 stages");
    backward(cuda_policy<128, 8, W, 3, 4>{}, bf16{}, policy_name(128, 8, "warp", 3) + " 4 stages");
    backward(cuda_policy<128, 8, W, 4, 3>{}, bf16{}, policy_name(128, 8, "warp", 4) + " 3 stages");
    backward(cuda_policy<128, 4, W, 6, 4>{}, bf16{}, policy_name(128, 4, "warp", 6) + " 4 stages");
    backward(cuda_policy<128, 4, W, 5, 4>{}, bf16{}, policy_name(128, 4, "warp", 5) + " 4 stages");
    backward(cuda_policy<128, 4, W, 8, 4>{}, bf16{}, policy_name(128, 4, "warp", 8) + " 4 stages");
    backward(cuda_policy<128, 16, W, 3, 2>{}, bf16{}, policy_name(128, 16, "warp", 3) + " 2 stages");
    backward(cuda_policy<128, 16, W, 4, 2>{}, bf16{}, policy_name(128, 16, "warp", 4) + " 2 stages");
    backward(cuda_policy<128, 16, W, 4, 3>{}, bf16{}, policy_name(128, 16, "warp", 4) + " 3 stages");
    backward(cuda_policy<128, 8, W, 6, 3>{}, bf16{}, policy_name(128, 8, "warp", 6) + " 3 stages");
    backward(cuda_policy<128, 8, W, 8, 3>{}, bf16{}, policy_name(128, 8, "warp", 8) + " 3 stages");
    backward(cuda_policy<128, 8, W, 4, 3>{}, float{}, policy_name(128, 8, "warp", 4) + " 3 stages");
    backward(cuda_policy<128, 4, W, 8, 3>{}, float{}, policy_name(128, 4, "warp", 8) + " 3 stages");
    chain(parascan::use_default_policy{}, "<default>", 4096, 4096);
    chain(cuda_policy<64, 2>{}, policy_name(64, 2, "auto", 1), 4096, 4096);
    chain(cuda_policy<128, 1>{}, policy_name(128, 1, "auto", 1), 4096, 4096);
    chain(cuda_policy<128, 1, combine_variant::sequential>{}, policy_name(128, 1, "sequential", 1), 4096, 4096);
    chain(cuda_policy<64, 1, combine_variant::sequential>{}, policy_name(64, 1, "sequential", 1), 4096, 4096);
    chain(parascan::use_default_policy{}, "<default>", 8, 1 << 20);
  }
#else
  if (sweep) std::fprintf(stderr, "--sweep: this build has no sweep (configure with -DPARASCAN_BUILD_SWEEPS=ON)\n");
#endif
  return cases;
}

// ---------------------------------------------------------------------------------------------------
// The copy floor.

void measure_copy_floor(context& ctx) {
  const std::size_t n4 = std::size_t(1) << 27;  // 2 GiB read, 2 GiB written
  device_array<float4> in(n4), out(n4);
  fill(reinterpret_cast<float*>(in.p), n4 * 4, dist::token, 5);
  const double bytes = 2.0 * double(n4 * sizeof(float4));
  struct variant {
    std::string name;
    std::function<void()> run;
  };
  std::vector<variant> variants;
  for (int per_sm : {4, 8, 16})
    for (int threads : {256, 512})
      variants.push_back({"float4 grid-stride, " + std::to_string(per_sm) + " blocks/SM x " + std::to_string(threads),
                          [&, per_sm, threads] { copy_kernel<1><<<ctx.sms * per_sm, threads>>>(in.p, out.p, n4); }});
  for (int per_sm : {4, 8})
    variants.push_back({"float4 x4 in flight, " + std::to_string(per_sm) + " blocks/SM x 256",
                        [&, per_sm] { copy_kernel<4><<<ctx.sms * per_sm, 256>>>(in.p, out.p, n4); }});
  variants.push_back({"cudaMemcpyAsync device to device",
                      [&] { check(cudaMemcpyAsync(out.p, in.p, n4 * sizeof(float4), cudaMemcpyDeviceToDevice), "copy"); }});
  std::printf("copy floor: 2 GiB copies (read + write counted), median of %d runs, L2 flushed\n", ctx.opt.runs);
  for (const variant& v : variants) {
    const double ms = ctx.median_ms(v.run);
    const double gbs = bytes / ms / 1e6;
    std::printf("  %-44s %8.3f ms %8.1f GB/s\n", v.name.c_str(), ms, gbs);
    ctx.copy_gbs = std::max(ctx.copy_gbs, gbs);
    record r;
    r.impl = "copy", r.name = "copy: " + v.name, r.op = "copy", r.dtype = "fp32x4", r.layout = "flat";
    r.shape = {(long long)(n4 * 4)}, r.T = 0, r.sequences = 1, r.bytes = bytes, r.ms = ms, r.gbs = gbs;
    r.status = "ok";
    ctx.records.push_back(r);
  }
  for (record& r : ctx.records) r.fraction = r.gbs / ctx.copy_gbs;
  std::printf("copy floor (fastest): %.1f GB/s\n\n", ctx.copy_gbs);
}

void usage() {
  std::printf(
      "usage: parascan_bench_cuda [options]\n"
      "  --quick          a subset in under a minute (fp32 T = 1024, 4096, 65536; bf16 4096; one sequence\n"
      "                   of 2^28 with CUB; btd 4096)\n"
      "  --filter SUBSTR  only the cases whose label contains SUBSTR; a label is\n"
      "                   \"impl case dtype layout (shape)\", e.g. \"parascan linear_recurrence fp32 bdt (8,1536,4096)\"\n"
      "  --json FILE      write one JSON object per case (and per copy kernel, impl \"copy\")\n"
      "  --commit SHA     the commit field of the JSON (default: $COMMIT, else \"unknown\")\n"
      "  --sweep          add the policy sweep (explicit cuda_policy variants)\n"
      "  --runs N         timed runs per case (default 20); --warmup N untimed calls first (default 3)\n"
      "  --flush MODE     how the L2 is flushed before each run: write (a 256 MiB memset; the default, or\n"
      "                   $BENCH_FLUSH) or read (a read of 256 MiB)\n"
      "  --list           print the labels of the selected cases and exit (needs no GPU)\n");
}

/// Host time of one small call, a (4, 64) fp32 linear recurrence on cuda{} (the enqueue, as a training
/// loop sees it), mean of 20000 calls after 1000: the C++ side of bench/python_bench.py's per-call
/// overhead, measured in the same way as its Python side.
double small_call_us() {
  device_array<float> a(256), b(256), x(256);
  check(cudaMemsetAsync(a.p, 0, a.bytes(), 0), "cudaMemsetAsync");
  check(cudaMemsetAsync(b.p, 0, b.bytes(), 0), "cudaMemsetAsync");
  const auto va = parascan::bdt<const float>(a.p, 1, 4, 64), vb = parascan::bdt<const float>(b.p, 1, 4, 64);
  const auto vx = parascan::bdt(x.p, 1, 4, 64);
  for (int i = 0; i < 1000; ++i) parascan::linear_recurrence(parascan::cuda{}, va, vb, vx);
  check(cudaDeviceSynchronize(), "small calls");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) parascan::linear_recurrence(parascan::cuda{}, va, vb, vx);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20000;
  check(cudaDeviceSynchronize(), "small calls");
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  context ctx;
  if (const char* c = std::getenv("COMMIT")) ctx.opt.commit = c;
  std::string flush = std::getenv("BENCH_FLUSH") ? std::getenv("BENCH_FLUSH") : "write";  // as peers.py
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") ctx.opt.quick = true;
    else if (a == "--sweep") ctx.opt.sweep = true;
    else if (a == "--list") ctx.opt.list = true;
    else if (a == "--filter") ctx.opt.filter = value();
    else if (a == "--json") ctx.opt.json = value();
    else if (a == "--commit") ctx.opt.commit = value();
    else if (a == "--runs") ctx.opt.runs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--warmup") ctx.opt.warmup = std::max(0, std::atoi(value().c_str()));
    else if (a == "--flush") flush = value();
    else if (a == "-h" || a == "--help") return usage(), 0;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      usage();
      return 2;
    }
  }

  if (flush != "write" && flush != "read") {
    std::fprintf(stderr, "--flush (or BENCH_FLUSH): write or read, not %s\n", flush.c_str());
    return 2;
  }
  ctx.opt.read_flush = flush == "read";

  std::vector<bench_case> cases;
  for (bench_case& c : make_cases(ctx.opt.sweep)) {
    const bool is_sweep = !c.r.policy.empty();
    if (ctx.opt.quick && !c.quick && !is_sweep) continue;
    if (!ctx.opt.filter.empty() && c.r.label().find(ctx.opt.filter) == std::string::npos) continue;
    cases.push_back(std::move(c));
  }
  if (ctx.opt.list) {
    for (const bench_case& c : cases) std::printf("%s\n", c.r.label().c_str());
    return 0;
  }

  // The bench's arrays (device_array) and the runtime-size chains' workspace (kept_workspace) come from the
  // default stream-ordered pool, which by default returns memory to the device at every synchronisation,
  // so a call with gigabytes of workspace (runtime-size chains at N = 1024) maps it again every time (H100:
  // 6 ms a call), and a case's freed arrays slow the next case down (device_array). Keep it, as a
  // framework's caching allocator (PyTorch's, in the peers' runs) keeps its memory.
  check(bench::keep_default_pool(), "keep the default memory pool");
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  ctx.device = prop.name, ctx.sms = prop.multiProcessorCount;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime), cudaDriverGetVersion(&driver);
  std::printf("device: %s, %d SMs, %.1f GiB, CUDA runtime %d, driver %d, commit %s\n", prop.name,
              prop.multiProcessorCount, double(prop.totalGlobalMem) / (1 << 30), runtime, driver, ctx.opt.commit.c_str());
  std::printf("rules: median of %d runs after %d warm-up calls, CUDA events, 256 MiB L2 flush (%s) before each run; "
              "each case checked once against an fp64 reference on a slice\n\n",
              ctx.opt.runs, ctx.opt.warmup, ctx.opt.read_flush ? "read" : "memset");
  int failures = 0;
  try {
    ctx.flush = std::make_unique<device_array<char>>(std::size_t(256) << 20);
    check(cudaMemset(ctx.flush->p, 0, ctx.flush->n), "L2 flush buffer");
    ctx.staging = std::make_unique<device_array<char>>(std::size_t(64) << 20);
    measure_copy_floor(ctx);
    std::printf("small calls: (4, 64) fp32 linear_recurrence on cuda{}: %.2f us of host time a call (mean of 20000 "
                "after 1000)\n\n",
                small_call_us());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "copy floor: %s\n", e.what());
    return 1;
  }
  write_json(ctx);

  print_header();
  bool alive = true;
  for (bench_case& c : cases) {
    record r = c.r;
    if (!alive) {
      r.status = "skipped", r.note = "the CUDA context was lost in an earlier case";
    } else {
      try {
        c.run(ctx, r);
      } catch (const out_of_memory& e) {
        r.status = "skipped", r.note = e.what();
      } catch (const std::bad_alloc&) {  // kept_workspace's pool
        r.status = "skipped", r.note = "out of device memory (the workspace)";
      } catch (const std::exception& e) {
        r.status = "FAIL", r.note = e.what();
      }
      if (r.status != "ok") alive = context_alive();
    }
    failures += r.status == "FAIL";
    print_row(r);
    ctx.records.push_back(r);
    write_json(ctx);
  }
  std::printf("\n%zu cases, %d failed; copy floor %.1f GB/s on %s\n", cases.size(), failures, ctx.copy_gbs,
              ctx.device.c_str());
  if (!ctx.opt.json.empty()) std::printf("JSON: %s\n", ctx.opt.json.c_str());
  return failures > 0 || !alive ? 1 : 0;
}
