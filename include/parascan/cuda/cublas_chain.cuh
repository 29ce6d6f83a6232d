// The CUDA backend of runtime-size matrix chains (ops/runtime_matrix_chain.hpp): cuBLAS batched GEMMs over
// the levels of a tree, on the caller's stream: for up to 16 chains of matrices from 128 x 128, each
// chain's part of a call as one strided-batched GEMM (the kernels cuBLAS has for Hopper need even
// strides); else every product of a call through pointer arrays (any placement of the matrices).
//
// Prefix (work-efficient, about 2n products a chain of n; torch_parallel_scan's doubling does n log2 n):
// level 0 lists the chain's factors X_0 (the initial matrix first when there is one) and where each
// one's prefix goes, O_0 (the outputs). Going up, level l multiplies adjacent pairs, Y[j] = X_l[2j] X_l[2j+1],
// into workspace: level l + 1 is the chain of these pairs, and the prefix of Y[j] is the prefix of
// X_l[2j+1], so O_{l+1}[j] = O_l[2j+1] = O_0[(j + 1) 2^(l+1) - 1]. Y[0] is its own prefix and goes straight
// to O_{l+1}[0]. Coming down, once level l + 1's prefixes are written, level l fills its even positions:
// O_l[2j] = O_l[2j-1] X_l[2j]. Workspace: about one matrix a factor (the pairs of every level).
// Reduce: the same pairs going up (a leftover of an odd level copied along), the last pair into `result`;
// two levels' pairs in two buffers, about three quarters of a matrix a factor.
//
// Each level runs as two or three batched calls, since a batched call takes one leading dimension per
// operand: the first pair of every chain (which reads the initial matrix or writes an output), the other
// pairs (factors in, workspace out), and the even positions (outputs and factors in, outputs out). All
// pointer arrays are built by one kernel before the first call (the strided calls take their first two
// items' places, computed on the host by the same code).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>

#include "../chain_order.hpp"
#include "../cuda.cuh"
#include "../matrix_sequences.hpp"
#include "check.cuh"
#include "chain_tree.cuh"
#include "device_pool.cuh"
#include "forked_stream.cuh"
#include "group_scan.cuh"
#include "memory.cuh"
#include "tf32_panel_chain.cuh"

namespace parascan {
namespace detail {

inline void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw error(std::string("parascan: ") + what + ": cuBLAS: " + cublasGetStatusString(status));
}

/// cuBLAS handles, one per concurrent caller and device (device_pool.cuh: cublasCreate costs far more than
/// a small chain).
inline device_pool<cublasHandle_t>& cublas_handles() {
  static device_pool<cublasHandle_t>* pool = new device_pool<cublasHandle_t>;
  return *pool;
}

/// A handle of the current device, on `stream`, for one call.
class cublas_lease {
 public:
  explicit cublas_lease(cudaStream_t stream) {
    cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
    handle_ = cublas_handles().take(device_, [](int) {
      cublasHandle_t h = nullptr;
      cublas_check(cublasCreate(&h), "cublasCreate");
      return h;
    });
    const cublasStatus_t status = cublasSetStream(handle_, stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      cublas_handles().give(device_, handle_);
      cublas_check(status, "cublasSetStream");
    }
  }
  cublas_lease(const cublas_lease&) = delete;
  cublas_lease& operator=(const cublas_lease&) = delete;
  ~cublas_lease() { cublas_handles().give(device_, handle_); }
  cublasHandle_t get() const { return handle_; }

 private:
  int device_ = 0;
  cublasHandle_t handle_ = nullptr;
};

/// How one operand of a batched call is stored.
struct operand_form {
  matrix_storage storage;
  index_t ld;
};

template <class S>
struct cublas_types;
template <>
struct cublas_types<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static cublasComputeType_t compute(matrix_math math) {
    return math == matrix_math::tf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
           : math == matrix_math::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                       : CUBLAS_COMPUTE_32F;
  }
};
template <>
struct cublas_types<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static cublasComputeType_t compute(matrix_math) { return CUBLAS_COMPUTE_64F; }
};

