// Runtime-size fp32 chains of 128 x 128 and 256 x 256 matrices with TF32 arithmetic, as groups of
// consecutive factors multiplied on chip: the first levels of cublas_chain.cuh's tree, fused.
//
// Why: cuBLAS's tree writes every partial product to memory and reads it back a level later. At N = 256 its
// first three levels (500, 250, 125 GEMMs) move 670 MB and are bound by those bytes (85% of copy on an
// H200). Here a block keeps a panel of 128 rows of its group's running product in shared memory and
// streams the group's factors through a cp.async ring, one factor after the other: each factor is read
// once from memory (the group's other panel reads it from the L2), and only the group's product (or, for
// a prefix, each step's output) is written.
//
// A call (cublas_chain.cuh, run_panel_chain): pass 1 multiplies each group (balanced groups of at least 4
// factors, enough of them to fill the device once) into dense workspace; the group products then go
// through the tree (the product) or a scan of their own (a prefix's carries: the exclusive prefix of the
// groups, group_scan.cuh); a prefix then runs pass 2, each group from its carry, writing
// every step.
//
// Arithmetic: in sm_90a builds wgmma (panel_wgmma: the transposed product, the panel as the shared-memory
// operand, each warpgroup loading and multiplying its half of the columns between factors); elsewhere
// m16n8k8 TF32 mma.sync (panel_mma_sync: warps as 2 x 4 over the 128 x N panel, 64 x N/4 each). Operands
// rounded to TF32 (to nearest: the panel as it is stored, the factors' fragments as they are loaded),
// products accumulated in fp32. A right_to_left chain runs as left_to_right over the transposes
// ((X_t ... X_0)^T = X_0^T ... X_t^T), which only swaps strides.
//
// Measured (H200, the product of 1000 256 x 256 factors, bench/chain_probe.cu): 0.216-0.218 ms on wgmma
// (4.05x the exact product; the tree 0.276, mma.sync 0.252), of which the tree over 64 group products
// takes about 50 us. Pass 1 is still issue-bound (with no loads the call reads 0.196 ms, pass 1 about 146
// us against 70 us at the TF32 peak): a warpgroup waits for its MMAs at every slab before loading the
// next fragments.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "../matrix_sequences.hpp"
#include "chain_tree.cuh"
#include "check.cuh"
#include "device.cuh"
#include "group_scan.cuh"
#include "matrix.cuh"
#include "wgmma.cuh"

namespace parascan {
namespace detail {

/// Entry (i, j) of a matrix at base[i * rows + j * cols] (strides in scalars).
struct matrix_strides {
  index_t rows = 0, cols = 0;
};

/// The strides of a matrix stored as `storage` with leading dimension `ld`, read as itself or (transpose)
/// as its transpose.
PARASCAN_HD inline matrix_strides strides_of(matrix_storage storage, index_t ld, bool transpose) {
  const bool rows_apart = (storage == matrix_storage::row_major) != transpose;
  return rows_apart ? matrix_strides{ld, 1} : matrix_strides{1, ld};
}

/// The shape of a block: a panel of `rows` rows of the running product, N/rows panels a matrix.
template <int N>
struct panel_shape {
  static_assert(N == 128 || N == 256, "panel chains: N = 128 or 256");
  static constexpr int rows = 128, panels = N / rows, threads = 256;
  // Factor rows (the product's k) a stage holds, and stages: 32 x 3 (128 mma a warp a barrier) read 0.255 ms
  // for the product of 1000 256 x 256 factors where 16 x 6 and 16 x 5 read 0.279-0.282 (H200).
  static constexpr int slab = 32, stages = 3;
  static constexpr int slabs = N / slab;  // a factor
  // Unpadded rows (225 KiB at N = 256 with the alignment slack: padding would not leave room for 3
  // stages), their 16-byte pieces permuted (XOR) so that each fragment load's 32 lanes fall in 32 banks.
  static constexpr int stage_floats = slab * N;
  // (+ 1 KiB: the panel placed at a multiple of 1024 bytes)
  static constexpr std::size_t shared_bytes = std::size_t(rows * N + stages * stage_floats) * sizeof(float) + 1024;

