// Cumulative (prefix) and chain (reduce) products of matrices whose size N is known only at run time
// (matrix_sequences.hpp): float or double, any N >= 1, row- or column-major, any leading dimension.
// The same contracts as the fixed-size matrix_chain / matrix_chain_product of matrix_product.hpp (order,
// reverse, exclusive, initial, final), through one backend each:
//   parascan::host: each chain a loop of Eigen dynamic-matrix products; threads over chains, and a chain cut
//     into chunks (reduced, carried, rescanned) when there are fewer chains than threads
//     (host_matrix_chain.hpp);
//   parascan::cuda: cuBLAS batched GEMMs over the levels of a tree (include <parascan/cuda_matrices.cuh> and
//     link CUDA::cublas; cuda/cublas_chain.cuh).
// For N <= 32 known at compile time, Eigen fixed-size matrices and matrix_product.hpp are faster.
//
// Example, 8 chains of 1000 row-major 256 x 256 matrices (a contiguous (8, 1000, 256, 256) tensor):
//   parascan::matrix_chain(parascan::cuda{}, parascan::dense_chains<const float>(m, 8, 1000, 256),
//                          parascan::dense_chains(p, 8, 1000, 256));
#pragma once

#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include <parascan/host_matrix_chain.hpp>
#include <parascan/matrix_sequences.hpp>
#include <parascan/ops/matrix_product.hpp>
#include <parascan/validate.hpp>