/// cuBLAS is column-major: a row-major matrix reads as its transpose, so a row-major C is computed as
/// C^T = B^T A^T. `swap`: cuBLAS's first operand is B; op1 / op2 transpose its operands as stored.
struct gemm_shape {
  bool swap;
  operand_form first, second;
  cublasOperation_t op1, op2;
};
inline gemm_shape shape_of(operand_form a, operand_form b, operand_form c) {
  const bool c_rows = c.storage == matrix_storage::row_major;
  const auto op = [&](const operand_form& x) {
    return (x.storage == matrix_storage::row_major) != c_rows ? CUBLAS_OP_T : CUBLAS_OP_N;
  };
  const operand_form f = c_rows ? b : a, s = c_rows ? a : b;
  return {c_rows, f, s, op(f), op(s)};
}

constexpr index_t most_batches = 65535;  // batches per call (grid limits of some cuBLAS kernels)

/// C[k] = A[k] B[k] (in the mathematical sense) for k < batch, through pointer arrays.
template <class S>
void batched_products(cublasHandle_t handle, index_t N, operand_form a, operand_form b, operand_form c,
                      const S* const* A, const S* const* B, S* const* C, index_t batch, matrix_math math) {
  const S one = 1, zero = 0;
  const gemm_shape g = shape_of(a, b, c);
  const S* const* first = g.swap ? B : A;
  const S* const* second = g.swap ? A : B;
  for (index_t k = 0; k < batch; k += most_batches) {
    const int n = int(std::min(most_batches, batch - k)), size = int(N);
    cublas_check(cublasGemmBatchedEx(handle, g.op1, g.op2, size, size, size, &one,
                                     reinterpret_cast<const void* const*>(first + k), cublas_types<S>::data,
                                     int(g.first.ld), reinterpret_cast<const void* const*>(second + k),
                                     cublas_types<S>::data, int(g.second.ld), &zero,
                                     reinterpret_cast<void* const*>(C + k), cublas_types<S>::data, int(c.ld), n,
                                     cublas_types<S>::compute(math), CUBLAS_GEMM_DEFAULT),
                 "matrix chain (cublasGemmBatchedEx)");
  }
}

/// C + k sc = (A + k sa)(B + k sb) for k < batch (strides in scalars, >= 0): the strided-batched kernels,
/// which on Hopper include the tensor-memory-accelerator ones that pointer arrays cannot use (TF32 at
/// N = 1024: 136 TFLOPS through pointer arrays, 302 strided, H100).
template <class S>
void strided_products(cublasHandle_t handle, index_t N, operand_form a, operand_form b, operand_form c, const S* A,
                      index_t sa, const S* B, index_t sb, S* C, index_t sc, index_t batch, matrix_math math) {
  const S one = 1, zero = 0;
  const gemm_shape g = shape_of(a, b, c);
  const S* first = g.swap ? B : A;
  const S* second = g.swap ? A : B;
  const index_t s1 = g.swap ? sb : sa, s2 = g.swap ? sa : sb;
  for (index_t k = 0; k < batch; k += most_batches) {
    const int n = int(std::min(most_batches, batch - k)), size = int(N);
    cublas_check(cublasGemmStridedBatchedEx(handle, g.op1, g.op2, size, size, size, &one, first + k * s1,
                                            cublas_types<S>::data, int(g.first.ld), s1, second + k * s2,
                                            cublas_types<S>::data, int(g.second.ld), s2, &zero, C + k * sc,
                                            cublas_types<S>::data, int(c.ld), sc, n, cublas_types<S>::compute(math),
                                            CUBLAS_GEMM_DEFAULT),
                 "matrix chain (cublasGemmStridedBatchedEx)");
  }
}

/// Up to this many chains of matrices from strided_size up run each chain's part of a call as one strided
/// call (a launch a chain); more chains, or smaller matrices (whose products cost less than a cuBLAS call's
/// host time: at N = 64 a chain of 1000 took 0.13 ms through pointer arrays, 0.27 ms strided, H100), take
/// one call over pointer arrays.
constexpr index_t strided_chains = 16, strided_size = 128;

/// One chain's matrix at a fixed place: step `t` of a view, or matrix `s` of a dense array
/// (`chain_stride` scalars apart), or the identity (no view, no array).
template <class T>
struct chain_matrix {
  sequences<T> view{};
  index_t t = 0;
  T* dense = nullptr;
  index_t chain_stride = 0;
  operand_form form{matrix_storage::column_major, 0};

  PARASCAN_HD T* at(index_t s) const {
    if (dense != nullptr) return dense + s * chain_stride;
    return view.data == nullptr ? nullptr : view.begin_of(s) + t * view.time_stride;
  }
};