  /// The panel, entry (r, k): each row's 16-byte pieces XOR r % 8 (ldmatrix reads 8 rows at one piece
  /// from 32 banks); for wgmma in chunks of 32 columns (128 bytes a row, all rows of a chunk together), each
  /// chunk a K-major operand with the 128-byte swizzle (wgmma.cuh).
  static __device__ __forceinline__ int panel_at(int r, int k) {
#if defined(PARASCAN_WGMMA)
    return (k >> 5) * (rows * 32) + r * 32 + ((((k >> 2) & 7) ^ (r & 7)) << 2) + (k & 3);
#else  // (whole rows: 0.252 against 0.275 ms for mma.sync's product of 1000 256 x 256 factors, H200)
    return r * N + (((k >> 2) ^ (r & 7)) << 2) + (k & 3);
#endif
  }
  /// A stage of factor columns (k contiguous), entry (k, n): column n's pieces XOR n % 8 (ldmatrix, as the panel).
  static __device__ __forceinline__ int column_at(int k, int n) {
    return n * slab + (((k >> 2) ^ (n & 7)) << 2) + (k & 3);
  }
  /// A stage of factor rows (n contiguous), entry (k, n): row k's pieces XOR 2 (k % 4): a b fragment's lanes
  /// (k = t, n = g: pieces c, c + 1 for g < 4, >= 4) land in 8 distinct pieces of 128 bytes.
  static __device__ __forceinline__ int row_at(int k, int n) {
    return k * N + (((n >> 2) ^ ((k & 3) << 1)) << 2) + (n & 3);
  }
};

/// One pass of a panel chain. Group g of chain s covers level-0 items [first(g), first(g + 1)) of the tree
/// (`x0`: the initial matrix, then the factors in time order; `o0`: their outputs).
struct panel_pass {
  chain_tree<float> tree;
  index_t groups = 0;                  // a chain
  index_t launched = 0;                // groups a chain this pass runs: all, or (pass 1 of a prefix) all but the last
  // Strides as read (a right_to_left chain reads everything transposed):
  matrix_strides factor, first_item;  // the factors; level-0 item 0 (the initial matrix, or a factor)
  matrix_strides dense;                // the workspace's dense matrices (group products, carries)
  matrix_strides out;                  // the outputs (pass 2)
  float* products = nullptr;           // pass 1: group g of chain s at (s * launched + g) N^2
  // Pass 2: the carry of group g >= 1 at (s * (groups - 1) + g - 1) N^2 in carries[carry_buffer(g - 1,
  // carries_paired)] (group_scan.cuh).
  const float* carries[2] = {nullptr, nullptr};
  bool carries_paired = false;
  bool write_steps = false;            // pass 2
  // Pass 1: each group multiplied last item to first, everything read transposed ((x_a ... x_b)^T = x_b^T
  // ... x_a^T: the product written with `dense` strides is the group's own).
  bool backwards = false;

  PARASCAN_HD index_t first(index_t g) const { return g * tree.m[0] / groups; }
};

/// x as a TF32 operand rounded to nearest: the tensor cores keep a TF32 operand's top 19 bits
/// (truncation, which shrinks a long product geometrically: (1 - 2^-11)^1000 at N = 256), so adding half of
/// the dropped part rounds it (ties away from zero, as cvt.rna, which sm_90 runs as several instructions);
/// infinities stay, the largest finite values round to them. (A NaN whose payload fills the top mantissa
/// bits wraps to zero; the default quiet NaN stays.)
__device__ __forceinline__ unsigned tf32_operand(float x) { return __float_as_uint(x) + 0x1000u; }
/// x rounded to the nearest TF32 value (as tf32_operand, the dropped bits cleared): an exact TF32 operand
/// whether the tensor cores truncate or round it.
__device__ __forceinline__ unsigned tf32_rounded(float x) { return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u; }

/// An ldmatrix of four 8 x 8 blocks of 16-bit pieces (here 8 x 4 fp32 each) at shared-memory byte
/// address `at` (lane i gives a row of block i / 8): r[b] holds block b's piece of this lane.
__device__ __forceinline__ void ldmatrix_x4(unsigned at, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(at));
}

/// The panel's product on mma.sync (m16n8k8, sm_80 on): warps as 2 x 4 over the 128 x N panel, 64 x N/4
/// each; the panel (A) by ldmatrix, the factor (B) by ldmatrix or scalar loads, rounded as loaded.
template <int N, bool K_CONTIGUOUS>
struct panel_mma_sync {
  using shape = panel_shape<N>;
  static constexpr int warp_rows = 64, warp_cols = N / 4;  // warps as 2 x 4
  static constexpr int m_tiles = warp_rows / 16, n_tiles = warp_cols / 8;
  float acc[m_tiles][n_tiles][4];
  int lane, warp_row, warp_col;