namespace parascan {

namespace detail {

template <class>
struct always_false : std::false_type {};

/// The axes of every scalar a view of matrices addresses: (stride, extent) in scalars.
template <class S>
void matrix_axes(const matrix_sequences<S>& v, std::pair<index_t, index_t> (&axes)[5]) {
  const auto& o = v.origins;
  axes[0] = {o.stride[0], o.extent[0]};
  axes[1] = {o.stride[1], o.extent[1]};
  axes[2] = {o.time_stride, o.length};
  axes[3] = {1, v.size};
  axes[4] = {v.ld, v.size};
}

template <class S>
address_set address_set_of(const matrix_sequences<S>& v) {
  std::pair<index_t, index_t> axes[5];
  matrix_axes(v, axes);
  address_set set;
  set.base = reinterpret_cast<std::uintptr_t>(v.origins.data);
  set.size = sizeof(S);
  for (int i = 0; i < 5; ++i) {
    set.step[i] = std::int64_t(axes[i].first) * std::int64_t(sizeof(S));
    set.count[i] = axes[i].second;
  }
  return set;
}

/// [lo, hi) of every byte a view of matrices addresses (validated views only).
template <class S>
byte_span span_of(const matrix_sequences<S>& v) {
  if (v.count() == 0 || v.length() == 0 || v.origins.data == nullptr) return {};
  std::pair<index_t, index_t> axes[5];
  matrix_axes(v, axes);
  index_t last = 0;
  for (const auto& a : axes) last += a.first * (a.second - 1);
  const auto lo = reinterpret_cast<std::uintptr_t>(v.origins.data);
  return {lo, lo + std::uintptr_t(last + 1) * sizeof(S)};
}

/// Checks one view of matrices on its own: a uniform batch (not packed), N >= 1, ld >= N, and a reach
/// that fits 64 bits.
template <class S>
void check_matrix_view(const matrix_sequences<S>& v, const std::string& name) {
  if (v.origins.packed())
    fail(name + ".origins.offsets", "a uniform batch (runtime-size matrix chains take no packed layout)");
  check_view(v.origins, name + ".origins");
  if (v.size < 1) fail(name + ".size", "N >= 1, got " + std::to_string(v.size));
  if (v.ld < v.size)
    fail(name + ".ld", "a leading dimension >= N = " + std::to_string(v.size) + ", got " + std::to_string(v.ld));
  std::pair<index_t, index_t> axes[5];
  matrix_axes(v, axes);
  const bool fits = reach_fits(axes, 5, std::numeric_limits<index_t>::max() / index_t(sizeof(S)));
  if (!fits) fail(name + ".ld", "strides, extents and N whose farthest byte offset fits 64 bits");
}

/// Whether two views of matrices share a byte: no, yes, or unknown when the exact search runs past its
/// budget (long chains of matrices interleaved with the other view's, say).
template <class S, class U>
overlap matrices_overlap(const matrix_sequences<S>& a, const matrix_sequences<U>& b) {
  if (!span_of(a).overlaps(span_of(b))) return overlap::no;
  return shares_bytes(address_set_of(a), address_set_of(b));
}

/// One dense N x N matrix a chain (initial, final, result): count * N * N scalars.
template <class S>
byte_span per_chain_span(const S* p, index_t count, index_t N) {
  const index_t scalars = product_within(count, N * N, std::numeric_limits<index_t>::max() / index_t(sizeof(S)));
  if (scalars < 0) fail("in", "fewer chains: one N x N matrix a chain must fit 64-bit byte offsets");
  return span_of(p, scalars);
}

template <class S>
void check_math(matrix_math math) {
  if (std::is_same<S, double>::value && math != matrix_math::exact)
    fail("options.math", "matrix_math::exact for double matrices (tf32 and bf16 multiply float matrices)");
}
template <class S>
void check_math(const matrix_options<S>& opts) {
  check_math<S>(opts.math);
}

/// Every check of a runtime-size matrix_chain call, before anything is written.
template <class S>
void check_runtime_chain(const matrix_sequences<const S>& in, const matrix_sequences<S>& out,
                         const matrix_options<S>& opts) {
  check_matrix_view(in, "in");
  check_matrix_view(out, "out");
  if (in.origins.extent[0] != out.origins.extent[0] || in.origins.extent[1] != out.origins.extent[1] ||
      in.length() != out.length())
    fail("out.origins", "the input's shape: batch extents (" + std::to_string(in.origins.extent[0]) + ", " +
                            std::to_string(in.origins.extent[1]) + ") and length " + std::to_string(in.length()));
  if (in.size != out.size)
    fail("out.size", "the input's N = " + std::to_string(in.size) + ", got " + std::to_string(out.size));
  std::pair<index_t, index_t> axes[5];
  matrix_axes(out, axes);
  if (out.count() > 0 && out.length() > 0 && !strides_keep_apart(axes, 5))
    fail("out", "strides, ld and N that never place two entries at one address (an output cannot broadcast)");
  const overlap shared = matrices_overlap(in, out);
  if (shared == overlap::yes) fail("out", "no overlap with in (runtime-size chains do not run in place)");
  if (shared == overlap::unknown)
    fail("out", "views whose separation from in can be decided (the search over their interleaved addresses ran "
                "past its budget): pass separate buffers");
  check_math(opts);
  const index_t count = out.count(), N = out.size;
  const byte_span initial = per_chain_span(opts.initial, count, N), final = per_chain_span(opts.final, count, N);
  const byte_span outs = span_of(out), ins = span_of(in);
  if (initial.overlaps(outs)) fail("options.initial", "no overlap with out");
  if (final.overlaps(outs)) fail("options.final", "no overlap with out");
  if (final.overlaps(ins)) fail("options.final", "no overlap with in");
  if (initial.overlaps(final) && (initial.lo != final.lo || initial.hi != final.hi))
    fail("options.final", "either exactly options.initial (products carried from call to call) or no overlap with it");
}

/// Every check of a runtime-size matrix_chain_product call.
template <class S>
void check_runtime_chain_product(const matrix_sequences<const S>& in, const S* result,
                                 const matrix_options<S>& opts) {
  check_matrix_view(in, "in");
  check_math(opts);
  if (opts.exclusive) fail("options.exclusive", "false for a reduction (the product of every matrix)");
  if (opts.final != nullptr) fail("options.final", "null for a reduction (the result is the final product)");
  const index_t count = in.count(), N = in.size;
  if (result == nullptr && count > 0) fail("result", "a non-null pointer to one N x N matrix a chain");
  const byte_span res = per_chain_span(result, count, N);
  if (res.overlaps(span_of(in))) fail("result", "no overlap with in");
  if (res.overlaps(per_chain_span(opts.initial, count, N))) fail("result", "no overlap with options.initial");
}

/// Every check of a runtime-size chain's backward call, before anything is written.
template <class S>
void check_runtime_chain_backward(const chain_backward<S>& c) {
  const auto& in = c.in;
  check_matrix_view(in, "in");
  const auto like_in = [&](const auto& v, const std::string& name) {
    check_matrix_view(v, name);
    if (v.origins.extent[0] != in.origins.extent[0] || v.origins.extent[1] != in.origins.extent[1] ||
        v.length() != in.length())
      fail(name + ".origins", "the input's shape: batch extents (" + std::to_string(in.origins.extent[0]) + ", " +
                                  std::to_string(in.origins.extent[1]) + ") and length " +
                                  std::to_string(in.length()));
    if (v.size != in.size)
      fail(name + ".size", "the input's N = " + std::to_string(in.size) + ", got " + std::to_string(v.size));
  };
  if (c.prefix) {
    like_in(c.out, "out");
    like_in(c.grad_out, "grad_out");
  }
  like_in(c.grad_in, "grad_in");
  std::pair<index_t, index_t> axes[5];
  matrix_axes(c.grad_in, axes);
  if (c.grad_in.count() > 0 && c.grad_in.length() > 0 && !strides_keep_apart(axes, 5))
    fail("grad_in", "strides, ld and N that never place two entries at one address (an output cannot broadcast)");
  const auto apart = [&](const auto& v, const char* name) {
    const overlap shared = matrices_overlap(v, c.grad_in);
    if (shared == overlap::yes) fail("grad_in", std::string("no overlap with ") + name);
    if (shared == overlap::unknown)
      fail("grad_in", std::string("views whose separation from ") + name +
                          " can be decided (the search over their interleaved addresses ran past its budget): "
                          "pass separate buffers");
  };
  apart(in, "in");
  if (c.prefix) {
    apart(c.out, "out");
    apart(c.grad_out, "grad_out");
  }
  check_math<S>(c.opts.math);
  if (!c.prefix) {
    if (c.opts.exclusive) fail("options.exclusive", "false for a reduction (the product of every matrix)");
    if (c.opts.grad_final != nullptr)
      fail("options.grad_final", "null: the result's gradient is the argument grad_result");
    if (c.grad_result == nullptr && in.count() > 0)
      fail("grad_result", "a non-null pointer to one N x N matrix a chain");
  }
  const index_t count = in.count(), N = in.size;
  const byte_span written = span_of(c.grad_in), grad_initial = per_chain_span(c.opts.grad_initial, count, N);
  const std::pair<byte_span, const char*> read[] = {
      {span_of(in), "in"},
      {c.prefix ? span_of(c.out) : byte_span{}, "out"},
      {c.prefix ? span_of(c.grad_out) : byte_span{}, "grad_out"},
      {per_chain_span(c.opts.initial, count, N), "options.initial"},
      {per_chain_span(c.opts.grad_final, count, N), "options.grad_final"},
      {per_chain_span(c.grad_result, count, N), "grad_result"}};
  for (int k = 3; k < 6; ++k)
    if (written.overlaps(read[k].first)) fail("grad_in", std::string("no overlap with ") + read[k].second);
  if (grad_initial.overlaps(written)) fail("options.grad_initial", "no overlap with grad_in");
  for (const auto& r : read)
    if (grad_initial.overlaps(r.first)) fail("options.grad_initial", std::string("no overlap with ") + r.second);
}

}  // namespace detail

/// The backend of an execution policy without one for runtime-size matrices (see the top of this header).
template <class Exec, class S>
void run_matrix_chain(const Exec&, chain_order, const matrix_sequences<const S>&, const matrix_sequences<S>&,
                      const matrix_options<S>&) {
  static_assert(detail::always_false<Exec>::value,
                "parascan: runtime-size matrix chains on this execution policy need its backend: "
                "#include <parascan/cuda_matrices.cuh> for parascan::cuda (and link CUDA::cublas)");
}
template <class Exec, class S>
void run_matrix_chain_product(const Exec&, chain_order, const matrix_sequences<const S>&, S*,
                              const matrix_options<S>&) {
  static_assert(detail::always_false<Exec>::value,
                "parascan: runtime-size matrix chains on this execution policy need its backend: "
                "#include <parascan/cuda_matrices.cuh> for parascan::cuda (and link CUDA::cublas)");
}
template <class Exec, class S>
void run_matrix_chain_backward(const Exec&, const detail::chain_backward<S>&) {
  static_assert(detail::always_false<Exec>::value,
                "parascan: runtime-size matrix chains on this execution policy need its backend: "
                "#include <parascan/cuda_matrices.cuh> for parascan::cuda (and link CUDA::cublas)");
}

/// Cumulative products of runtime-size matrices: out[t] = M[0] ... M[t] (left_to_right) or M[t] ... M[0]
/// (right_to_left) for every chain, with the options of matrix_product.hpp's matrix_chain. `in` and `out`
/// share their batch shape and N, may differ in storage and leading dimension, and may not overlap.
template <chain_order Order = chain_order::left_to_right, class Exec, class S>
void matrix_chain(const Exec& exec, const matrix_sequences<S>& in, const matrix_sequences<std::remove_const_t<S>>& out,
                  const matrix_options<std::remove_const_t<S>>& opts = {}) {
  using scalar = std::remove_const_t<S>;
  static_assert(std::is_same<scalar, float>::value || std::is_same<scalar, double>::value,
                "parascan: runtime-size matrix chains take float or double matrices");
  const matrix_sequences<const scalar> factors = in;
  detail::check_runtime_chain(factors, out, opts);
  run_matrix_chain(exec, Order, factors, out, opts);
}

/// Chain products of runtime-size matrices: result[s] = the product of every matrix of chain s (one dense
/// N x N matrix a chain, stored like `in`), from options.initial when given.
template <chain_order Order = chain_order::left_to_right, class Exec, class S>
void matrix_chain_product(const Exec& exec, const matrix_sequences<S>& in, std::remove_const_t<S>* result,
                          const matrix_options<std::remove_const_t<S>>& opts = {}) {
  using scalar = std::remove_const_t<S>;
  static_assert(std::is_same<scalar, float>::value || std::is_same<scalar, double>::value,
                "parascan: runtime-size matrix chains take float or double matrices");
  const matrix_sequences<const scalar> factors = in;
  detail::check_runtime_chain_product(factors, result, opts);
  run_matrix_chain_product(exec, Order, factors, result, opts);
}

namespace detail {
/// The same matrices, read-only (a view of const or writable scalars).
template <class S>
matrix_sequences<const std::remove_const_t<S>> read_only(const matrix_sequences<S>& v) {
  return {v.origins, v.size, v.ld, v.storage};
}
/// Checks a backward call and runs it on the backend, left_to_right (right_to_left: on the transposes).
template <chain_order Order, class Exec, class S>
void run_checked_backward(const Exec& exec, const chain_backward<S>& call) {
  check_runtime_chain_backward(call);
  run_matrix_chain_backward(exec, Order == chain_order::left_to_right ? call : call.transposed_call());
}
}  // namespace detail

/// Gradients of out = matrix_chain<Order>(in, out, {reverse, exclusive, initial}) for a loss L, from the
/// factors `in`, the products `out` and the upstream gradient `grad_out` (dL/dout[t] of each product
/// alone): grad_in = dL/din. options.grad_final adds dL/d(final product), options.grad_initial receives
/// dL/d(initial matrix) (each one dense N x N matrix a chain, stored like out, as options.initial is).
/// Every view has in's batch shape and N (storage and leading dimension free); grad_in shares no byte with
/// any other argument. The gradient that reaches each product from the later ones, R[t] = dL/dout[t] +
/// R[t+1] M[t+1]^T, is an affine recurrence: on the GPU, a runtime-size chain of the (2N x 2N) matrices
/// [[M[t+1]^T, 0], [dL/dout[t], I]] (its products' lower-left blocks are R), then dL/dM[t] = out[t-1]^T
/// R[t] as batched GEMMs; workspace about 12 N^2 scalars a step. The host runs each chain's recurrence
/// in a loop (threads over chains).
template <chain_order Order = chain_order::left_to_right, class Exec, class S, class P, class G>
void matrix_chain_backward(const Exec& exec, const matrix_sequences<S>& in, const matrix_sequences<P>& out,
                           const matrix_sequences<G>& grad_out, const matrix_sequences<std::remove_const_t<S>>& grad_in,
                           const matrix_backward_options<std::remove_const_t<S>>& opts = {}) {
  using scalar = std::remove_const_t<S>;
  static_assert(std::is_same<scalar, float>::value || std::is_same<scalar, double>::value,
                "parascan: runtime-size matrix chains take float or double matrices");
  static_assert(std::is_same<std::remove_const_t<P>, scalar>::value &&
                    std::is_same<std::remove_const_t<G>, scalar>::value,
                "parascan: matrix_chain_backward: in, out, grad_out and grad_in hold one scalar type");
  detail::chain_backward<scalar> call;
  call.in = detail::read_only(in);
  call.out = detail::read_only(out);
  call.grad_out = detail::read_only(grad_out);
  call.grad_in = grad_in;
  call.opts = opts;
  call.dense_storage = out.storage;
  detail::run_checked_backward<Order>(exec, call);
}

/// Gradients of result = matrix_chain_product<Order>(in, result, {reverse, initial}) for a loss L, from the
/// factors `in` and dL/d(result), `grad_result` (one dense N x N matrix a chain, stored like in):
/// grad_in = dL/din; options.grad_initial receives dL/d(initial matrix) (stored like in). options.grad_final
/// stays null and options.exclusive false. grad_in has in's batch shape and N and shares no byte with any
/// other argument. dL/dM[t] = L[t]^T R[t], L[t] the product before step t and R[t] = G (M[t+1] ... M[T-1])^T
/// (left_to_right): on the GPU two runtime-size chains (the products before each step; the transposes
/// from the end, seeded with G) and batched GEMMs, workspace 2 N^2 scalars a step besides the chains';
/// on the host a loop a chain (threads over chains).
template <chain_order Order = chain_order::left_to_right, class Exec, class S>
void matrix_chain_product_backward(const Exec& exec, const matrix_sequences<S>& in,
                                   const std::remove_const_t<S>* grad_result,
                                   const matrix_sequences<std::remove_const_t<S>>& grad_in,
                                   const matrix_backward_options<std::remove_const_t<S>>& opts = {}) {
  using scalar = std::remove_const_t<S>;
  static_assert(std::is_same<scalar, float>::value || std::is_same<scalar, double>::value,
                "parascan: runtime-size matrix chains take float or double matrices");
  detail::chain_backward<scalar> call;
  call.in = detail::read_only(in);
  call.grad_in = grad_in;
  call.grad_result = grad_result;
  call.opts = opts;
  call.prefix = false;
  call.dense_storage = in.storage;
  detail::run_checked_backward<Order>(exec, call);
}

}  // namespace parascan