/// Copies (or, from nothing, sets to the identity) one N x N matrix a chain: blockIdx.y a chain, blockIdx.x
/// a piece of its matrix (a large matrix is copied by many blocks).
template <class S>
__global__ void copy_chain_matrices(chain_matrix<const S> from, chain_matrix<S> to, index_t N, index_t first) {
  const index_t s = first + blockIdx.y;
  const S* src = from.at(s);
  S* dst = to.at(s);
  const bool dst_rows = to.form.storage == matrix_storage::row_major;
  const bool src_rows = from.form.storage == matrix_storage::row_major;
  const auto copy = [&](auto entries) {  // (32-bit places where they reach: 64-bit division is slow)
    using place = decltype(entries);
    const place size = place(N);
    for (place k = place(blockIdx.x) * blockDim.x + threadIdx.x; k < entries; k += place(gridDim.x) * blockDim.x) {
      const index_t major = k / size, minor = k % size;  // consecutive threads write consecutive scalars
      const index_t i = dst_rows ? major : minor, j = dst_rows ? minor : major;
      const S value =
          src == nullptr ? S(i == j ? 1 : 0) : src_rows ? src[i * from.form.ld + j] : src[i + j * from.form.ld];
      (dst_rows ? dst[i * to.form.ld + j] : dst[i + j * to.form.ld]) = value;
    }
  };
  if (N * N <= index_t(UINT_MAX) - index_t(gridDim.x) * blockDim.x)
    copy(unsigned(N * N));
  else
    copy(index_t(N * N));
}

template <class S>
void copy_matrices(const chain_matrix<const S>& from, const chain_matrix<S>& to, index_t count, index_t N,
                   cudaStream_t stream) {
  // An entry a thread, up to 1024 blocks a matrix (256 KiB took 7.6 us at 8 entries a thread with 64-bit
  // division, H200).
  const index_t threads = std::min<index_t>(256, ((N * N + 31) / 32) * 32);
  const unsigned pieces = unsigned(std::min<index_t>((N * N + threads - 1) / threads, 1024));
  for (index_t first = 0; first < count; first += 65535) {
    const dim3 grid(pieces, unsigned(std::min<index_t>(count - first, 65535)));
    copy_chain_matrices<S><<<grid, unsigned(threads), 0, stream>>>(from, to, N, first);
    check_launch("matrix chain (copy)");
  }
}

template <class Layout, class S>
__global__ void build_item_pointers(Layout layout, index_t items, const S** a, const S** b, S** c) {
  for (index_t k = blockIdx.x * index_t(blockDim.x) + threadIdx.x; k < items; k += index_t(gridDim.x) * blockDim.x)
    layout.item(k, a[k], b[k], c[k]);
}

/// The pointer arrays of a layout's batched products (chain_tree, group_scan: item(k, A, B, C), C = A B),
/// built by one kernel: items k < `items` at a[k], b[k], c[k].
template <class Layout, class S>
void build_pointers(cudaStream_t stream, const Layout& layout, index_t items, const S** a, const S** b, S** c) {
  if (items <= 0) return;
  const unsigned blocks = unsigned(std::min<index_t>((items + 255) / 256, 65536));
  build_item_pointers<Layout, S><<<blocks, 256, 0, stream>>>(layout, items, a, b, c);
  check_launch("matrix chain (pointers)");
}

/// Lays out the tree's levels (lengths, workspace, items) from its level-0 length m[0]; returns the
/// workspace's size in scalars: a prefix keeps every level's pairs (about one matrix a factor), a
/// reduction two levels' (about three quarters of one a factor).
template <class S>
index_t plan_tree(chain_tree<S>& t, bool exclusive_final) {
  index_t work = 0, items = 0;
  t.levels = 0;
  while (t.m[t.levels] >= 2) {
    const int l = t.levels;
    if (l >= max_tree_levels) fail("in.origins.length", "a chain short enough for the tree's levels");
    t.m[l + 1] = t.next_length(l);
    if (t.prefix) {  // the down pass reads every level's pairs again
      t.work_at[l] = work;
      work += t.count * t.m[l + 1] * t.NN;
    } else {  // a reduction's level reads only the level before: two buffers, taken in turn
      t.work_at[l] = l % 2 == 0 ? 0 : t.count * t.m[1] * t.NN;
      work = std::max(work, t.work_at[l] + t.count * t.m[l + 1] * t.NN);
    }
    t.item_at[l] = items;
    items += t.count * (t.pairs(l) + t.evens(l));
    ++t.levels;
  }
  t.item_at[t.levels] = items;
  t.item_at[t.levels + 1] = items + (exclusive_final ? t.count : 0);
  return work;
}