  __device__ panel_mma_sync() {
    const int warp = int(threadIdx.x) / 32;
    lane = int(threadIdx.x) % 32;
    warp_row = (warp / 4) * warp_rows;
    warp_col = (warp % 4) * warp_cols;
  }

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < m_tiles; ++i)
#pragma unroll
      for (int j = 0; j < n_tiles; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[i][j][v] = 0;
  }

  /// acc += panel[:, k_base + slab) stage.
  __device__ __forceinline__ void multiply(const float* panel, const float* stage, int k_base, bool /*first*/) {
    const unsigned panel_base = unsigned(__cvta_generic_to_shared(panel)),
                   stage_base = unsigned(__cvta_generic_to_shared(stage));
    const int lg = lane / 4, lt = lane % 4;
    // ldmatrix: lane i gives row i % 8 of 8 x 4 block i / 8 (rows +8 for blocks 1, 3; columns +4 for 2, 3).
    const int lane_row = warp_row + (lane & 7) + ((lane >> 3) & 1) * 8, lane_col = (lane >> 4) * 4;
#pragma unroll
    for (int kk = 0; kk < shape::slab; kk += 8) {
      unsigned a[m_tiles][4];
#pragma unroll
      for (int i = 0; i < m_tiles; ++i) {
        const unsigned at = panel_base + unsigned(shape::panel_at(lane_row + i * 16, k_base + kk + lane_col)) * 4u;
        ldmatrix_x4(at, a[i][0], a[i][1], a[i][2], a[i][3]);
      }
      // The factor's fragments, rounded here (the panel was rounded when written).
#pragma unroll
      for (int j = 0; j < n_tiles; j += 2) {
        unsigned b[2][2];
        if (K_CONTIGUOUS) {  // ldmatrix: blocks (j, k), (j, k + 4), (j + 1, k), (j + 1, k + 4), 8 n x 4 k each
          const int k = kk + ((lane >> 3) & 1) * 4, n = warp_col + (j + (lane >> 4)) * 8 + (lane & 7);
          const unsigned at = stage_base + unsigned(shape::column_at(k, n)) * 4u;
          ldmatrix_x4(at, b[0][0], b[0][1], b[1][0], b[1][1]);
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int v = 0; v < 2; ++v) b[h][v] = tf32_operand(__uint_as_float(b[h][v]));
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int n = warp_col + (j + h) * 8 + lg, k = kk + lt;
            b[h][0] = tf32_operand(stage[shape::row_at(k, n)]);
            b[h][1] = tf32_operand(stage[shape::row_at(k + 4, n)]);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int i = 0; i < m_tiles; ++i) engine::mma_tf32(acc[i][j + h], a[i], b[h]);
      }
    }
  }

  /// The panel of the product so far, entries (r, c) and (r, c + 1) (c even) for each pair this thread
  /// holds: f(r, c, value, next value).
  static constexpr bool pairs_in_a_column = false;
  template <class F>
  __device__ __forceinline__ void for_each_pair(F&& f) const {
    // (Unlike panel_wgmma's, these places need no hiding: 0.252 against 0.280 ms with it.)
    const int r0 = warp_row, c0 = warp_col, lg = lane / 4, lt = lane % 4;
#pragma unroll
    for (int i = 0; i < m_tiles; ++i)
#pragma unroll
      for (int j = 0; j < n_tiles; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f(r0 + i * 16 + lg + 8 * h, c0 + j * 8 + 2 * lt, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
  }
  /// The accumulators into the panel, as TF32 (pairs of adjacent columns), and cleared.
  __device__ __forceinline__ void to_panel(float* panel) {
    for_each_pair([&](int r, int c, float v0, float v1) {
      *reinterpret_cast<float2*>(panel + shape::panel_at(r, c)) =
          make_float2(__uint_as_float(tf32_rounded(v0)), __uint_as_float(tf32_rounded(v1)));
    });
    clear();
  }
};

#if defined(PARASCAN_WGMMA)
/// The panel's product on wgmma (sm_90a), as its transpose: (P F)^T = F^T P^T, so that the panel P (kept
/// row-major, k along its rows) is wgmma's K-major B operand read from shared memory by descriptor, and the
/// factor, whichever way it is stored, the A operand in registers. Warpgroup w computes columns [w N/2,
/// (w + 1) N/2) of the panel's product, N/128 m64n128k8 tiles a step of 8 k.
template <int N, bool K_CONTIGUOUS>
struct panel_wgmma {
  using shape = panel_shape<N>;
  static constexpr int tiles = N / 128, k_steps = shape::slab / 8;
  float acc[tiles][64];
  unsigned a[k_steps][tiles][4];
  int lane, column0;  // column0: the product's column (D's row) of this thread's tile 0, g = 0

  __device__ panel_wgmma() {
    const int warp = int(threadIdx.x) / 32;
    lane = int(threadIdx.x) % 32;
    column0 = (warp / 4) * (N / 2) + (warp % 4) * 16;
  }

  /// The fragments of A = F^T for one slab, A(m, k) = F(k, m): (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4).
  __device__ __forceinline__ void load_fragments(const float* stage) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int s = 0; s < k_steps; ++s)
#pragma unroll
      for (int i = 0; i < tiles; ++i) {
        unsigned(&f)[4] = a[s][i];
        const int m = column0 + 64 * i, k = 8 * s;
        if (K_CONTIGUOUS) {  // ldmatrix: blocks (m, k), (m, k + 4), (m + 8, k), (m + 8, k + 4), 8 m x 4 k each
          const unsigned at = unsigned(__cvta_generic_to_shared(
              stage + shape::column_at(k + ((lane >> 3) & 1) * 4, m + (lane >> 4) * 8 + (lane & 7))));
          ldmatrix_x4(at, f[0], f[2], f[1], f[3]);
#pragma unroll
          for (int v = 0; v < 4; ++v) f[v] = tf32_rounded(__uint_as_float(f[v]));
        } else {
          f[0] = tf32_rounded(stage[shape::row_at(k + t, m + g)]);
          f[1] = tf32_rounded(stage[shape::row_at(k + t, m + g + 8)]);
          f[2] = tf32_rounded(stage[shape::row_at(k + t + 4, m + g)]);
          f[3] = tf32_rounded(stage[shape::row_at(k + t + 4, m + g + 8)]);
        }
      }
  }

  /// acc += F^T[:, k_base + slab) P^T[k_base + slab, :), or (`first`: a factor's first slab) acc = ....
  __device__ __forceinline__ void multiply(const float* panel, const float* stage, int k_base, bool first) {
    // The panel's 32-column chunk k_base / 32 (panel_at), steps of 8 columns 32 bytes apart in it.
    const unsigned chunk = unsigned(__cvta_generic_to_shared(panel + shape::panel_at(0, k_base)));
    load_fragments(stage);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < k_steps; ++s)
