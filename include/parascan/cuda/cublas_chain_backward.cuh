// The CUDA backend of runtime-size matrix chains' backward passes (ops/runtime_matrix_chain.hpp:
// matrix_chain_backward, matrix_chain_product_backward), from the forward's cuBLAS tree (cublas_chain.cuh)
// and batched GEMMs. In scan order p, with L[p] the product before step p and R[p] the gradient reaching
// product p from the loss, each factor's gradient is L[p]^T R[p] (left_to_right; a right_to_left call
// arrives transposed, chain_backward).
//
// Reduction: R[p] = G M[n-1]^T ... M[p+1]^T is itself a chain, of the transposes from the end seeded
// with G = dL/d(result): two tree calls (L into one workspace, R into another, its final product
// dL/d(initial)) and one batched GEMM.
// Prefix: R[p] = G[p] + R[p+1] M[p+1]^T is an affine recurrence. Its steps compose as the 2N x 2N matrices
// E[k] = [[M[k]^T, 0], [W[k], I]] (W[k]: the gradient reaching the product of the first k steps), since
// [R, I] E = [R M^T + W, I]: a tree call over E from the end gives products whose lower-left blocks are
// R[k - 1] and, at k = 0, dL/d(initial); then one batched GEMM. Workspace: E and its products (8 N^2
// scalars a step) and the tree's own (about 4 N^2); the upper-left blocks (products of transposes inside
// the tree, zero in every P[k] since E[n]'s is) are computed and never read, about half the arithmetic.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <string>

#include "cublas_chain.cuh"

namespace parascan {
namespace detail {

/// Writes E[k] of the prefix's affine chain for k = 0 .. n of every chain (row-major 2N x 2N, dense, chain
/// after chain, in scan order): upper-left M[k]^T (zero at k = n), lower-left W[k] (an inclusive scan's
/// G[k - 1], an exclusive one's G[k], plus dL/d(final) at k = n), upper-right zero, lower-right I.
template <class S>
struct affine_chain_steps {
  matrix_sequences<const S> in, grad_out;
  const S* grad_final = nullptr;
  matrix_storage dense_storage = matrix_storage::row_major;
  S* steps = nullptr;
  index_t count = 0, n = 0, N = 0;
  bool reverse = false, exclusive = false;

  PARASCAN_HD index_t time_of(index_t p) const { return reverse ? n - 1 - p : p; }
  PARASCAN_HD S entry(index_t s, index_t k, index_t i, index_t j) const {
    if (i < N) return j < N && k < n ? in.at(s, time_of(k), j, i) : S(0);
    if (j >= N) return S(i == j ? 1 : 0);
    i -= N;
    const index_t from = exclusive ? k : k - 1;  // the step whose output is the product of k factors
    S w = from >= 0 && from < n ? grad_out.at(s, time_of(from), i, j) : S(0);
    if (k == n && grad_final != nullptr)
      w += grad_final[s * N * N + (dense_storage == matrix_storage::row_major ? i * N + j : i + j * N)];
    return w;
  }
};

template <class S>
__global__ void write_affine_chain_steps(affine_chain_steps<S> a) {
  const index_t side = 2 * a.N, per_step = side * side, total = a.count * (a.n + 1) * per_step;
  for (index_t e = blockIdx.x * index_t(blockDim.x) + threadIdx.x; e < total; e += index_t(gridDim.x) * blockDim.x) {
    const index_t step = e / per_step, within = e % per_step;
    a.steps[e] = a.entry(step / (a.n + 1), step % (a.n + 1), within / side, within % side);
  }
}

/// One operand of the gradients' batched GEMM at scan position p of chain s: a view's matrix at step p +
/// shift (in time order when `by_time`, else in scan order), or a dense matrix a chain when p + shift < 0
/// (the initial matrix, before the first step).
template <class S>
struct step_operand {
  matrix_sequences<const S> view;
  index_t shift = 0;
  bool by_time = true;
  const S* before_first = nullptr;