/// Issues the batched calls of a tree whose pointer arrays are built: the pairs going up level by level
/// (with a reduction's leftovers copied along), the even positions coming down, the exclusive final
/// products. `x_first`: the form of level 0's first factor (the initial matrix, or a factor).
template <class S>
void run_tree(cublasHandle_t handle, cudaStream_t stream, const chain_tree<S>& t, const S* const* a,
              const S* const* b, S* const* c, operand_form in_form, operand_form out_form, operand_form work_form,
              operand_form x_first, matrix_math math) {
  const index_t N = t.in.size;
  // Few chains: each chain's part of a call steps through memory evenly, so it runs as one strided call
  // (found from its first two items); else, or where the operands step in different directions, the
  // pointer arrays.
  const bool strided = t.count <= strided_chains && N >= strided_size;
  const auto call = [&](index_t first, index_t items, operand_form earlier, operand_form later, operand_form target) {
    if (items <= 0) return;
    const operand_form fa = t.left_to_right ? earlier : later, fb = t.left_to_right ? later : earlier;
    if (!strided) {
      batched_products<S>(handle, N, fa, fb, target, a + first, b + first, c + first, items, math);
      return;
    }
    const index_t per_chain = items / t.count;
    for (index_t s = 0; s < t.count; ++s) {
      const index_t k = first + s * per_chain;
      const S *a0, *b0, *a1 = nullptr, *b1 = nullptr;
      S *c0, *c1 = nullptr;
      t.item(k, a0, b0, c0);
      index_t sa = 0, sb = 0, sc = 0;
      if (per_chain > 1) {
        t.item(k + 1, a1, b1, c1);
        sa = a1 - a0, sb = b1 - b0, sc = c1 - c0;
        if (sa <= 0 && sb <= 0 && sc <= 0) {  // descending: from the last item up
          t.item(k + per_chain - 1, a0, b0, c0);
          sa = -sa, sb = -sb, sc = -sc;
        }
      }
      if (sa < 0 || sb < 0 || sc < 0)
        batched_products<S>(handle, N, fa, fb, target, a + k, b + k, c + k, per_chain, math);
      else
        strided_products<S>(handle, N, fa, fb, target, a0, sa, b0, sb, c0, sc, per_chain, math);
    }
  };
  const auto same = [](operand_form p, operand_form q) { return p.storage == q.storage && p.ld == q.ld; };
  // Pair targets: a prefix's first pair goes to an output, a reduction's last pair to `result` (formed
  // like the workspace).
  const operand_form first_target = t.prefix ? out_form : work_form;
  for (int l = 0; l < t.levels; ++l) {
    const operand_form x_form = l == 0 ? in_form : work_form;
    const operand_form first = l == 0 ? x_first : t.prefix ? out_form : work_form;
    const index_t begin = t.item_at[l], rest = t.count * (t.pairs(l) - 1);
    // One call for all pairs where their forms agree and, for strided calls, their places step evenly (a
    // single chain's reduction past level 0's initial matrix).
    const bool even = !strided || (t.count == 1 && !t.prefix && (l > 0 || t.lead == 0));
    if (even && same(first, x_form) && same(first_target, work_form)) {
      call(begin, t.count * t.pairs(l), x_form, x_form, work_form);
    } else {
      call(begin, t.count, first, x_form, first_target);
      call(begin + t.count, rest, x_form, x_form, work_form);
    }
    if (!t.prefix && t.m[l] % 2 == 1) {  // the leftover, copied to the next level's last place
      chain_matrix<const S> from;
      from.form = x_form;
      if (l == 0) {
        from.view = t.in.origins;
        from.t = t.time_of(t.m[0] - 1 - t.lead);
      } else {
        from.dense = t.work + t.work_at[l - 1] + t.slot(l - 1, t.m[l] - 1) * t.NN;
        from.chain_stride = t.m[l] * t.NN;
      }
      chain_matrix<S> to;
      to.form = work_form;
      to.dense = t.work + t.work_at[l] + t.slot(l, t.m[l + 1] - 1) * t.NN;
      to.chain_stride = t.m[l + 1] * t.NN;
      copy_matrices<S>(from, to, t.count, N, stream);
    }
  }
  for (int l = t.levels - 1; l >= 0; --l)
    call(t.item_at[l] + t.count * t.pairs(l), t.count * t.evens(l), out_form, l == 0 ? in_form : work_form, out_form);
  const index_t finals = t.item_at[t.levels + 1] - t.item_at[t.levels];
  call(t.item_at[t.levels], finals, out_form, in_form, operand_form{out_form.storage, N});
}

