// A probe, not wired into the engine: one long sequence scanned in one pass by the look-ahead design of
// CCCL's newer scan (a description of it: bench/results/cccl-lookahead-scan-study-2026-11-29.md),
// deterministic, for the fp32 sum and the fp32 linear recurrence, against parascan's prefix_scan (the
// engine's look-ahead, cuda/lookahead.cuh, for both from 64 tiles a multiprocessor, else the look-back),
// the engine's look-ahead at explicit shapes, the look-back on (1, 16, n / 16) and CUB's InclusiveSum in
// the same run, as % of a device-to-device copy of the same bytes. Results:
// bench/results/h200-lookahead-probe-2026-11-29.log and h200-lookahead-engine-2026-11-29.log (at 2^28 this
// kernel 77% / 85-86%; the engine's by default 93.8% / 90.9% since fbdf8e8, run 21, each case in its own
// process: PROBE_ONLY, since a process's earlier allocations move these kernels by a few points).
//
// Design (no code taken from CCCL):
// - Persistent blocks of 1 + C warps. Tiles (C warps x 32 lanes x ITEMS steps) are taken in increasing
//   order from a global counter, so a tile only ever waits on tiles already taken by running blocks.
// - Warps 1..C (compute) keep STAGES tiles in a shared-memory ring (cp.async, 16 bytes a lane): at step k
//   they issue the loads of tile k + STAGES - 1, reduce tile k + AHEAD and publish its aggregate at once
//   (its own total, flagged words: lookback.cuh's publish), then wait for tile k's prefix, scan it and
//   store it. Aggregates never wait on a prefix, so no block waits on another block's look-back.
// - Warp 0 (look-ahead) keeps a cursor over the batch's tiles from tile 0 and the fold P of every aggregate
//   before it, in aligned windows of 32 tiles (each window's total by one order-keeping warp tree, windows
//   folded left to right); a tile's prefix is P folded with the same tree over its window's aggregates
//   before it (identity-padded). One round trip reads up to 4 windows (the whole windows and the tile's
//   own), so a look-ahead takes one round trip a tile while it keeps up: a tile's period on its
//   multiprocessor (~1.4 us for 3840 fp32 pairs at 4.3 TB/s over 132 blocks) must exceed it, hence the
//   bigger tiles below. The bracketing depends on the tile index only, so results are bit-identical from
//   run to run. Nothing but aggregates is published.
// - Compute warps sync among themselves with a named barrier (bar.sync 1); the two roles hand over tile
//   indices and prefixes through shared memory with block-scope release / acquire counters.
//
// Usage: [PROBE_ONLY=text] [PROBE_POOL=release] parascan_lookahead_probe [LOG2_N] (default 28; n a multiple of 4: 16-byte pieces).
#include <cuda/atomic>
#include <cuda_pipeline.h>

#include <cub/device/device_scan.cuh>
#include <parascan/cuda.cuh>
#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "event_timer.cuh"

namespace probe {

using parascan::engine::flagged;
using parascan::engine::publish;
using parascan::engine::read_published;
using parascan::engine::shuffle_from;
using parascan::engine::shuffle_up;
using index_t = long long;
constexpr unsigned full = 0xffffffffu;

/// y[t] = y[t - 1] + x[t].
struct sum_op {
  using S = float;
  static constexpr int arity = 1;
  __device__ static S identity() { return 0.f; }
  __device__ static S combine(const S& x, const S& y) { return x + y; }
  __device__ static S lift(const float (&v)[2]) { return v[0]; }
  __device__ static float out(const S& s) { return s; }
};

/// x[t] = a[t] x[t - 1] + b[t]: states (gate product, value), earlier on the left.
struct recurrence_op {
  using S = float2;
  static constexpr int arity = 2;
  __device__ static S identity() { return {1.f, 0.f}; }
  __device__ static S combine(const S& p, const S& q) { return {p.x * q.x, fmaf(q.x, p.y, q.y)}; }
  __device__ static S lift(const float (&v)[2]) { return {v[0], v[1]}; }
  __device__ static float out(const S& s) { return s.y; }
};

/// The warp's 32 values folded in lane order by a fixed tree (all lanes return it).
template <class Op>
__device__ __forceinline__ typename Op::S warp_total(typename Op::S v) {
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const typename Op::S right = shuffle_from(v, min(lane + d, 31));
    if ((lane & (2 * d - 1)) == 0) v = Op::combine(v, right);
  }
  return shuffle_from(v, 0);
}