#pragma unroll
      for (int i = 0; i < tiles; ++i)
        wgmma::mma_m64n128k8(acc[i], a[s][i], wgmma::k_major_swizzled(chunk + 32u * unsigned(s)),
                             !(first && s == 0));
    wgmma::commit();
    // Done before the next slab's fragments are loaded into the same registers. (Two slabs' fragments in
    // turn took 192 registers and ptxas then serialized every MMA, C7513; loading a slab's second half under
    // its first half's MMAs read the same as this.)
    wgmma::wait<0>();
  }

  /// The panel of the product so far, entries (r, c) and (r + 1, c) (r even) for each pair this thread
  /// holds: f(r, c, value, next value).
  static constexpr bool pairs_in_a_column = true;
  template <class F>
  __device__ __forceinline__ void for_each_pair(F&& f) const {
    int l = lane, c0 = column0;
    asm volatile("" : "+r"(l), "+r"(c0));  // (see the kernel's to_memory)
    const int g = l / 4, t = l % 4;
#pragma unroll
    for (int i = 0; i < tiles; ++i)
#pragma unroll
      for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f(8 * j + 2 * t, c0 + 64 * i + g + 8 * h, acc[i][4 * j + 2 * h], acc[i][4 * j + 2 * h + 1]);
  }
  /// The panel of the product so far into column-contiguous memory (entry (r, c) at to[r + c * ld], ld even,
  /// `to` 8-byte aligned), each warp's store 128 bytes of each of 2 columns (as the fragments lie, 32 bytes
  /// of each of 8 columns: on an H200 the L2 then counted three times the sectors, and pass 2 of a prefix
  /// took 430 against 262 us for row-contiguous outputs). For each 4 steps j (32 rows), the warp trades
  /// pairs twice, 4 x 4 transposes of its lanes' column bits (g / 2) and the steps: after them lane
  /// (u, c, t) holds rows 8 (4 J + u) + 2t, + 1 of columns 2q + c, q = 0..3.
  __device__ __forceinline__ void store_column_pairs(float* to, int ld) const {
    int l = lane, c0 = column0;
    asm volatile("" : "+r"(l), "+r"(c0), "+r"(ld));  // (see the kernel's to_memory)
    const int u = l >> 3, c = (l >> 2) & 1, t = l & 3;
    const bool b16 = l & 16, b8 = l & 8;
    const auto trade = [](float2 v, int mask) {
      return make_float2(__shfl_xor_sync(0xffffffffu, v.x, mask), __shfl_xor_sync(0xffffffffu, v.y, mask));
    };
#pragma unroll
    for (int i = 0; i < tiles; ++i)
#pragma unroll
      for (int J = 0; J < 4; ++J)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float2 v[4];  // rows 8 (4 J + k) + 2t, + 1 of column g
#pragma unroll
          for (int k = 0; k < 4; ++k) v[k] = make_float2(acc[i][4 * (4 * J + k) + 2 * h], acc[i][4 * (4 * J + k) + 2 * h + 1]);
          // Lane bit 4 (g's bit 2) for the steps' bit 1.
          const float2 r0 = trade(b16 ? v[0] : v[2], 16), r1 = trade(b16 ? v[1] : v[3], 16);
          const float2 w[4] = {b16 ? r0 : v[0], b16 ? r1 : v[1], b16 ? v[2] : r0, b16 ? v[3] : r1};
          // Lane bit 3 (g's bit 1) for the steps' bit 0.
          const float2 s0 = trade(b8 ? w[0] : w[1], 8), s1 = trade(b8 ? w[2] : w[3], 8);
          const float2 x[4] = {b8 ? s0 : w[0], b8 ? w[1] : s0, b8 ? s1 : w[2], b8 ? w[3] : s1};
          float* at = to + (32 * J + 8 * u + 2 * t) + (c0 + 64 * i + 8 * h + c) * ld;
#pragma unroll
          for (int q = 0; q < 4; ++q) *reinterpret_cast<float2*>(at + 2 * q * ld) = x[q];
        }
  }
  __device__ __forceinline__ void clear() {}  // (the next factor's first MMAs do not accumulate)
  /// The accumulators into the panel, as TF32, for the MMAs' descriptor reads.
  __device__ __forceinline__ void to_panel(float* panel) {
    for_each_pair([&](int r, int c, float v0, float v1) {
      panel[shape::panel_at(r, c)] = __uint_as_float(tf32_rounded(v0));
      panel[shape::panel_at(r + 1, c)] = __uint_as_float(tf32_rounded(v1));
    });
    wgmma::shared_writes_to_async_proxy();
  }
};
#endif

