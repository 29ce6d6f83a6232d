// Matrix strategy: scans whose state is an N x N matrix combined by a matrix product (an operator with a
// matrix_form, matrix_form.hpp), too large for one thread's registers. A group of threads (a warp; a
// whole block for few long chains, whose products' latency bounds the time) walks a segment in time
// order; each product is spread over its threads ("lanes"): lane l owns row l % N of the state and, when
// several lanes share a row, a run of its columns; from N = 24 (later factors on the right) a warp's
// lanes own a grid of entries instead, and operators that opt in run fp32 products on tensor cores
// (product_layout).
// The state lives in shared memory (its rows padded apart, so that lanes reading their own rows hit
// different banks) and in the owning lanes' registers; the next factors are staged into shared memory
// by cp.async, STAGES - 1 steps ahead.
//
// Few long sequences are cut into segments of a few tiles (8 steps a tile): each segment folds its
// product, the segment totals of each sequence are scanned by this same strategy (exclusive, from the
// initial state; a reduction only needs their total), and each segment is scanned again from its carry.
// A single chain of 10^5 factors thus becomes a few levels of short loops, each level with enough groups
// to fill the device.
#pragma once

#include <cuda_pipeline.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "../matrix_form.hpp"
#include "device.cuh"  // segment_args, the passes, per-device caches (it includes this file at its end)

namespace parascan::engine {

/// The largest divisor l of n with l * n <= width: threads sharing one row of an n x n product.
constexpr int lanes_per_row(int n, int width) {
  int lanes = 1;
  for (int d = 1; d * n <= width; ++d)
    if (n % d == 0) lanes = d;
  return lanes;
}
/// The widest of v, v/2, ..., 1 that divides n (scalars a vector load takes).
constexpr int widest_vector(int n, int v) {
  while (v > 1 && n % v != 0) v /= 2;
  return v;
}

/// Whether this compilation may issue TF32 mma.sync (sm_80 on); device code only.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr bool tf32_mma_available = true;
#else
constexpr bool tf32_mma_available = false;
#endif

/// How a group of WIDTH threads (a warp, or a whole block) shares one product of its form: which thread
/// ("lane") owns which entries, and the group's shared-memory layout.
///
/// A warp on products of N >= 24 (a multiple of 8) whose later factors multiply on the right runs them as
/// a grid: lanes as 8 x 4, lane (g, h) owning rows g, g + 8, ... and columns h, h + 4, ... (N/8 x N/4
/// entries). Each operand it loads then serves several of its products (N/8 rows of the state against
/// N/4 columns of the factor: 12 loads of 16 bytes a 128 multiply-adds at N = 32, against 33 for a row a
/// lane), and the factor's columns are padded apart in shared memory as the state's rows are, so that the
/// 8 rows and the 4 columns a load touches fall in different banks. 32 x 32 prefix over (64, 1024) chains,
/// H200, same call, two rounds: 0.437 / 0.436 -> 0.334 / 0.334 ms. At N = 16 (two lanes a row before)
/// it read 0.6% slower (the padded stages: 7 blocks a multiprocessor instead of 8), so N = 16 keeps rows.
/// Later factors on the left (F P) keep a row a lane: a grid of runs there (lane (g, h) owning rows 4g ..
/// 4g + 3 and columns 8h .. 8h + 7, one 16-byte load of F's column and two of P's row a k) read 0.61-0.64
/// ms against 0.44-0.47 at 32 x 32 (H200 probe; 24 x 24 0.45-0.49 against 0.49-0.51), not kept.
///
/// Forms that opt in (matrix_form::tensor_cores, ops::matrix_product_3xtf32) run fp32 grids of N = 16 or
/// 32 on tensor cores instead (sm_80 on): m16n8k8 TF32 mma with each operand split in two TF32 parts
/// (3xTF32), each 8-term block of k summed by the tensor cores alone and added to the entry by an
/// FMA-unit add: their own fp32 accumulation rounds toward zero, and across all of k it made the error
/// 10x the FMAs' (Ootomo & Yokota, 2022, keep the accumulation outside for the same reason). 32 x 32, same
/// probe, H200: FMA grid 0.338-0.343 ms, largest relative error of 64 steps 1.1e-6; 3xTF32 accumulated by
/// the tensor cores 0.304-0.312 ms, 1.2e-5; accumulated outside 0.3056 / 0.3067 ms, 2.8e-6. Within each
/// 8-term block the rounding still goes toward zero, so over a chain the errors add up rather than cancel
/// (1024 steps: 3.1e-5 against the FMAs' 2.6e-6): not the default.
template <class Form, int STAGES, int WIDTH>
struct product_layout {
  using S = typename Form::scalar;
  static constexpr int width = WIDTH;
  static constexpr int N = Form::size;
  static constexpr bool opted = uses_tensor_cores<Form>::value && std::is_same<S, float>::value;
  static constexpr bool grid = WIDTH == warp_threads && Form::later_on_right && N % 8 == 0 && N >= (opted ? 16 : 24);
  static constexpr int L = lanes_per_row(N, WIDTH);  // lanes a row (rows of lanes)
  static constexpr int R = grid ? N / 8 : 1;         // rows a lane owns
  static constexpr int C = grid ? N / 4 : N / L;     // columns a lane owns
  static constexpr int lanes = grid ? WIDTH : N * L;  // lanes with work; the others only pass the barriers
  static constexpr int V = 16 / int(sizeof(S));      // scalars in 16 bytes
  static constexpr int VK = widest_vector(N, V);     // later on the right: a factor's column, VK rows a load
  static constexpr int VJ = widest_vector(C, V);     // later on the left: a row of the state, VJ columns a load
  static constexpr int matrix = N * N;
  static constexpr int row_stride = (N + V - 1) / V * V + V;  // the state's rows in shared memory, padded
  static constexpr int column_stride = grid ? row_stride : N;  // a staged factor's columns
  static constexpr int stage_scalars = grid ? N * column_stride : (matrix + V - 1) / V * V;
  static constexpr int group_scalars = N * row_stride + STAGES * stage_scalars;