__device__ __forceinline__ void compute_barrier(int threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
}

template <class T>
using block_atomic = cuda::atomic_ref<T, cuda::thread_scope_block>;

/// Shared memory besides the stages.
template <class S, int C, int STAGES>
struct control {
  static constexpr int ring = STAGES + 2;
  S warp_totals[STAGES][C];
  S prefix[2];
  unsigned claimed[ring];
  int claims_out;  // claimed[j] readable for j < claims_out
  int prefix_out;  // prefix of the block's tile j in prefix[j % 2] for j < prefix_out
  int prefix_used; // the compute warps are done with prefixes j < prefix_used
};

extern __shared__ __align__(16) unsigned char probe_stages[];

template <class Op, int C, int ITEMS, int STAGES, int AHEAD, int WINDOWS>
__global__ void __launch_bounds__((C + 1) * 32, 1)
    lookahead_kernel(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out,
                     index_t n, unsigned tiles, flagged<typename Op::S>* aggregates, unsigned* next_tile) {
  static_assert(STAGES >= 2 && AHEAD >= 1 && AHEAD <= STAGES - 1, "stages and reduce-ahead distance");
  static_assert((32 * ITEMS) % 4 == 0, "a warp's chunk is whole 16-byte pieces");
  using S = typename Op::S;
  constexpr int chunk = 32 * ITEMS, tile = C * chunk, pieces = chunk / 4;
  constexpr int stage_floats = C * chunk * Op::arity;
  __shared__ control<S, C, STAGES> ctl;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  constexpr int ring = control<S, C, STAGES>::ring;

  if (threadIdx.x == 0) {
    ctl.claims_out = 0;
    ctl.prefix_out = 0;
    ctl.prefix_used = 0;
  }
  __syncthreads();  // the only block-wide barrier

  if (warp == 0) {  // ---- the look-ahead warp
    S P = Op::identity();
    unsigned cursor = 0;  // P folds the aggregates of tiles [0, cursor); cursor a multiple of 32
    for (int k = 0;; ++k) {
      while (block_atomic<int>(ctl.claims_out).load(cuda::memory_order_acquire) <= k) __nanosleep(20);
      const unsigned t = ctl.claimed[k % ring];
      if (t >= tiles) break;
      // One round trip reads the aggregates of up to 4 windows from the cursor, those below t: whole
      // windows fold into P (the cursor moves past them), the window holding t gives its prefix.
      S prefix = P;
      for (;;) {
        S v[WINDOWS];
        bool out[WINDOWS];
#pragma unroll
        for (int b = 0; b < WINDOWS; ++b) {
          v[b] = Op::identity();
          out[b] = cursor + 32u * b + unsigned(lane) >= t;  // not needed
        }
        for (;;) {
          bool all = true;
#pragma unroll
          for (int b = 0; b < WINDOWS; ++b) {
            if (!out[b]) out[b] = read_published(aggregates + cursor + 32 * b + lane, v[b]);
            all = all && out[b];
          }
          if (__all_sync(full, all)) break;
          __nanosleep(32);
        }
        // The windows' totals are independent trees (computed side by side), then folded in order.
        S total[WINDOWS];
#pragma unroll
        for (int b = 0; b < WINDOWS; ++b) total[b] = warp_total<Op>(v[b]);  // identity-padded past t
        bool done = false;
#pragma unroll
        for (int b = 0; b < WINDOWS; ++b) {
          if (done) continue;
          if (cursor + 32 <= t) {
            P = Op::combine(P, total[b]);
            cursor += 32;
          } else {
            prefix = cursor == t ? P : Op::combine(P, total[b]);
            done = true;
          }
        }
        if (done) break;
      }
      while (block_atomic<int>(ctl.prefix_used).load(cuda::memory_order_acquire) < k - 1) __nanosleep(20);
      if (lane == 0) {
        ctl.prefix[k % 2] = prefix;
        block_atomic<int>(ctl.prefix_out).store(k + 1, cuda::memory_order_release);
      }
      __syncwarp();
    }
    return;
  }

  // ---- the compute warps (w = warp - 1)
  const int w = warp - 1;
  const bool leader = threadIdx.x == 32;
  constexpr int compute_threads = C * 32;
  const auto stage = [&](int j) { return reinterpret_cast<float*>(probe_stages) + (j % STAGES) * stage_floats; };
  const auto load = [&](unsigned t, int j) {  // this warp's chunk of tile t into stage j
    if (t < tiles) {
      float* dst = stage(j) + w * chunk * Op::arity;
      const index_t base = index_t(t) * tile + index_t(w) * chunk;
      for (int p = lane; p < pieces; p += 32) {
        const index_t at = base + 4 * p;
        if (at < n) {
          __pipeline_memcpy_async(dst + 4 * p, in0 + at, 16);
          if constexpr (Op::arity == 2) __pipeline_memcpy_async(dst + chunk + 4 * p, in1 + at, 16);
        }
      }
    }
    __pipeline_commit();
  };
  const auto lift = [&](unsigned t, int j, int i) {  // step i of this thread's ITEMS in tile t, stage j
    const float* src = stage(j) + w * chunk * Op::arity + lane * ITEMS + i;  // odd ITEMS: no bank conflicts
    const index_t at = index_t(t) * tile + index_t(w) * chunk + lane * ITEMS + i;
    float v[2] = {src[0], Op::arity == 2 ? src[chunk] : 0.f};
    return at < n ? Op::lift(v) : Op::identity();
  };
  const auto reduce = [&](unsigned t, int j) {  // publishes tile t's aggregate from stage j
    if (t >= tiles) return;
    S total = lift(t, j, 0);
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) total = Op::combine(total, lift(t, j, i));
    total = warp_total<Op>(total);
    if (lane == 0) ctl.warp_totals[j % STAGES][w] = total;
    compute_barrier(compute_threads);
    if (leader) {
      S aggregate = ctl.warp_totals[j % STAGES][0];
#pragma unroll
      for (int v = 1; v < C; ++v) aggregate = Op::combine(aggregate, ctl.warp_totals[j % STAGES][v]);
      publish(aggregates + t, aggregate);
    }
  };

  if (leader) {
    for (int j = 0; j < STAGES; ++j) ctl.claimed[j] = atomicAdd(next_tile, 1u);
    block_atomic<int>(ctl.claims_out).store(STAGES, cuda::memory_order_release);
  }
  compute_barrier(compute_threads);
  for (int j = 0; j < STAGES - 1; ++j) load(ctl.claimed[j], j);
  __pipeline_wait_prior(STAGES - 1 - AHEAD);
  __syncwarp();
  for (int j = 0; j < AHEAD; ++j) reduce(ctl.claimed[j], j);
  for (int k = 0;; ++k) {
    const unsigned t = ctl.claimed[k % ring];
    if (t >= tiles) break;
    const unsigned next = leader ? atomicAdd(next_tile, 1u) : 0u;  // the block's tile k + STAGES
    __syncwarp();
    load(ctl.claimed[(k + STAGES - 1) % ring], k + STAGES - 1);
    __pipeline_wait_prior(STAGES - 1 - AHEAD);  // tiles up to k + AHEAD have landed (this thread's pieces)
    __syncwarp();                               // and the warp's
    reduce(ctl.claimed[(k + AHEAD) % ring], k + AHEAD);
    // Tile k: its prefix from the look-ahead warp, then the scan from the stage.
    while (block_atomic<int>(ctl.prefix_out).load(cuda::memory_order_acquire) <= k) __nanosleep(20);
    S running = ctl.prefix[k % 2];
#pragma unroll 1
    for (int v = 0; v < w; ++v) running = Op::combine(running, ctl.warp_totals[k % STAGES][v]);
    S mine[ITEMS];
    S thread_total = mine[0] = lift(t, k, 0);
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) thread_total = Op::combine(thread_total, mine[i] = lift(t, k, i));
    // The thread's exclusive prefix within the warp (lanes in order).
    S scanned = thread_total;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const S earlier = shuffle_up(scanned, d);
      if (lane >= d) scanned = Op::combine(earlier, scanned);
    }
    const S exclusive = shuffle_up(scanned, 1);
    if (lane > 0) running = Op::combine(running, exclusive);
    float* row = stage(k) + w * chunk * Op::arity + lane * ITEMS;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      running = Op::combine(running, mine[i]);
      row[i] = Op::out(running);
    }
    __syncwarp();
    const float* src = stage(k) + w * chunk * Op::arity;
    const index_t base = index_t(t) * tile + index_t(w) * chunk;
    for (int p = lane; p < pieces; p += 32)
      if (base + 4 * p < n)
        *reinterpret_cast<float4*>(out + base + 4 * p) = *reinterpret_cast<const float4*>(src + 4 * p);
    if (leader) {
      ctl.claimed[(k + STAGES) % ring] = next;
      block_atomic<int>(ctl.claims_out).store(k + STAGES + 1, cuda::memory_order_release);
    }
    compute_barrier(compute_threads);  // stage k and its warp totals are free; claimed[k + STAGES] is out
    if (leader) block_atomic<int>(ctl.prefix_used).store(k + 1, cuda::memory_order_release);
  }
}