  PARASCAN_HD const S* at(index_t s, index_t p, index_t n, bool reverse) const {
    const index_t q = p + shift;
    if (q < 0) return before_first + s * view.size * view.size;
    return &view.at(s, by_time && reverse ? n - 1 - q : q, 0, 0);
  }
};

/// Pointer arrays of grad_in[p] = A[p]^T B[p] for scan positions [first, last) of every chain (chain-major).
template <class S>
__global__ void write_gradient_pointers(step_operand<S> a, step_operand<S> b, matrix_sequences<S> grad_in,
                                        index_t first, index_t last, bool reverse, const S** pa, const S** pb,
                                        S** pc) {
  const index_t per_chain = last - first, n = grad_in.length(), items = grad_in.count() * per_chain;
  for (index_t k = blockIdx.x * index_t(blockDim.x) + threadIdx.x; k < items; k += index_t(gridDim.x) * blockDim.x) {
    const index_t s = k / per_chain, p = first + k % per_chain;
    pa[k] = a.at(s, p, n, reverse);
    pb[k] = b.at(s, p, n, reverse);
    pc[k] = &grad_in.at(s, reverse ? n - 1 - p : p, 0, 0);
  }
}

/// grad_in[p] = A[p]^T B[p] for scan positions [first, last) of every chain, through pointer arrays (any
/// placement). A is read transposed: its storage order swapped over the same scalars.
template <class S>
void gradient_products(cublasHandle_t handle, cudaStream_t stream, temp_allocator& alloc, const step_operand<S>& a,
                       operand_form a_form, const step_operand<S>& b, operand_form b_form,
                       const matrix_sequences<S>& grad_in, index_t first, index_t last, bool reverse,
                       matrix_math math) {
  const index_t items = grad_in.count() * (last - first);
  if (items <= 0) return;
  temp_buffer pointers(alloc, stream, std::size_t(items) * 3 * sizeof(void*));
  const S** pa = pointers.as<const S*>();
  const S** pb = pa + items;
  S** pc = pointers.as<S*>() + 2 * items;
  const unsigned blocks = unsigned(std::min<index_t>((items + 255) / 256, 65536));
  write_gradient_pointers<S><<<blocks, 256, 0, stream>>>(a, b, grad_in, first, last, reverse, pa, pb, pc);
  check_launch("matrix chain backward (pointers)");
  const operand_form a_transposed{transposed(a_form.storage), a_form.ld};
  batched_products<S>(handle, grad_in.size, a_transposed, b_form, operand_form{grad_in.storage, grad_in.ld}, pa, pb,
                      pc, items, math);
}

/// The prefix's backward pass (see the top of this file).
template <class S>
void chain_backward_prefix(cudaStream_t stream, temp_allocator& alloc, const chain_backward<S>& c) {
  const index_t count = c.in.count(), n = c.in.length(), N = c.in.size, side = 2 * N, square = side * side;
  const auto& o = c.opts;
  // E[k], k = 0 .. n, and its products from the end: P[k] = E[n] E[n-1] ... E[k].
  const index_t total = count * (n + 1) * square;
  temp_buffer steps(alloc, stream, std::size_t(total) * sizeof(S));
  temp_buffer products(alloc, stream, std::size_t(total) * sizeof(S));
  affine_chain_steps<S> a;
  a.in = c.in;
  a.grad_out = c.grad_out;
  a.grad_final = o.grad_final;
  a.dense_storage = c.dense_storage;
  a.steps = steps.as<S>();
  a.count = count;
  a.n = n;
  a.N = N;
  a.reverse = o.reverse;
  a.exclusive = o.exclusive;
  write_affine_chain_steps<S><<<unsigned(std::min<index_t>((total + 255) / 256, 65536)), 256, 0, stream>>>(a);
  check_launch("matrix chain backward (affine steps)");
  matrix_options<S> scan;
  scan.reverse = true;
  scan.math = o.math;
  const matrix_sequences<S> chain_products = dense_chains(products.as<S>(), count, n + 1, side);
  run_cublas_chain<S>(stream, alloc, chain_order::left_to_right,
                      dense_chains<const S>(steps.as<S>(), count, n + 1, side), &chain_products, scan, nullptr);

  // R[p] (scan order): the lower-left block of P[p + 1]; dL/d(initial): that of P[0].
  const S* lower_left = products.as<S>() + N * side;
  step_operand<S> r;
  r.view = matrices_at(strided<const S>(lower_left, count, 1, (n + 1) * square, 0, n + 1, square), N, side,
                       matrix_storage::row_major);
  r.shift = 1;
  r.by_time = false;
  const operand_form r_form{matrix_storage::row_major, side};
  const auto r_at = [&](index_t k) {  // the lower-left block of P[k] of every chain
    chain_matrix<const S> m;
    m.dense = lower_left + k * square;
    m.chain_stride = (n + 1) * square;
    m.form = r_form;
    return m;
  };
  // L[p]: an exclusive scan's out[p]; an inclusive one's out[p - 1], the initial matrix (or I) at p = 0.
  step_operand<S> before;
  before.view = c.out;
  before.shift = o.exclusive ? 0 : -1;
  before.before_first = o.initial;
  const operand_form out_form{c.out.storage, c.out.ld}, dense_form{c.dense_storage, N};
  cublas_lease handle(stream);
  if (n > 0 && !o.exclusive) {
    if (o.initial != nullptr) {
      gradient_products<S>(handle.get(), stream, alloc, before, dense_form, r, r_form, c.grad_in, 0, 1, o.reverse,
                           o.math);
    } else {  // L[0] = I: the gradient is R[0]
      chain_matrix<S> to;
      to.view = c.grad_in.origins;
      to.t = o.reverse ? n - 1 : 0;
      to.form = operand_form{c.grad_in.storage, c.grad_in.ld};
      copy_matrices<S>(r_at(1), to, count, N, stream);
    }
  }
  gradient_products<S>(handle.get(), stream, alloc, before, out_form, r, r_form, c.grad_in, o.exclusive ? 0 : 1, n,
                       o.reverse, o.math);
  if (o.grad_initial != nullptr) {
    chain_matrix<S> to;
    to.dense = o.grad_initial;
    to.chain_stride = N * N;
    to.form = dense_form;
    copy_matrices<S>(r_at(0), to, count, N, stream);
  }
}

/// The reduction's backward pass (see the top of this file).
template <class S>
void chain_backward_reduce(cudaStream_t stream, temp_allocator& alloc, const chain_backward<S>& c) {
  const index_t count = c.in.count(), n = c.in.length(), N = c.in.size;
  const auto& o = c.opts;
  temp_buffer before_steps(alloc, stream, std::size_t(count * n * N * N) * sizeof(S));
  temp_buffer after_steps(alloc, stream, std::size_t(count * n * N * N) * sizeof(S));
  // Both workspaces in time order, stored like in (as the initial matrix, G and dL/d(initial) are).
  const matrix_sequences<S> before = dense_chains(before_steps.as<S>(), count, n, N, c.in.storage);
  const matrix_sequences<S> after = dense_chains(after_steps.as<S>(), count, n, N, c.in.storage);
  matrix_options<S> forward;
  forward.exclusive = true;
  forward.reverse = o.reverse;
  forward.initial = o.initial;
  forward.math = o.math;
  if (n > 0) run_cublas_chain<S>(stream, alloc, chain_order::left_to_right, c.in, &before, forward, nullptr);
  // R[p] = G M[n-1]^T ... M[p+1]^T: the transposes from the end, exclusive, from G; the final is dL/d(initial).
  matrix_options<S> backward;
  backward.exclusive = true;
  backward.reverse = !o.reverse;
  backward.initial = c.grad_result;
  backward.final = o.grad_initial;
  backward.math = o.math;
  run_cublas_chain<S>(stream, alloc, chain_order::left_to_right, transposed(c.in), &after, backward, nullptr);
  step_operand<S> l, r;
  l.view = before;
  r.view = after;
  const operand_form dense_form{c.in.storage, N};
  cublas_lease handle(stream);
  gradient_products<S>(handle.get(), stream, alloc, l, dense_form, r, dense_form, c.grad_in, 0, n, o.reverse, o.math);
}

}  // namespace detail

/// matrix_chain_backward and matrix_chain_product_backward on the GPU (called by ops/runtime_matrix_chain.hpp
/// once the arguments are checked).
template <class S>
void run_matrix_chain_backward(const cuda& exec, const detail::chain_backward<S>& call) {
  const auto device_memory = [](const void* p, bool used, const char* name) {
    if (used) detail::require_device_pointer(p, name);
  };
  const index_t count = call.in.count(), n = call.in.length();
  device_memory(call.in.origins.data, count > 0 && n > 0, "in.origins.data");
  device_memory(call.grad_in.origins.data, count > 0 && n > 0, "grad_in.origins.data");
  if (call.prefix) {
    device_memory(call.out.origins.data, count > 0 && n > 0, "out.origins.data");
    device_memory(call.grad_out.origins.data, count > 0 && n > 0, "grad_out.origins.data");
  }
  device_memory(call.opts.initial, count > 0, "options.initial");
  device_memory(call.opts.grad_final, count > 0, "options.grad_final");
  device_memory(call.opts.grad_initial, count > 0, "options.grad_initial");
  device_memory(call.grad_result, count > 0, "grad_result");
  const index_t dimensions[5] = {call.in.size, call.in.ld, call.out.ld, call.grad_out.ld, call.grad_in.ld};
  for (const index_t v : dimensions)
    if (v > INT_MAX)
      detail::fail("ld", "N and leading dimensions below 2^31 on the GPU (cuBLAS), got " + std::to_string(v));
  if (count == 0) return;
  if (call.prefix)
    detail::chain_backward_prefix<S>(exec.stream, detail::allocator_of(exec), call);
  else
    detail::chain_backward_reduce<S>(exec.stream, detail::allocator_of(exec), call);
}

}  // namespace parascan