  /// Whether the grid's products run on tensor cores (below).
  static constexpr bool tensor = grid && opted && N % 16 == 0 && tf32_mma_available;
  static constexpr int entries = R * C;  // a lane's entries of the state
  /// The state's row and column of this lane's entry e.
  __device__ static int row(int lane, int e) {
    if constexpr (tensor) return e / 4 / (N / 8) * 16 + lane / 4 + 8 * (e % 4 / 2);
    if constexpr (grid) return lane % 8 + 8 * (e / C);
    return lane % N;
  }
  __device__ static int column(int lane, int e) {
    if constexpr (tensor) return e / 4 % (N / 8) * 8 + lane % 4 * 2 + e % 2;
    if constexpr (grid) return lane / 8 + 4 * (e % C);
    return (lane / N) * C + e;
  }
  /// Where a factor's scalar e (column-major) is staged.
  __device__ static int staged(int e) { return grid ? e / N * column_stride + e % N : e; }
};

template <class S, int W>
struct alignas(sizeof(S) * W) lane_vector {
  S v[W];
};
template <int W, class S>
__device__ __forceinline__ lane_vector<S, W> load_vector(const S* p) {
  return *reinterpret_cast<const lane_vector<S, W>*>(p);
}

/// Copies the N x N factor at `src` into shared memory at `dst` without waiting (the caller commits):
/// 16-byte pieces when the factors are 16-byte aligned, else scalar by scalar.
template <class X>
__device__ __forceinline__ void stage_factor(const typename X::S* src, typename X::S* dst, bool pieces, int lane) {
  if (X::matrix % X::V == 0 && pieces) {
    constexpr int count = X::matrix / X::V;
#pragma unroll
    for (int r = 0; r < (count + X::width - 1) / X::width; ++r) {
      const int e = (r * X::width + lane) * X::V;
      if (e < X::matrix) __pipeline_memcpy_async(dst + X::staged(e), src + e, 16);  // within one column
    }
  } else {
#pragma unroll
    for (int r = 0; r < (X::matrix + X::width - 1) / X::width; ++r) {
      const int e = r * X::width + lane;
      if (e < X::matrix) __pipeline_memcpy_async(dst + X::staged(e), src + e, sizeof(typename X::S));
    }
  }
}

/// D += A B on tensor cores: one m16n8k8 TF32 product (A row-major 16 x 8, B column-major 8 x 8, D 16 x 8
/// in fp32; PTX ISA's fragment layouts).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
/// x as a TF32 high part and the TF32 rounding of the rest (x = hi + lo to about 2^-22 relative).
__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(lo) : "f"(x - __uint_as_float(hi)));
#endif
}