/// A block: one panel of one group. K_CONTIGUOUS: the factors, as read (transposed or not), keep each
/// column's entries adjacent (else each row's). COLUMN_STEPS: a pass writing every step to outputs whose
/// columns are contiguous as read (on wgmma their own store, panel_wgmma::store_column_pairs: a kernel of
/// its own, as that code in every kernel slowed the others' loop, 200 -> 214 us for pass 1 at N = 256).
/// BACKWARDS: panel_pass::backwards (a kernel of its own too: the initial matrix's place in the loads cost
/// the row-major prefix 0.435 -> 0.450 ms at N = 256, H200).
template <int N, bool K_CONTIGUOUS, bool COLUMN_STEPS, bool BACKWARDS>
__global__ void __launch_bounds__(256, 1) panel_chain_kernel(panel_pass p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // cp.async, ldmatrix, TF32 mma (else refused at dispatch)
  using shape = panel_shape<N>;
  extern __shared__ float4 shared_words[];
  // The panel at a multiple of 1024 bytes (wgmma's swizzle atoms; the allocation has room).
  const unsigned misaligned = unsigned(__cvta_generic_to_shared(shared_words)) % 1024u;
  float* panel = reinterpret_cast<float*>(shared_words) + (misaligned ? (1024u - misaligned) / 4 : 0);
  float* ring = panel + shape::rows * N;

  const index_t block = blockIdx.x;
  const int part = int(block % shape::panels);
  const index_t g = (block / shape::panels) % p.launched, s = block / (shape::panels * p.launched);
  const index_t row0 = index_t(part) * shape::rows;
  const index_t NN = index_t(N) * N;
  const index_t first = p.first(g), last = p.first(g + 1);

  // The start: a carry (pass 2, g >= 1) and every item of the group, or the group's first item (last, going
  // backwards) and the rest. Step i multiplies item step_first + i (backwards: last - 2 - i).
  const bool from_carry = p.write_steps && g > 0;
  const index_t start_item = BACKWARDS ? last - 1 : first;
  const float* start = from_carry ? p.carries[carry_buffer(g - 1, p.carries_paired)] +
                                        (s * (p.groups - 1) + g - 1) * NN
                                  : p.tree.x0(s, start_item);
  const matrix_strides ss = from_carry ? p.dense : start_item < p.tree.lead ? p.first_item : p.factor;
  const index_t step_first = from_carry ? first : first + 1, steps = last - step_first;
  // Threads along k where the start's rows are contiguous; else 8 rows x 4 columns a warp (32 bytes of each
  // of 4 columns; in the panel 8 pieces XOR-apart: 32 banks).
  for (int e = int(threadIdx.x); e < shape::rows * N; e += shape::threads) {
    const int r = ss.cols == 1 ? e / N : (e & 7) + 8 * ((e >> 5) % (shape::rows / 8)),
              k = ss.cols == 1 ? e % N : ((e >> 3) & 3) + 4 * (e / (4 * shape::rows));
    panel[shape::panel_at(r, k)] = __uint_as_float(tf32_rounded(start[(row0 + r) * ss.rows + k * ss.cols]));
  }

  // Slab q: rows [slab (q % slabs), + slab) of step q / slabs's level-0 item (items count the initial
  // matrix first: a factor, or going backwards the initial matrix, read with the factors' strides, as
  // dispatch ensures), into stage q % stages. The factors of chain s in time order from `factors` (computed
  // once: a view's place costs a division).
  const float* factors = p.tree.in.origins.begin_of(s);
  const index_t time_stride = p.tree.in.origins.time_stride;
  // The loaders of a slab: the block (mma.sync), or each warpgroup its own half of the columns (wgmma: a
  // warpgroup reads only the factor's columns of its half of the product, so the two warpgroups run apart
  // between factors, one's MMAs over the other's waits). This thread's pieces: each `piece_step` scalars
  // after the one before in the factor and `stage_step` in the stage (the XOR permutation the same for all).
#if defined(PARASCAN_WGMMA)
  constexpr int loaders = 128, load_cols = N / 2;
#else
  constexpr int loaders = shape::threads, load_cols = N;
#endif
  constexpr int per_thread = shape::slab * load_cols / 4 / loaders;
  const int tid = int(threadIdx.x), lt = tid % loaders, col_base = (tid / loaders) * load_cols;
  const int piece_k = K_CONTIGUOUS ? (lt % (shape::slab / 4)) * 4 : lt / (load_cols / 4),
            piece_n = col_base + (K_CONTIGUOUS ? lt / (shape::slab / 4) : (lt % (load_cols / 4)) * 4);
  const index_t piece_offset = index_t(piece_n) * p.factor.cols + index_t(piece_k) * p.factor.rows,
                piece_step = K_CONTIGUOUS ? index_t(loaders / (shape::slab / 4)) * p.factor.cols
                                          : index_t(loaders / (load_cols / 4)) * p.factor.rows;
  const int stage_offset = K_CONTIGUOUS ? shape::column_at(piece_k, piece_n) : shape::row_at(piece_k, piece_n);
  constexpr int stage_step = K_CONTIGUOUS ? (loaders / (shape::slab / 4)) * shape::slab
                                          : (loaders / (load_cols / 4)) * N;
  // All loaders of a slab have their pieces in place.
  const auto slab_landed = [&] {
    __pipeline_wait_prior(shape::stages - 2);
#if defined(PARASCAN_WGMMA)
    asm volatile("bar.sync %0, 128;" ::"r"(1 + tid / 128) : "memory");
#else
    __syncthreads();
#endif
  };
  const auto load = [&](index_t q) {
    const int k0 = int(q % shape::slabs) * shape::slab;
    const index_t item = BACKWARDS ? last - 2 - q / shape::slabs : step_first + q / shape::slabs;
    const float* matrix = BACKWARDS && item < p.tree.lead
                              ? p.tree.initial + s * NN
                              : factors + p.tree.time_of(item - p.tree.lead) * time_stride;
    const float* x = matrix + index_t(k0) * p.factor.rows + piece_offset;
    float* stage = ring + int(q % shape::stages) * shape::stage_floats + stage_offset;
#pragma unroll
    for (int c = 0; c < per_thread; ++c) __pipeline_memcpy_async(stage + c * stage_step, x + c * piece_step, 16);
  };

  const index_t total = steps * shape::slabs;
#pragma unroll
  for (int q = 0; q < shape::stages - 1; ++q) {
    if (q < total) load(q);
    __pipeline_commit();
  }
#if defined(PARASCAN_WGMMA)
  wgmma::shared_writes_to_async_proxy();  // the start, for the first MMAs' descriptor reads
  __syncthreads();                        // (each warpgroup reads all of it; the slabs' barriers are its own)
  panel_wgmma<N, K_CONTIGUOUS> product;
#else
  panel_mma_sync<N, K_CONTIGUOUS> product;
#endif
  // After slab q: a factor done, the accumulators hold the panel of the next product. Writes it (to the
  // outputs, or the group's product) and, unless the group is done, into the panel.
  const auto factor_done = [&](index_t q) {
    const bool last_step = q / shape::slabs == steps - 1;
    // 32-bit offsets from the panel's first row (panel_groups: N ld < 2^31), the strides hidden from the
    // optimizer (and on wgmma the threads' places, in for_each_pair): else it keeps every entry's offset in
    // a register across the loop (spilled). A pair adjacent in memory is one 8-byte store where aligned.
    const auto to_memory = [&](float* to, matrix_strides st) {
      int rows = int(st.rows), cols = int(st.cols);
      asm volatile("" : "+r"(rows), "+r"(cols));
      float* panel_rows = to + row0 * st.rows;
      const int apart = decltype(product)::pairs_in_a_column ? rows : cols, across = rows + cols - apart;
      const bool pairs_adjacent = apart == 1 && across % 2 == 0 && reinterpret_cast<std::uintptr_t>(panel_rows) % 8 == 0;
#if defined(PARASCAN_WGMMA)
      if (COLUMN_STEPS && pairs_adjacent)
        product.store_column_pairs(panel_rows, across);
      else
#endif
          if (pairs_adjacent)
        product.for_each_pair([&](int r, int c, float v0, float v1) {
          *reinterpret_cast<float2*>(panel_rows + r * rows + c * cols) = make_float2(v0, v1);
        });
      else
        product.for_each_pair([&](int r, int c, float v0, float v1) {
          float* at = panel_rows + r * rows + c * cols;
          at[0] = v0;
          at[apart] = v1;
        });
    };
    if (p.write_steps) {
      float* o = p.tree.o0(s, step_first + q / shape::slabs);
      if (o != nullptr) to_memory(o, p.out);
    } else if (last_step) {
      to_memory(p.products + (s * p.launched + g) * NN, p.dense);
    }
    if (!last_step) {
      __syncthreads();  // every warp has read the panel
      product.to_panel(panel);
#if defined(PARASCAN_WGMMA)
      __syncthreads();  // (each warpgroup's MMAs read all of it; the slabs' barriers are the warpgroup's)
#endif
    }
  };
  product.clear();
  for (index_t q = 0; q < total; ++q) {
    slab_landed();
    if (q + shape::stages - 1 < total) load(q + shape::stages - 1);
    __pipeline_commit();
    product.multiply(panel, ring + int(q % shape::stages) * shape::stage_floats, int(q % shape::slabs) * shape::slab,
                     q % shape::slabs == 0);
    if ((q + 1) % shape::slabs == 0) factor_done(q);
  }
  __pipeline_wait_prior(0);
#endif
}

