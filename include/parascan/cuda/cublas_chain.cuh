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
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../chain_order.hpp"
#include "../cuda.cuh"
#include "../matrix_sequences.hpp"
#include "check.cuh"
#include "memory.cuh"

namespace parascan {
namespace detail {

inline void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw error(std::string("parascan: ") + what + ": cuBLAS: " + cublasGetStatusString(status));
}

/// cuBLAS handles, one per concurrent caller and device, created once and kept for the process:
/// cublasCreate costs far more than a small chain, and destroying handles at exit would race the CUDA
/// runtime's own teardown (the pool is deliberately never destroyed, as PyTorch's is).
class cublas_handles {
 public:
  static cublas_handles& instance() {
    static cublas_handles* pool = new cublas_handles;
    return *pool;
  }
  cublasHandle_t take(int device) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = 0; i < free_.size(); ++i)
        if (free_[i].first == device) {
          const cublasHandle_t h = free_[i].second;
          free_.erase(free_.begin() + std::ptrdiff_t(i));
          return h;
        }
    }
    cublasHandle_t h = nullptr;
    cublas_check(cublasCreate(&h), "cublasCreate");
    return h;
  }
  void give(int device, cublasHandle_t h) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace_back(device, h);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, cublasHandle_t>> free_;
};

/// A handle of the current device, on `stream`, for one call.
class cublas_lease {
 public:
  explicit cublas_lease(cudaStream_t stream) {
    cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
    handle_ = cublas_handles::instance().take(device_);
    const cublasStatus_t status = cublasSetStream(handle_, stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      cublas_handles::instance().give(device_, handle_);
      cublas_check(status, "cublasSetStream");
    }
  }
  cublas_lease(const cublas_lease&) = delete;
  cublas_lease& operator=(const cublas_lease&) = delete;
  ~cublas_lease() { cublas_handles::instance().give(device_, handle_); }
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

constexpr int max_tree_levels = 64;
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
  for (index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x; k < N * N; k += index_t(gridDim.x) * blockDim.x) {
    const index_t major = k / N, minor = k % N;  // consecutive threads write consecutive scalars
    const index_t i = dst_rows ? major : minor, j = dst_rows ? minor : major;
    const S value = src == nullptr ? S(i == j ? 1 : 0) : src_rows ? src[i * from.form.ld + j] : src[i + j * from.form.ld];
    (dst_rows ? dst[i * to.form.ld + j] : dst[i + j * to.form.ld]) = value;
  }
}

template <class S>
void copy_matrices(const chain_matrix<const S>& from, const chain_matrix<S>& to, index_t count, index_t N,
                   cudaStream_t stream) {
  const index_t threads = std::min<index_t>(256, ((N * N + 31) / 32) * 32);
  const unsigned pieces = unsigned(std::min<index_t>((N * N + threads * 8 - 1) / (threads * 8), 1024));
  for (index_t first = 0; first < count; first += 65535) {
    const dim3 grid(pieces, unsigned(std::min<index_t>(count - first, 65535)));
    copy_chain_matrices<S><<<grid, unsigned(threads), 0, stream>>>(from, to, N, first);
    check_launch("matrix chain (copy)");
  }
}

/// Where every product of a tree lives: pointer arrays of every batched call, built in one kernel. Item
/// ranges, level by level: [first pairs: count][other pairs: count (m[l+1] - 1)][even positions: count
/// down[l]], then (prefix) [the exclusive final products: count].
template <class S>
struct chain_tree {
  matrix_sequences<const S> in;
  matrix_sequences<S> out;  // prefix only
  const S* initial = nullptr;
  S* final = nullptr;       // exclusive prefix: the final products' destination
  S* result = nullptr;      // reduce: the last pair's destination
  S* work = nullptr;
  bool reverse = false, left_to_right = true, prefix = true;
  index_t count = 0, n = 0, NN = 0, lead = 0, out_shift = 0;
  int levels = 0;                       // levels with pairs
  index_t m[max_tree_levels + 1] = {};  // chain length of each level
  index_t work_at[max_tree_levels] = {};  // each level's pairs in `work` (scalars)
  index_t item_at[max_tree_levels + 2] = {};  // each level's first item; [levels]: the final products

  PARASCAN_HD index_t pairs(int l) const { return m[l] / 2; }
  PARASCAN_HD index_t next_length(int l) const { return prefix ? m[l] / 2 : (m[l] + 1) / 2; }
  PARASCAN_HD index_t evens(int l) const { return prefix ? (m[l] - 1) / 2 : 0; }  // even positions >= 2
  PARASCAN_HD index_t time_of(index_t p) const { return reverse ? n - 1 - p : p; }