/// This lane's part of the product of the state P (shared memory, rows row_stride apart) and the factor F
/// (shared memory, column-major, columns column_stride apart): P F when later factors multiply on the
/// right, else F P; acc[e] is entry (row(lane, e), column(lane, e)). The scalar paths sum over k in
/// increasing order.
template <class X, bool LATER_ON_RIGHT>
__device__ __forceinline__ void product_part(const typename X::S* P, const typename X::S* F, int lane,
                                             typename X::S (&acc)[X::entries]) {
  using S = typename X::S;
#pragma unroll
  for (int e = 0; e < X::entries; ++e) acc[e] = S(0);
  if constexpr (X::tensor) {
    // 3xTF32: P F = Ph Fh + Ph Fl + Pl Fh, the small terms first, with P = Ph + Pl and F = Fh + Fl split
    // into TF32 parts (Pl Fl, about 2^-22 of the product, is left out). Entry tiles of 16 x 8, lane (g, t) =
    // (lane / 4, lane % 4) holding rows g, g + 8 and columns 2t, 2t + 1 of each; operands read as the
    // fragments want them (A: rows g, g + 8 at columns t, t + 4; B: column g at rows t, t + 4), which the
    // padded rows and columns spread over all 32 banks.
    constexpr int MT = X::N / 16, NT = X::N / 8;
    const int g = lane / 4, t = lane % 4;
#pragma unroll 1
    for (int kb = 0; kb < X::N; kb += 8) {
      unsigned a_hi[MT][4], a_lo[MT][4];
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int q = 0; q < 4; ++q)
          split_tf32(P[(m * 16 + g + 8 * (q % 2)) * X::row_stride + kb + t + 4 * (q / 2)], a_hi[m][q], a_lo[m][q]);
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        unsigned b_hi[2], b_lo[2];
#pragma unroll
        for (int q = 0; q < 2; ++q)
          split_tf32(F[(n * 8 + g) * X::column_stride + kb + t + 4 * q], b_hi[q], b_lo[q]);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          float d[4] = {0.f, 0.f, 0.f, 0.f};
          mma_tf32(d, a_lo[m], b_hi);
          mma_tf32(d, a_hi[m], b_lo);
          mma_tf32(d, a_hi[m], b_hi);
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[(m * NT + n) * 4 + q] += d[q];
        }
      }
    }
  } else if constexpr (X::grid) {  // (P F)(i, j) = sum_k P(i, k) F(k, j): VK of k a load, each used R x C times
#pragma unroll 1
    for (int kb = 0; kb < X::N; kb += X::VK) {
      lane_vector<S, X::VK> p[X::R];
#pragma unroll
      for (int r = 0; r < X::R; ++r) p[r] = load_vector<X::VK>(P + X::row(lane, r * X::C) * X::row_stride + kb);
#pragma unroll
      for (int c = 0; c < X::C; ++c) {
        const auto f = load_vector<X::VK>(F + X::column(lane, c) * X::column_stride + kb);
#pragma unroll
        for (int r = 0; r < X::R; ++r)
#pragma unroll
          for (int q = 0; q < X::VK; ++q) acc[r * X::C + c] = fma(p[r].v[q], f.v[q], acc[r * X::C + c]);
      }
    }
  } else if constexpr (LATER_ON_RIGHT) {  // (P F)(i, j): column j of F, VK rows a load
    const int i = X::row(lane, 0), j0 = X::column(lane, 0);
#pragma unroll 2
    for (int kb = 0; kb < X::N; kb += X::VK) {
      const auto p = load_vector<X::VK>(P + i * X::row_stride + kb);
#pragma unroll
      for (int c = 0; c < X::C; ++c) {
        const auto f = load_vector<X::VK>(F + (j0 + c) * X::N + kb);
#pragma unroll
        for (int q = 0; q < X::VK; ++q) acc[c] = fma(p.v[q], f.v[q], acc[c]);
      }
    }
  } else {  // (F P)(i, j) = sum_k F(i, k) P(k, j): row k of P, VJ columns a load
    const int i = X::row(lane, 0), j0 = X::column(lane, 0);
#pragma unroll 4
    for (int k = 0; k < X::N; ++k) {
      const S f = F[i + k * X::N];
#pragma unroll
      for (int cb = 0; cb < X::C; cb += X::VJ) {
        const auto p = load_vector<X::VJ>(P + k * X::row_stride + j0 + cb);
#pragma unroll
        for (int q = 0; q < X::VJ; ++q) acc[cb + q] = fma(f, p.v[q], acc[cb + q]);
      }
    }
  }
}