template <class S>
void run_cublas_chain(cudaStream_t stream, temp_allocator& alloc, chain_order order,
                      const matrix_sequences<const S>& in, const matrix_sequences<S>* out, const matrix_options<S>& opts,
                      S* result);

/// How many groups each chain is cut into for the TF32 panels (tf32_panel_chain.cuh), 0 where they do not
/// apply: fp32 on TF32, N = 128 or 256, factors placed for 16-byte copies (and N ld < 2^31), a device that
/// runs them; a reduction, or a prefix without an exclusive final product (the tree's last call). A prefix
/// at N = 256 runs here only on wgmma: on mma.sync its two passes and the tree over its carries (0.60 ms
/// for 1024 factors, H200) lose to the tree alone (0.58); on wgmma 0.423 ms with row-contiguous outputs as
/// read, 0.454 with column-contiguous ones (group_scan's carries; 0.50 / 0.55 with the tree's). As many groups
/// as fill the device once, each of at least four factors, their blocks at least half of what the device
/// holds at once (else the tree's levels are as fast); for a reduction a power of two where that keeps
/// three quarters of them (an odd level of the tree over the group products copies its leftover along: 7
/// us a copy at N = 256, as long as the level's GEMMs). One chain of 1000 256 x 256 factors: 64 groups.
template <class S>
index_t panel_groups(const chain_tree<S>& t, const matrix_options<S>& opts, bool final_product) {
  if constexpr (!std::is_same<S, float>::value) {
    return 0;
  } else {
    const matrix_sequences<const S>& in = t.in;
    const index_t N = in.size, m = t.m[0];
    if (opts.math != matrix_math::tf32 || !(N == 128 || N == 256) || final_product || m < 4 ||
        !panel_chains_enabled())
      return 0;
    if (N == 256 && t.prefix && !panel_wgmma_loaded()) return 0;
    const auto whole_pieces = [](index_t v) { return v % 4 == 0; };
    const index_t widest_ld = std::max(in.ld, t.prefix ? t.out.ld : N);
    if (widest_ld > std::numeric_limits<int>::max() / N) return 0;  // (the kernel's 32-bit offsets in a matrix)
    const sequences<const S>& o = in.origins;
    if (reinterpret_cast<std::uintptr_t>(o.data) % 16 != 0 || !whole_pieces(in.ld) || !whole_pieces(o.time_stride) ||
        (o.extent[0] > 1 && o.offsets == nullptr && !whole_pieces(o.stride[0])) ||
        (o.extent[1] > 1 && !whole_pieces(o.stride[1])))
      return 0;
    const index_t panels = N / 128,
                  slots = index_t(engine::multiprocessors()) *
                          (N == 128 ? panel_blocks_per_multiprocessor<128>() : panel_blocks_per_multiprocessor<256>());
    if (slots == 0) return 0;
    index_t groups = std::min(slots / (t.count * panels), m / 4);
    if (!t.prefix) {
      index_t power = groups;
      while (power & (power - 1)) power &= power - 1;
      if (4 * power >= 3 * groups) groups = power;
    }
    if (groups < 1 || 2 * t.count * groups * panels < slots) return 0;
    // A prefix: as few groups as keep the longest one (the passes' time), for fewer levels of the scan over
    // them (1024 factors: 64 groups of 16, 6 levels, not 66 of 15 or 16, 7 levels).
    const index_t longest = (m + groups - 1) / groups;
    return t.prefix ? (m + longest - 1) / longest : groups;
  }
}