  PARASCAN_HD const S* x0(index_t s, index_t i) const {
    if (i < lead) return initial + s * NN;
    return in.origins.begin_of(s) + time_of(i - lead) * in.origins.time_stride;
  }
  /// Level-0 output slot i of chain s (null: nothing, the initial matrix's own slot).
  PARASCAN_HD S* o0(index_t s, index_t i) const {
    const index_t p = i + out_shift;
    return p < 0 ? nullptr : out.origins.begin_of(s) + time_of(p) * out.origins.time_stride;
  }
  /// Pair j of level l: in time order, so that every call's operands step in one direction (strided calls).
  PARASCAN_HD index_t slot(int l, index_t j) const { return reverse ? next_length(l) - 1 - j : j; }
  PARASCAN_HD S* w(int l, index_t s, index_t j) const {
    return work + work_at[l] + (s * next_length(l) + slot(l, j)) * NN;
  }
  PARASCAN_HD S* o(int l, index_t s, index_t j) const { return o0(s, ((j + 1) << l) - 1); }
  PARASCAN_HD const S* x(int l, index_t s, index_t j) const {
    if (l == 0) return x0(s, j);
    if (prefix && j == 0) return o(l, s, 0);
    return w(l - 1, s, j);
  }
  /// Where pair j of level l goes: its prefix slot (prefix, j = 0), `result` (reduce, the last pair).
  PARASCAN_HD S* pair_target(int l, index_t s, index_t j) const {
    if (prefix && j == 0) return o(l + 1, s, 0);
    if (!prefix && m[l] == 2) return result + s * NN;
    return w(l, s, j);
  }
  /// The pointers of item k (see the item ranges above): C = A B.
  PARASCAN_HD void item(index_t k, const S*& a, const S*& b, S*& c) const {
    int l = 0;
    while (l < levels && k >= item_at[l + 1]) ++l;
    index_t r = k - item_at[l];
    const S *earlier, *later;
    if (l == levels) {  // the exclusive final product: out[n - 1] then in[n - 1]
      const index_t s = r;
      earlier = out.origins.begin_of(s) + time_of(n - 1) * out.origins.time_stride;
      later = in.origins.begin_of(s) + time_of(n - 1) * in.origins.time_stride;
      c = final + s * NN;
    } else if (r < count * pairs(l)) {  // pair j of chain s, the first pairs of every chain first
      const index_t s = r < count ? r : (r - count) / (pairs(l) - 1);
      const index_t j = r < count ? 0 : (r - count) % (pairs(l) - 1) + 1;
      earlier = x(l, s, 2 * j);
      later = x(l, s, 2 * j + 1);
      c = pair_target(l, s, j);
    } else {  // even position 2j >= 2 of chain s: O[2j] = O[2j - 1] X[2j]
      r -= count * pairs(l);
      const index_t s = r / evens(l), j = r % evens(l) + 1;
      earlier = o(l, s, 2 * j - 1);
      later = x(l, s, 2 * j);
      c = o(l, s, 2 * j);
    }
    a = left_to_right ? earlier : later;
    b = left_to_right ? later : earlier;
  }
};

template <class S>
__global__ void build_tree_pointers(chain_tree<S> tree, index_t items, const S** a, const S** b, S** c) {
  for (index_t k = blockIdx.x * index_t(blockDim.x) + threadIdx.x; k < items; k += index_t(gridDim.x) * blockDim.x)
    tree.item(k, a[k], b[k], c[k]);
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

  cublas_lease handle(stream);
  temp_buffer work_buffer(alloc, stream, std::size_t(work) * sizeof(S));
  const index_t items = t.item_at[t.levels + 1];
  temp_buffer pointers(alloc, stream, std::size_t(items) * 3 * sizeof(void*));
  t.work = work_buffer.as<S>();
  const S** a = pointers.as<const S*>();
  const S** b = a + items;
  S** c = pointers.as<S*>() + 2 * items;
  if (items > 0) {
    const unsigned blocks = unsigned(std::min<index_t>((items + 255) / 256, 65536));
    build_tree_pointers<S><<<blocks, 256, 0, stream>>>(t, items, a, b, c);
    check_launch("matrix chain (pointers)");
  }

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
  if (prefix) {
    if (exclusive && !t.lead && n >= 1) copy_matrices<S>(chain_matrix<const S>{}, output_at(0), count, N, stream);
    if (t.m[0] >= 1 && t.out_shift >= 0) copy_matrices<S>(first_factor, output_at(t.out_shift), count, N, stream);
  }
  run_tree<S>(handle.get(), stream, t, a, b, c, in_form, out_form, dense_form, t.lead ? dense_form : in_form,
              opts.math);

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