extern __shared__ __align__(16) unsigned char parascan_product_shared[];

/// The barrier of a group of WIDTH threads: a warp's, or the block's.
template <int WIDTH>
__device__ __forceinline__ void group_sync() {
  if constexpr (WIDTH == warp_threads)
    __syncwarp();
  else
    __syncthreads();
}

/// One pass (scan, reduce, fold or rescan, as segment_kernel's) of a group of WIDTH threads per segment
/// over matrix states (THREADS / WIDTH groups a block).
template <class Form, int THREADS, int WIDTH, int STAGES, int MIN_BLOCKS, pass PASS, class Op, class Pack, class Outs>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) product_kernel(const segment_args<Op, Pack, Outs> a) {
  static_assert(WIDTH == warp_threads || WIDTH == THREADS, "a product group is a warp or the whole block");
  using X = product_layout<Form, STAGES, WIDTH>;
  using S = typename X::S;
  using M = state_t<Op>;
  constexpr bool write = PASS == pass::scan || PASS == pass::rescan;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent (product_pass::launch): the next pass may start its blocks now,
  // and this one waits here until the pass before it has finished and its writes are visible.
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
#endif
  const int lane = int(threadIdx.x) % WIDTH, group = int(threadIdx.x) / WIDTH;
  const index_t item = index_t(blockIdx.x) * (THREADS / WIDTH) + group;
  if (item >= a.count * a.splits) return;  // a whole group leaves together
  const index_t s = item / a.splits, j = item - s * a.splits;
  const index_t n = a.in.head.length_of(s);
  const index_t p0 = j * a.segment, p1 = a.splits == 1 ? n : max(p0, min(n, p0 + a.segment));
  if (PASS == pass::rescan && p1 <= p0) return;

  S* const state = reinterpret_cast<S*>(parascan_product_shared) + group * X::group_scalars;
  S* const stages = state + X::N * X::row_stride;
  const bool works = lane < X::lanes;
  constexpr int E = X::entries;  // entries a lane owns
  const auto row_of = [&](int e) { return X::row(lane, e); };
  const auto column_of = [&](int e) { return X::column(lane, e); };

  // The running product starts from the segment's carry, the initial state, or the identity.
  const M* start = PASS == pass::rescan ? &a.partials[s * a.splits + j]
                   : PASS == pass::fold ? nullptr
                                        : (a.initial != nullptr ? &a.initial[s] : nullptr);
  S own[E];  // this lane's entries of the running product
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int i = row_of(e), k = column_of(e);
    own[e] = !works ? S(0) : start != nullptr ? reinterpret_cast<const S*>(start)[i + k * X::N] : S(i == k);
    if (works) state[i * X::row_stride + k] = own[e];
  }

  const auto in = bind(a.in, s).head;
  const auto factor = [&](index_t p) { return reinterpret_cast<const S*>(&in[time_index(p, n, a.reverse)]); };
  const bool pieces = reinterpret_cast<std::uintptr_t>(in.base) % 16 == 0 && sizeof(M) % 16 == 0;
  const auto stage = [&](int k) { return stages + k * X::stage_scalars; };