/// The group scan (group_scan.cuh) over `products` (count chains of m), with `spare` (as large) as the
/// second buffer: planned, and its calls' pointer arrays placed, on `stream`; the arrays built by build()
/// (on a stream that may run beside `stream`'s work so far: they only hold places), then run().
class group_scan_calls {
 public:
  group_scan_calls(temp_allocator& alloc, cudaStream_t stream, chain_order order, float* products, float* spare,
                   index_t count, index_t m, index_t N)
      : pointers_(alloc, stream, std::size_t(plan(order, products, spare, count, m, N)) * 3 * sizeof(void*)) {}
  bool paired() const { return scan_.paired; }
  void build(cudaStream_t stream) const {
    build_pointers(stream, scan_, items(), a(), b(), c());
  }
  void run(cudaStream_t stream, matrix_storage storage, matrix_math math) const {
    if (items() == 0) return;
    cublas_lease handle(stream);
    const operand_form dense{storage, N_};
    for (int call = 0; call < scan_.calls; ++call) {
      const index_t first = scan_.item_at[call];
      batched_products<float>(handle.get(), N_, dense, dense, dense, a() + first, b() + first, c() + first,
                              scan_.item_at[call + 1] - first, math);
    }
  }

 private:
  group_scan scan_;
  index_t N_ = 0;
  temp_buffer pointers_;

  index_t plan(chain_order order, float* products, float* spare, index_t count, index_t m, index_t N) {
    N_ = N;
    scan_.buffers[0] = products;
    scan_.buffers[1] = spare;
    scan_.count = count;
    scan_.m = m;
    scan_.NN = N * N;
    scan_.left_to_right = order == chain_order::left_to_right;
    // Paired where a level would hold more than 16 products of 256 x 256 (or as much work).
    const double level_work = double(count) * double(m / 2) * double(N) * double(N) * double(N);
    scan_.paired = level_work > 16.0 * 256 * 256 * 256;
    scan_.plan();
    return items();
  }
  index_t items() const { return scan_.item_at[scan_.calls]; }
  const float** a() const { return pointers_.as<const float*>(); }
  const float** b() const { return a() + items(); }
  float** c() const { return pointers_.as<float*>() + 2 * items(); }
};

/// A chain on the TF32 panels: pass 1 into group products, the tree over them (the product) or the group
/// scan (a prefix's carries: the exclusive prefix of the groups), pass 2 (a prefix) from the carries,
/// writing every step. A prefix calls beside(side stream) for work of its own (its first output) beside
/// pass 1, which leaves multiprocessors idle (at N = 256 63 groups of 2 blocks on 132 of them).
template <class Beside>
void run_panel_chain(cudaStream_t stream, temp_allocator& alloc, chain_order order, const chain_tree<float>& t,
                     const matrix_sequences<float>* out, matrix_storage dense_storage, matrix_math math,
                     index_t groups, float* result, Beside&& beside) {
  const index_t N = t.in.size, NN = N * N, count = t.count;
  if (log_plans())
    std::fprintf(stderr, "parascan: %s %lld chains of %lld %lldx%lld matrices: TF32 panels, %lld groups a chain\n",
                 t.prefix ? "matrix_chain" : "matrix_chain_product", static_cast<long long>(count),
                 static_cast<long long>(t.m[0]), static_cast<long long>(N), static_cast<long long>(N),
                 static_cast<long long>(groups));
  panel_pass p;
  p.tree = t;
  p.groups = groups;
  const bool transpose = order == chain_order::right_to_left;
  p.factor = strides_of(t.in.storage, t.in.ld, transpose);
  p.dense = strides_of(dense_storage, N, transpose);
  p.first_item = t.lead ? p.dense : p.factor;
  if (out != nullptr) p.out = strides_of(out->storage, out->ld, transpose);
  const auto run = [&](const panel_pass& q) {
    if (N == 128)
      launch_panel_pass<128>(q, stream);
    else
      launch_panel_pass<256>(q, stream);
  };
  matrix_options<float> inner;
  inner.math = math;
  // Pass 1: every group's product (a prefix needs all but the last). Where the factors as read keep each
  // column's entries adjacent, the groups run backwards over the transposes, which reads them row-contiguous:
  // the faster loads (pass 1 of the prefix of 1024 256 x 256 matrices on an H200: 171 -> 161 us, as for
  // row-major factors; the prefix 0.469 -> 0.457 ms, the product 0.218 -> 0.212). (The initial matrix, group
  // 0's last item then, must share the factors' strides.)
  p.launched = t.prefix ? groups - 1 : groups;
  temp_buffer products(alloc, stream, std::size_t(count * p.launched * NN) * sizeof(float));
  p.products = products.as<float>();
  const auto dense_chain = [&](float* data, index_t length) {
    return dense_chains(data, count, length, N, dense_storage);
  };
  panel_pass products_pass = p;
  const matrix_strides factor_transposed = strides_of(t.in.storage, t.in.ld, !transpose);
  const matrix_strides dense_transposed = strides_of(dense_storage, N, !transpose);
  const bool same_strides =
      dense_transposed.rows == factor_transposed.rows && dense_transposed.cols == factor_transposed.cols;
  if (p.factor.rows == 1 && (t.lead == 0 || same_strides)) {
    products_pass.backwards = true;
    products_pass.factor = products_pass.first_item = factor_transposed;
    products_pass.dense = dense_transposed;
  }
  if (!t.prefix) {
    if (p.launched > 0) run(products_pass);
    run_cublas_chain<float>(stream, alloc, order, dense_chain(p.products, groups), nullptr, inner, result);
    return;
  }
  temp_buffer spare(alloc, stream, std::size_t(count * p.launched * NN) * sizeof(float));
  const group_scan_calls scan(alloc, stream, order, p.products, spare.as<float>(), count, p.launched, N);
  {
    forked_stream side(stream);  // (the buffers placed on `stream` before the fork)
    if (p.launched > 0) run(products_pass);
    beside(side.get());
    scan.build(side.get());
  }
  scan.run(stream, dense_storage, math);
  p.carries_paired = scan.paired();
  p.launched = groups;
  p.carries[0] = p.products;
  p.carries[1] = spare.as<float>();
  p.products = nullptr;
  p.write_steps = true;
  run(p);
}