/// Runs the probe's scan of n steps (in1 used by the recurrence) into out.
template <class Op, int C, int ITEMS, int STAGES, int AHEAD, int WINDOWS>
struct runner {
  static constexpr int warps = C, items = ITEMS, stages = STAGES, ahead = AHEAD, windows = WINDOWS;
  static constexpr int tile = C * 32 * ITEMS;
  static constexpr int shared = STAGES * C * 32 * ITEMS * Op::arity * 4;
  const float *in0, *in1;
  float* out;
  index_t n;
  unsigned tiles;
  void* status = nullptr;  // aggregates, then the counter
  int blocks = 0;

  runner(const float* a, const float* b, float* y, index_t n_) : in0(a), in1(b), out(y), n(n_) {
    tiles = unsigned((n + tile - 1) / tile);
    const auto kernel = lookahead_kernel<Op, C, ITEMS, STAGES, AHEAD, WINDOWS>;
    bench::check_or_exit(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared),
                         "cudaFuncSetAttribute");
    int per_sm = 0, sms = 0;
    bench::check_or_exit(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (C + 1) * 32, shared),
                         "occupancy");
    bench::check_or_exit(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
    blocks = int(std::min<index_t>(tiles, index_t(std::max(per_sm, 1)) * sms));
    bench::check_or_exit(cudaMalloc(&status, bytes()), "status");
  }
  ~runner() { cudaFree(status); }
  std::size_t bytes() const { return std::size_t(tiles) * sizeof(flagged<typename Op::S>) + 16; }
  void operator()() const {
    cudaMemsetAsync(status, 0, bytes());
    auto* aggregates = static_cast<flagged<typename Op::S>*>(status);
    auto* counter = reinterpret_cast<unsigned*>(static_cast<unsigned char*>(status) + bytes() - 16);
    lookahead_kernel<Op, C, ITEMS, STAGES, AHEAD, WINDOWS>
        <<<blocks, (C + 1) * 32, shared>>>(in0, in1, out, n, tiles, aggregates, counter);
  }
};