/// Counts the passes launched (tests check that a case ran here and not on the tree).
inline std::atomic<long long>& panel_passes() {
  static std::atomic<long long> count{0};
  return count;
}

template <int N, bool K_CONTIGUOUS, bool COLUMN_STEPS, bool BACKWARDS = false>
void launch_panel_pass(const panel_pass& p, cudaStream_t stream) {
  using shape = panel_shape<N>;
  static std::atomic<int> allowed[64] = {};
  const auto kernel = panel_chain_kernel<N, K_CONTIGUOUS, COLUMN_STEPS, BACKWARDS>;
  engine::allow_dynamic_shared(allowed, kernel, int(shape::shared_bytes));
  const index_t blocks = p.tree.count * p.launched * shape::panels;
  kernel<<<unsigned(blocks), shape::threads, shape::shared_bytes, stream>>>(p);
  check_launch("matrix chain (TF32 panels)");
  panel_passes().fetch_add(1, std::memory_order_relaxed);
}

template <int N>
void launch_panel_pass(const panel_pass& p, cudaStream_t stream) {
  const bool column_steps = p.write_steps && p.out.rows == 1 && p.out.cols % 2 == 0;  // (store_column_pairs' ld)
  if (p.backwards) {  // (pass 1 over transposes that keep each row's entries adjacent: run_panel_chain)
    if (p.factor.rows == 1 || p.write_steps) throw error("parascan: TF32 panels: backwards is pass 1 over rows");
    launch_panel_pass<N, false, false, true>(p, stream);
  } else if (p.factor.rows == 1)
    column_steps ? launch_panel_pass<N, true, true>(p, stream) : launch_panel_pass<N, true, false>(p, stream);
  else
    column_steps ? launch_panel_pass<N, false, true>(p, stream) : launch_panel_pass<N, false, false>(p, stream);
}