/// A chain's matrices through cuBLAS, its pointers known to be the device's (the workspace of a call in a
/// stream being captured into a graph is not mapped yet, so it is never asked): plans the tree, builds its
/// pointer arrays and runs it. `result` non-null: a reduction.
template <class S>
void run_cublas_chain(cudaStream_t stream, temp_allocator& alloc, chain_order order,
                      const matrix_sequences<const S>& in, const matrix_sequences<S>* out, const matrix_options<S>& opts,
                      S* result) {
  const bool prefix = out != nullptr;
  const index_t count = in.count(), n = in.length(), N = in.size, NN = N * N;
  if (count == 0) return;

  const matrix_storage kept = prefix ? out->storage : in.storage;  // the workspace's, initial's, final's
  const operand_form in_form{in.storage, in.ld}, out_form{prefix ? out->storage : kept, prefix ? out->ld : N},
      dense_form{kept, N};
  chain_tree<S> t;
  t.in = in;
  if (prefix) t.out = *out;
  t.initial = opts.initial;
  t.final = opts.final;
  t.result = result;
  t.reverse = opts.reverse;
  t.left_to_right = order == chain_order::left_to_right;
  t.prefix = prefix;
  t.count = count;
  t.n = n;
  t.NN = NN;
  t.lead = opts.initial != nullptr ? 1 : 0;
  const bool exclusive = prefix && opts.exclusive;
  // Level 0: [initial,] factors; an exclusive scan's last factor only reaches the final product, and without
  // an initial matrix its first output is the identity.
  t.out_shift = exclusive ? 1 - t.lead : -t.lead;
  t.m[0] = exclusive ? n - 1 + t.lead : n + t.lead;
  if (t.m[0] < 0) t.m[0] = 0;
  // An exclusive scan's final matrix is its last output times its last factor; with one factor and no
  // initial matrix, that factor itself (no I M: an infinite entry would give NaN).
  const bool final_product = prefix && exclusive && opts.final != nullptr && (n >= 2 || (n == 1 && t.lead));
  const index_t work = plan_tree(t, final_product);
  const index_t groups = panel_groups<S>(t, opts, final_product);

  // Level 0's first factor is its own prefix: copied to its output (unless it is the initial matrix of an
  // inclusive scan, which has none); an exclusive scan without one starts from the identity.
  const auto output_at = [&](index_t p) {
    chain_matrix<S> m;
    m.view = out->origins;
    m.t = t.time_of(p);
    m.form = out_form;
    return m;
  };
  const auto dense = [&](const S* p) {
    chain_matrix<const S> m;
    m.dense = p;
    m.chain_stride = NN;
    m.form = dense_form;
    return m;
  };
  const auto factor_at = [&](index_t p) {
    chain_matrix<const S> m;
    m.view = in.origins;
    m.t = t.time_of(p);
    m.form = in_form;
    return m;
  };
  const chain_matrix<const S> first_factor = t.lead ? dense(opts.initial) : factor_at(0);
  const auto first_output = [&](cudaStream_t on) {
    if (!prefix) return;
    if (exclusive && !t.lead && n >= 1) copy_matrices<S>(chain_matrix<const S>{}, output_at(0), count, N, on);
    if (t.m[0] >= 1 && t.out_shift >= 0) copy_matrices<S>(first_factor, output_at(t.out_shift), count, N, on);
  };
  if constexpr (std::is_same<S, float>::value)
    if (groups > 0) run_panel_chain(stream, alloc, order, t, out, kept, opts.math, groups, result, first_output);
  if (groups == 0) {
    first_output(stream);
    cublas_lease handle(stream);
    temp_buffer work_buffer(alloc, stream, std::size_t(work) * sizeof(S));
    const index_t items = t.item_at[t.levels + 1];
    temp_buffer pointers(alloc, stream, std::size_t(items) * 3 * sizeof(void*));
    t.work = work_buffer.as<S>();
    const S** a = pointers.as<const S*>();
    const S** b = a + items;
    S** c = pointers.as<S*>() + 2 * items;
    build_pointers(stream, t, items, a, b, c);
    run_tree<S>(handle.get(), stream, t, a, b, c, in_form, out_form, dense_form, t.lead ? dense_form : in_form,
                opts.math);
  }

  // The final product (prefix) or a reduction of fewer than two matrices.
  S* target = prefix ? opts.final : result;
  chain_matrix<S> to;
  to.dense = target;
  to.chain_stride = NN;
  to.form = dense_form;
  if (target == nullptr || final_product) return;
  if (t.m[0] == 0 || (prefix && n == 0)) {  // nothing to multiply: the initial matrix, or the identity
    if (prefix && n == 1) copy_matrices<S>(factor_at(0), to, count, N, stream);  // exclusive, no initial
    else if (opts.initial == nullptr) copy_matrices<S>(chain_matrix<const S>{}, to, count, N, stream);
    else if (opts.initial != target) copy_matrices<S>(dense(opts.initial), to, count, N, stream);
  } else if (prefix) {
    chain_matrix<const S> last;
    last.view = out->origins;
    last.t = t.time_of(n - 1);
    last.form = out_form;
    copy_matrices<S>(last, to, count, N, stream);
  } else if (t.m[0] == 1) {
    copy_matrices<S>(first_factor, to, count, N, stream);
  }
}