#pragma unroll
  for (int k = 0; k < STAGES - 1; ++k) {  // prologue: the first STAGES - 1 factors in flight
    if (p0 + k < p1) stage_factor<X>(factor(p0 + k), stage(k), pieces, lane);
    __pipeline_commit();
  }
  decltype(bind_outputs(a.out, 0)) out{};
  if constexpr (write) out = bind_outputs(a.out, s);
  const auto put = [&](S* where) {
#pragma unroll
    for (int e = 0; e < E; ++e) where[row_of(e) + column_of(e) * X::N] = own[e];
  };

  int current = 0;
  for (index_t p = p0; p < p1; ++p) {
    // The stage refilled now was read in the previous step, which every lane has left (barrier below).
    if (p + STAGES - 1 < p1)
      stage_factor<X>(factor(p + STAGES - 1), stage(current == 0 ? STAGES - 1 : current - 1), pieces, lane);
    __pipeline_commit();
    __pipeline_wait_prior(STAGES - 1);  // this lane's pieces of the current factor have landed
    group_sync<WIDTH>();                // and so have the other lanes' (and the state's last update)
    S* written = nullptr;
    if constexpr (write) written = reinterpret_cast<S*>(&out.head[time_index(p, n, a.reverse)]);
    if (write && a.exclusive && works) put(written);
    // The product accumulates into `own` itself: it reads the state's shared copy.
    if (works) product_part<X, Form::later_on_right>(state, stage(current), lane, own);
    group_sync<WIDTH>();  // every lane has read the state before any overwrites it
    if (works) {
#pragma unroll
      for (int e = 0; e < E; ++e) state[row_of(e) * X::row_stride + column_of(e)] = own[e];
      if (write && !a.exclusive) put(written);
    }
    current = current == STAGES - 1 ? 0 : current + 1;
  }

  if (!works) return;
  if (PASS == pass::fold) put(reinterpret_cast<S*>(&a.partials[s * a.splits + j]));
  if (PASS == pass::scan || PASS == pass::reduce) {
    if (a.final != nullptr) put(reinterpret_cast<S*>(&a.final[s]));
    if (a.final_states != nullptr) put(reinterpret_cast<S*>(&a.final_states[s]));
  }
}

/// The kernel of one pass for groups of WIDTH threads, with its dynamic shared memory allowed (once per
/// device).
template <class Policy, int WIDTH, pass PASS, class Op, class Pack, class Outs>
struct product_pass {
  using form = matrix_form<Op>;
  static constexpr int groups_per_block = Policy::threads / WIDTH;
  static constexpr int bytes = groups_per_block * product_layout<form, Policy::stages, WIDTH>::group_scalars *
                               int(sizeof(typename form::scalar));
  static constexpr auto kernel =
      product_kernel<form, Policy::threads, WIDTH, Policy::stages, Policy::min_blocks, PASS, Op, Pack, Outs>;

  static void allow_shared() {
    static std::atomic<int> cache[64] = {};
    allow_dynamic_shared(cache, kernel, bytes);
  }
  /// Groups the device holds at once (the fold pass stands for all: same registers and shared memory).
  static index_t resident_groups() {
    allow_shared();
    static std::atomic<int> cache[64] = {};
    const int blocks = cached_per_device(cache, [](int) {
      int b = 0;
      detail::cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, Policy::threads, bytes),
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      return std::max(b, 1);
    });
    return index_t(blocks) * multiprocessors() * groups_per_block;
  }
  static void launch(const segment_args<Op, Pack, Outs>& a, cudaStream_t stream) {
    allow_shared();
    const index_t blocks = (a.count * a.splits + groups_per_block - 1) / groups_per_block;
    detail::require(blocks <= std::numeric_limits<int>::max(), "inputs", "fewer than 2^31 blocks of work");
    // Programmatic stream serialization: a level's pass launches while the pass before it runs (a chain's
    // levels are a few small grids each, whose launch latency would otherwise add up).
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned(blocks));
    config.blockDim = dim3(Policy::threads);
    config.dynamicSmemBytes = std::size_t(bytes);
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = launches_programmatically() ? 1 : 0;
    detail::cuda_check(cudaLaunchKernelEx(&config, kernel, a), "parascan product_kernel");
  }
};