/// A marker of the build the device runs: it declares shared memory only where the panel kernels use
/// wgmma (sm_90a images). (It names the image of its own translation unit: the kernels' must be built for
/// the same architectures, as a program's translation units are.)
template <int = 0>
__global__ void panel_wgmma_marker() {
#if defined(PARASCAN_WGMMA)
  __shared__ int marker;
  *static_cast<volatile int*>(&marker) = 0;
#endif
}

/// Whether the panel kernels the current device runs are the wgmma build (cached per device; read from the
/// marker's attributes, which name the image the device loads and may be asked while a stream is captured).
inline bool panel_wgmma_loaded() {
  static std::atomic<int> cache[64] = {};
  return engine::cached_per_device(cache, [](int) {
           cudaFuncAttributes attributes{};
           detail::cuda_check(cudaFuncGetAttributes(&attributes, panel_wgmma_marker<>), "cudaFuncGetAttributes");
           return attributes.sharedSizeBytes > 0 ? 1 : -1;  // (the cache's 0: not yet asked)
         }) > 0;
}

/// Blocks of the panel kernel of size N a multiprocessor holds (cached per device); 0 where the device does
/// not run it: its code for this device was compiled below sm_80 (no mma: a binary or PTX for an older
/// architecture, JIT-compiled here, has the empty body), or a block's shared memory (113 KiB at N = 128,
/// 225 KiB at N = 256) is more than the device allows (sm_80: 163 KiB, so N = 128 only; sm_86 / 89: 99
/// KiB, neither).
template <int N>
int panel_blocks_per_multiprocessor() {
  static std::atomic<int> fits[64] = {}, cache[64] = {};
  const auto kernel = panel_chain_kernel<N, false, false, false>;
  if (!engine::fits_shared_memory(fits, kernel, panel_shape<N>::shared_bytes)) return 0;
  const int blocks = engine::cached_per_device(cache, [&](int) {
           cudaFuncAttributes attributes{};
           detail::cuda_check(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
           if (attributes.binaryVersion < 80 || attributes.ptxVersion < 80) return -1;
           static std::atomic<int> allowed[64] = {};
           engine::allow_dynamic_shared(allowed, kernel, int(panel_shape<N>::shared_bytes));
           int blocks = 0;
           detail::cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, panel_shape<N>::threads,
                                                                            panel_shape<N>::shared_bytes),
                              "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
           return blocks > 0 ? blocks : -1;  // (the cache's 0: not yet asked)
         });
  return std::max(blocks, 0);
}

}  // namespace detail
}  // namespace parascan