/// A chain's matrices through cuBLAS: checks what only the GPU needs (the caller's pointers on the device,
/// sizes for cuBLAS's ints), then runs it.
template <class S>
void cublas_chain(cudaStream_t stream, temp_allocator& alloc, chain_order order, const matrix_sequences<const S>& in,
                  const matrix_sequences<S>* out, const matrix_options<S>& opts, S* result) {
  const bool prefix = out != nullptr;
  const index_t count = in.count(), n = in.length(), N = in.size;
  const auto device_memory = [&](const void* p, bool used, const char* name) {
    if (used) require_device_pointer(p, name);
  };
  device_memory(in.origins.data, count > 0 && n > 0, "in.origins.data");
  if (prefix) device_memory(out->origins.data, count > 0 && n > 0, "out.origins.data");
  device_memory(opts.initial, count > 0, "options.initial");
  device_memory(opts.final, count > 0, "options.final");
  device_memory(result, count > 0, "result");
  const index_t dimensions[3] = {N, in.ld, prefix ? out->ld : N};
  for (const index_t v : dimensions)
    if (v > INT_MAX) fail("ld", "N and leading dimensions below 2^31 on the GPU (cuBLAS), got " + std::to_string(v));
  run_cublas_chain<S>(stream, alloc, order, in, out, opts, result);
}

}  // namespace detail

/// matrix_chain on the GPU (called by ops/runtime_matrix_chain.hpp once the arguments are checked).
template <class S>
void run_matrix_chain(const cuda& exec, chain_order order, const matrix_sequences<const S>& in,
                      const matrix_sequences<S>& out, const matrix_options<S>& opts) {
  detail::cublas_chain<S>(exec.stream, detail::allocator_of(exec), order, in, &out, opts, nullptr);
}

/// matrix_chain_product on the GPU.
template <class S>
void run_matrix_chain_product(const cuda& exec, chain_order order, const matrix_sequences<const S>& in, S* result,
                              const matrix_options<S>& opts) {
  detail::cublas_chain<S>(exec.stream, detail::allocator_of(exec), order, in, nullptr, opts, result);
}

}  // namespace parascan