/// Runs a scan (WRITE) or a reduction (results in a.final / a.final_states) of matrix states with groups
/// of WIDTH threads: whole sequences in one pass when they fill the device, else fold, a scan (or
/// reduction) of the segment totals by run_products, and a rescan from the carries.
template <class Policy, int WIDTH, bool WRITE, class Op, class Pack, class Outs>
void run_product_groups(segment_args<Op, Pack, Outs> a, const batch_shape& shape, temp_allocator& alloc,
                        cudaStream_t stream) {
  using M = state_t<Op>;
  using fold = product_pass<Policy, WIDTH, pass::fold, Op, Pack, Outs>;
  constexpr group_kind kind = WIDTH == warp_threads ? group_kind::warp_product : group_kind::block_product;
  constexpr policy_values values = policy_values::of<Policy, Op>();
  // plan_scan counts resident groups as multiprocessors x blocks x groups a block: given here as one
  // "multiprocessor" holding all the device's blocks.
  const scan_plan plan =
      plan_scan(values, kind, shape, 1, int(fold::resident_groups() / geometry_of(kind, values).groups_per_block));
  if (log_plans())
    std::fprintf(stderr, "parascan: %s %lld sequences, longest %lld: %s\n", WRITE ? "prefix_scan" : "reduce_scan",
                 static_cast<long long>(shape.count), static_cast<long long>(shape.max_length),
                 plan.describe().c_str());
  constexpr pass whole = WRITE ? pass::scan : pass::reduce;
  if (plan.splits == 1) return product_pass<Policy, WIDTH, whole, Op, Pack, Outs>::launch(a, stream);

  // Every sequence gets `splits` segments (a short one's last segments are empty and fold to the identity).
  a.splits = plan.splits;
  a.segment = plan.segment;
  const index_t segments = a.count * a.splits;
  detail::temp_buffer totals(alloc, stream, std::size_t(segments) * sizeof(M));
  a.partials = totals.as<M>();
  fold::launch(a, stream);

  // Each sequence's segment totals, in scan order, as a batch of `splits` steps.
  segment_args<Op, Pack, Outs> level = a;
  level.in = Pack{bdt(static_cast<const M*>(a.partials), a.count, 1, a.splits), {}};
  level.partials = nullptr;
  level.splits = 1;
  level.segment = 0;
  level.reverse = false;
  const batch_shape level_shape{a.count, a.splits, false, -1};
  if constexpr (WRITE) {  // carries: the exclusive scan of the totals from the initial state
    detail::temp_buffer carries(alloc, stream, std::size_t(segments) * sizeof(M));
    level.out = Outs{bdt(carries.as<M>(), a.count, 1, a.splits), {}};
    level.exclusive = true;
    run_products<Policy, true>(level, level_shape, alloc, stream);
    a.partials = carries.as<M>();
    product_pass<Policy, WIDTH, pass::rescan, Op, Pack, Outs>::launch(a, stream);
  } else {
    run_products<Policy, false>(level, level_shape, alloc, stream);
  }
}

/// The matrix strategy's entry: a warp per product, or a block when the policy says so or (warp_product)
/// where a warp a segment would leave the device idle (plan.hpp's runs_product_blocks): a few long
/// chains, or the short chains of segment totals that a split batch scans between its passes, whose
/// products' latency bounds the time (a block's threads share each product four ways more). With more
/// chains a warp each does better, H100: 48 / 45 / 39% of copy against 24 / 38 / 32% for blocks at
/// N = 8 / 16 / 32 over (1024 / 256 / 64, 1024) chains.
template <class Policy, bool WRITE, class Op, class Pack, class Outs>
void run_products(segment_args<Op, Pack, Outs> a, const batch_shape& shape, temp_allocator& alloc,
                  cudaStream_t stream) {
  using form = matrix_form<Op>;
  using M = state_t<Op>;
  static_assert(form::available, "combine_variant::warp_product: the operator needs a matrix_form (matrix_form.hpp)");
  static_assert(sizeof(M) == sizeof(typename form::scalar) * form::size * form::size,
                "matrix_form: the state must be exactly N * N scalars");
  static_assert(std::is_same<Pack, input_pack<M>>::value,
                "combine_variant::warp_product: one input whose elements are the state's type");
  static_assert(!WRITE || std::is_same<Outs, output_pack<M>>::value,
                "combine_variant::warp_product: one output whose elements are the state's type");
  if constexpr (Policy::combine == combine_variant::warp_product) {
    using warps = product_pass<Policy, warp_threads, pass::fold, Op, Pack, Outs>;
    if (!runs_product_blocks(shape, warps::resident_groups(), Policy::threads / warp_threads, product_tile))
      return run_product_groups<Policy, warp_threads, WRITE>(a, shape, alloc, stream);
  }
  if constexpr (Policy::threads != warp_threads || Policy::combine == combine_variant::block_product)
    run_product_groups<Policy, Policy::threads, WRITE>(a, shape, alloc, stream);
}

}  // namespace parascan::engine