template <class Op, int C, int ITEMS, int STAGES, int AHEAD, int WINDOWS = 8>
struct runner_tag {
  using type = runner<Op, C, ITEMS, STAGES, AHEAD, WINDOWS>;
};

__global__ void fill(float* p, index_t n, float lo, float hi, unsigned seed) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed * 0x9e3779b9u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = lo + (hi - lo) * float(h & 0xffffff) / float(0x1000000);
  }
}

}  // namespace probe

int main(int argc, char** argv) {
  using namespace probe;
  const int log2n = argc > 1 ? std::atoi(argv[1]) : 28;
  const index_t n = index_t(1) << log2n;
  // As bench/cuda_bench.cu: the default stream-ordered pool keeps its memory (a framework's caching
  // allocator does), rather than mapping parascan's tile status again after every synchronisation.
  // PROBE_POOL=release leaves the pool as CUDA sets it.
  const char* pool_mode = std::getenv("PROBE_POOL");
  if (pool_mode == nullptr || std::strcmp(pool_mode, "release") != 0) {
    cudaMemPool_t pool;
    bench::check_or_exit(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    unsigned long long keep = ~0ull;
    bench::check_or_exit(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "pool");
  }
  float *a, *b, *y, *ref, *copy_dst;
  void* flush;
  for (float** p : {&a, &b, &y, &ref, &copy_dst}) bench::check_or_exit(cudaMalloc(p, n * 8), "cudaMalloc");
  bench::check_or_exit(cudaMalloc(&flush, std::size_t(256) << 20), "cudaMalloc");
  fill<<<1024, 256>>>(a, n, 0.9f, 1.0f, 2);
  fill<<<1024, 256>>>(b, n, -1.f, 1.f, 3);
  const auto time_ms = [&](auto&& f) {
    return bench::median_event_ms(
        f, 15, 2, [&](int i) { cudaMemsetAsync(flush, i, std::size_t(256) << 20); }, bench::check_or_exit);
  };
  const double copy_ms = time_ms([&] { cudaMemcpyAsync(copy_dst, a, n * 8, cudaMemcpyDeviceToDevice); });
  const double gbs = 2.0 * n * 8 / copy_ms / 1e6;
  std::printf("n = 2^%d, copy floor %.1f GB/s\n", log2n, gbs);
  std::vector<float> h_ref(static_cast<std::size_t>(n)), h_y(static_cast<std::size_t>(n)),
      h_first(static_cast<std::size_t>(n));
  const auto report = [&](const char* what, double bytes_per_step, double ms, bool checked, double worst,
                          bool identical) {
    std::printf("%-44s %8.4f ms %6.1f%% of copy  worst rel. difference %.1e%s%s\n", what, ms,
                100.0 * bytes_per_step * double(n) / ms / 1e6 / gbs, worst, checked ? "" : " (not checked)",
                identical ? "" : "  NOT BIT-IDENTICAL RUN TO RUN");
  };
  // Difference against the reference, relative to 1 + |reference| (the sums grow to ~1e4 in 2^28 steps
  // of a zero-mean walk; tile sizes round differently).
  const auto worst_difference = [&]() {
    cudaMemcpy(h_ref.data(), ref, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_y.data(), y, n * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (index_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(h_y[i]) - double(h_ref[i])) / (1.0 + std::fabs(double(h_ref[i])));
      worst = d == d ? std::max(worst, d) : INFINITY;
    }
    return worst;
  };
  // PROBE_ONLY=text: only the variants whose name holds it (one kernel to profile).
  const char* only = std::getenv("PROBE_ONLY");
  const auto try_probe = [&](const char* what, double bytes_per_step, auto&& run) {
    if (only != nullptr && std::strstr(what, only) == nullptr) return;
    cudaMemset(y, 0xff, n * 4);
    run();
    bench::check_or_exit(cudaDeviceSynchronize(), what);
    cudaMemcpy(h_first.data(), y, n * 4, cudaMemcpyDeviceToHost);
    const double worst = worst_difference();
    const double ms = time_ms(run);
    bench::check_or_exit(cudaDeviceSynchronize(), what);
    cudaMemcpy(h_y.data(), y, n * 4, cudaMemcpyDeviceToHost);
    const bool identical = std::memcmp(h_first.data(), h_y.data(), std::size_t(n) * 4) == 0;
    report(what, bytes_per_step, ms, true, worst, identical);
  };

  // One look-ahead variant: its scan of in0 (and in1) into y, checked and timed.
  const auto look_ahead = [&](const char* what, double bytes_per_step, const float* in0, const float* in1, auto tag) {
    using R = typename decltype(tag)::type;
    R run(in0, in1, y, n);
    char name[96];
    std::snprintf(name, sizeof name, "%s look-ahead %d warps x %d, %d stages, %d ahead, %d windows", what, R::warps,
                  R::items, R::stages, R::ahead, R::windows);
    try_probe(name, bytes_per_step, run);
  };
  // fp32 linear recurrence: parascan's look-back as the reference and the baseline.
  const auto view = [&](float* p) { return parascan::single(p, long(n)); };
  const auto parascan_recurrence = [&](float* to) {
    parascan::prefix_scan(parascan::cuda{}, parascan::ops::linear_recurrence<float>{},
                          parascan::inputs(view(a), view(b)), view(to));
  };
  parascan_recurrence(ref);
  bench::check_or_exit(cudaDeviceSynchronize(), "reference");
  try_probe("recurrence parascan prefix_scan", 12, [&] { parascan_recurrence(y); });
  look_ahead("recurrence", 12, a, b, runner_tag<recurrence_op, 4, 31, 6, 3, 4>{});
  // The engine's look-ahead (lookahead.cuh) at explicit shapes, through prefix_scan.
  const auto engine = [&](const char* what, double bytes_per_step, auto op, auto shape, auto&&... in) {
    using Shape = decltype(shape);
    using Policy = parascan::look_ahead_tiles<typename parascan::default_policy<decltype(op), parascan::arch::sm90>::type,
                                              Shape, 1>;
    char name[96];
    std::snprintf(name, sizeof name, "%s engine look-ahead %d warps x %d, %d stages, %d ahead, %d windows", what,
                  Shape::warps, Shape::items, Shape::stages, Shape::ahead, Shape::windows);
    try_probe(name, bytes_per_step, [&] {
      parascan::prefix_scan<Policy>(parascan::cuda{}, op, parascan::inputs(view(in)...), view(y));
    });
  };
  const parascan::ops::linear_recurrence<float> recurrence;
  // Warps a block: 1 + WARPS spread over the 4 schedulers, whose 16K registers a warp each share, so a
  // block of 8 or 16 warps in all leaves a thread twice the registers of one of 9 or 17 (ptxas: 168 and
  // 96 registers for 9 and 17).
  // Measured one a process (PROBE_ONLY), h200-lookahead-engine-2026-11-29.log run 19: 8 x 20, 5 / 2 (the
  // default) 93.8%, 4 / 2 87.7%, 8 x 16 4 / 2 82.3%, 8 x 12 6 / 3 71.2%.
  engine("recurrence", 12, recurrence, parascan::lookahead_shape<8, 20, 5, 2>{}, a, b);
  engine("recurrence", 12, recurrence, parascan::lookahead_shape<8, 20, 4, 2>{}, a, b);
  engine("recurrence", 12, recurrence, parascan::lookahead_shape<8, 16, 6, 3>{}, a, b);
  engine("recurrence", 12, recurrence, parascan::lookahead_shape<8, 16, 4, 2>{}, a, b);
  engine("recurrence", 12, recurrence, parascan::lookahead_shape<7, 16, 6, 3>{}, a, b);
  // (Windows a round trip, 2 / 4 / 6 / 8 at 8 x 16, 4 / 2: 73.7 / 77.5 / 76.4 / 75.8%, sum 7 x 32 at 2 / 4 / 8:
  // 77.6 / 77.4 / 76.3%; h200-lookahead-engine-2026-11-29.log run 15: the look-ahead warp keeps up.)
  // (1, 16, n / 16): 16 sequences, against the look-back (under a look-ahead policy from 2^30 tiles a
  // multiprocessor: never), which also gives the reference.
  {
    const auto batch = [&](float* p) { return parascan::bdt(p, 1, 16, long(n / 16)); };
    using never_ahead =
        parascan::look_ahead_tiles<parascan::default_policy<parascan::ops::linear_recurrence<float>,
                                                            parascan::arch::sm90>::type,
                                   parascan::lookahead_shape<8, 16, 4, 2>, 1 << 30>;
    parascan::prefix_scan<never_ahead>(parascan::cuda{}, recurrence, parascan::inputs(batch(a), batch(b)), batch(ref));
    bench::check_or_exit(cudaDeviceSynchronize(), "reference");
    try_probe("recurrence (1, 16, n/16) parascan prefix_scan", 12, [&] {
      parascan::prefix_scan(parascan::cuda{}, recurrence, parascan::inputs(batch(a), batch(b)), batch(y));
    });
    try_probe("recurrence (1, 16, n/16) look-back", 12, [&] {
      parascan::prefix_scan<never_ahead>(parascan::cuda{}, recurrence, parascan::inputs(batch(a), batch(b)), batch(y));
    });
  }
  // fp32 sum: CUB's InclusiveSum as the reference and the baseline to beat.
  std::size_t temp_bytes = 0;
  cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, b, ref, n);
  void* temp = nullptr;
  cudaMalloc(&temp, temp_bytes);
  cub::DeviceScan::InclusiveSum(temp, temp_bytes, b, ref, n);
  bench::check_or_exit(cudaDeviceSynchronize(), "reference");
  try_probe("sum CUB InclusiveSum", 8, [&] { cub::DeviceScan::InclusiveSum(temp, temp_bytes, b, y, n); });
  try_probe("sum parascan prefix_scan", 8, [&] {
    parascan::prefix_scan(parascan::cuda{}, parascan::ops::sum<float>{}, view(b), view(y));
  });
  look_ahead("sum", 8, b, nullptr, runner_tag<sum_op, 8, 31, 6, 3, 4>{});
  const parascan::ops::sum<float> sum;
  // Run 19: 8 x 28, 6 / 3 (the default) 90.9%, 7 x 28 88.5%, 7 x 32 88.0-88.8%, 7 x 36 5 / 2 88.0%, 8 x 20
  // 84.4%, 15 x 12 79.8%.
  engine("sum", 8, sum, parascan::lookahead_shape<8, 28, 6, 3>{}, b);
  engine("sum", 8, sum, parascan::lookahead_shape<7, 28, 6, 3>{}, b);
  engine("sum", 8, sum, parascan::lookahead_shape<7, 32, 6, 3>{}, b);
  engine("sum", 8, sum, parascan::lookahead_shape<15, 16, 4, 2>{}, b);
  bench::check_or_exit(cudaGetLastError(), "probe");
  return 0;
}
