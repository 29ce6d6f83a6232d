// The host backend of runtime-size matrix chains (ops/runtime_matrix_chain.hpp): each chain a loop of
// Eigen dynamic-matrix products (Eigen's cache-blocked GEMM; the factors are read in place through maps
// of their storage and leading dimension). Threads take whole chains; with fewer chains than threads,
// each chain is cut into chunks: every chunk but the first is reduced to its product, the products are
// carried across the chunks in order, and every chunk is scanned from its carry (about twice the
// multiplications of a plain loop, spread over the threads). Arguments are checked by the caller.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "chain_order.hpp"
#include "host.hpp"
#include "matrix_sequences.hpp"

namespace parascan {
namespace detail {

template <class S>
using dynamic_matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

/// Calls f with an Eigen map of the N x N matrix at p, stored as `storage` with leading dimension ld.
template <class S, class F>
void with_matrix(S* p, index_t N, index_t ld, matrix_storage storage, F&& f) {
  using plain = std::remove_const_t<S>;
  using stride = Eigen::OuterStride<>;
  if (storage == matrix_storage::column_major) {
    using M = std::conditional_t<std::is_const<S>::value, const dynamic_matrix<plain>, dynamic_matrix<plain>>;
    f(Eigen::Map<M, Eigen::Unaligned, stride>(p, N, N, stride(ld)));
  } else {
    using R = Eigen::Matrix<plain, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using M = std::conditional_t<std::is_const<S>::value, const R, R>;
    f(Eigen::Map<M, Eigen::Unaligned, stride>(p, N, N, stride(ld)));
  }
}

/// The running product of a chain: empty until its first factor (so that no product with I is computed).
template <class S>
struct chain_state {
  std::optional<dynamic_matrix<S>> value;
  bool left_to_right = true;

  /// value = value * m (left_to_right) or m * value.
  template <class M>
  void absorb(const M& m) {
    if (!value) {
      value = m;
    } else if (left_to_right) {
      *value = *value * m;
    } else {
      *value = m * *value;
    }
  }
  void absorb_state(const chain_state& later) {
    if (later.value) absorb(*later.value);
  }
  dynamic_matrix<S> get(index_t N) const { return value ? *value : dynamic_matrix<S>::Identity(N, N); }
};

/// The host's view of one call: the factors, the outputs (if any) and the options.
template <class S>
struct host_chain_call {
  matrix_sequences<const S> in;
  const matrix_sequences<S>* out;  // null for a reduction
  const matrix_options<S>* opts;
  bool left_to_right;

  index_t N() const { return in.size; }
  chain_state<S> start(index_t s) const {
    chain_state<S> c{{}, left_to_right};
    if (opts->initial != nullptr)
      with_matrix(opts->initial + s * N() * N(), N(), N(), out ? out->storage : in.storage,
                  [&](const auto& m) { c.absorb(m); });
    return c;
  }
  /// Folds the factors at scan positions [p0, p1) of chain s onto c, writing outputs when `write`.
  void run(chain_state<S>& c, index_t s, index_t p0, index_t p1, bool write) const {
    const index_t n = in.length();
    for (index_t p = p0; p < p1; ++p) {
      const index_t t = time_of(p, n, opts->reverse);
      const auto put = [&] {
        with_matrix(&out->at(s, t, 0, 0), N(), out->ld, out->storage, [&](auto&& y) { y = c.get(N()); });
      };
      if (write && opts->exclusive) put();
      with_matrix(&in.at(s, t, 0, 0), N(), in.ld, in.storage, [&](const auto& m) { c.absorb(m); });
      if (write && !opts->exclusive) put();
    }
  }
  void finish(const chain_state<S>& c, index_t s, S* where, matrix_storage storage) const {
    if (where == nullptr) return;
    with_matrix(where + s * N() * N(), N(), N(), storage, [&](auto&& y) { y = c.get(N()); });
  }
};

/// Runs every chain of a call: whole chains on the workers, or chunks of each when chains are fewer than
/// workers (then `where`, the final product's destination, is written once every chunk has run).
template <class S>
void run_host_chains(const host& exec, const host_chain_call<S>& call, S* where, matrix_storage where_storage) {
  const unsigned workers = host_threads(exec);
  const index_t count = call.in.count(), n = call.in.length();
  const bool write = call.out != nullptr;
  const index_t parts = count >= index_t(workers) ? 1 : std::min<index_t>(index_t(workers) / std::max<index_t>(count, 1), n / 2);
  if (parts <= 1) {
    parallel_sequences(workers, count, [&](index_t s) {
      chain_state<S> c = call.start(s);
      call.run(c, s, 0, n, write);
      call.finish(c, s, where, where_storage);
    });
    return;
  }
  // Chunk k of chain s is task s * parts + k. Phase 1: chunk 0 runs from the initial matrix (writing),
  // the others fold their factors; phase 2: the carries, in order; phase 3: chunks 1.. rescan (writing).
  std::vector<chain_state<S>> state(std::size_t(count * parts));
  parallel_sequences(workers, count * parts, [&](index_t task) {
    const index_t s = task / parts, k = task % parts;
    chain_state<S>& c = state[std::size_t(task)];
    if (k == 0) c = call.start(s);
    c.left_to_right = call.left_to_right;
    call.run(c, s, chunk_begin(k, parts, n), chunk_begin(k + 1, parts, n), write && k == 0);
  });
  std::vector<chain_state<S>> into(state.size());  // into[s * parts + k]: the product before chunk k
  for (index_t s = 0; s < count; ++s)
    for (index_t k = 1; k < parts; ++k) {
      const std::size_t at = std::size_t(s * parts + k);
      into[at] = state[at - 1];  // through chunk k - 1
      chain_state<S> through = into[at];
      through.absorb_state(state[at]);
      state[at] = std::move(through);
    }
  if (write)
    parallel_sequences(workers, count * (parts - 1), [&](index_t task) {
      const index_t s = task / (parts - 1), k = task % (parts - 1) + 1;
      chain_state<S> c = into[std::size_t(s * parts + k)];
      call.run(c, s, chunk_begin(k, parts, n), chunk_begin(k + 1, parts, n), true);
    });
  for (index_t s = 0; s < count; ++s) call.finish(state[std::size_t(s * parts + parts - 1)], s, where, where_storage);
}

/// One chain's backward pass (chain_backward, left_to_right), in scan order p (the forward's). With L[p] the
/// product before step p (the initial matrix or I at p = 0) and R[p] the gradient that reaches product p
/// from the loss, R[p] = G[p] + R[p + 1] M[p + 1]^T (R[n - 1] = G[n - 1] + dL/d(final)), each factor's
/// gradient is L[p]^T R[p] and the initial matrix's R[0] M[0]^T. A prefix's G[p] is dL/dout[p] (an
/// exclusive scan's out[p + 1]: its out[p] is L[p]); a reduction has only dL/d(result), and its L[p] is
/// first written into grad_in (read back before that step's gradient replaces it).
template <class S>
void chain_backward_on_host(const chain_backward<S>& c, index_t s) {
  using matrix = dynamic_matrix<S>;
  const index_t n = c.in.length(), N = c.in.size;
  const auto& o = c.opts;
  const auto time = [&](index_t p) { return time_of(p, n, o.reverse); };
  const auto read = [&](const auto& view, index_t p) {
    matrix m;
    with_matrix(&view.at(s, time(p), 0, 0), N, view.ld, view.storage, [&](const auto& x) { m = x; });
    return m;
  };
  const auto read_dense = [&](const S* base, matrix& m) {
    if (base != nullptr) with_matrix(base + s * N * N, N, N, c.dense_storage, [&](const auto& x) { m += x; });
  };
  const auto write = [&](const matrix& m, index_t p) {
    with_matrix(&c.grad_in.at(s, time(p), 0, 0), N, c.grad_in.ld, c.grad_in.storage, [&](auto&& y) { y = m; });
  };
  matrix initial = o.initial != nullptr ? matrix(matrix::Zero(N, N)) : matrix(matrix::Identity(N, N));
  read_dense(o.initial, initial);
  if (!c.prefix) {  // the products before each step
    matrix before = initial;
    for (index_t p = 0; p < n; ++p) {
      write(before, p);
      before = before * read(c.in, p);
    }
  }
  // The gradient reaching the product of step p from the outputs: an exclusive scan's out[p + 1].
  const index_t lag = o.exclusive ? 1 : 0;
  matrix r = matrix::Zero(N, N);
  read_dense(c.prefix ? o.grad_final : c.grad_result, r);
  for (index_t p = n - 1; p >= 0; --p) {
    if (p < n - 1) r = (r * read(c.in, p + 1).transpose()).eval();
    if (c.prefix && p + lag < n) r += read(c.grad_out, p + lag);
    const matrix before = !c.prefix ? read(c.grad_in, p) : o.exclusive ? read(c.out, p)
                          : p > 0                        ? read(c.out, p - 1)
                                                         : initial;
    write(before.transpose() * r, p);
  }
  if (o.grad_initial == nullptr) return;
  if (n > 0) r = (r * read(c.in, 0).transpose()).eval();
  if (c.prefix && o.exclusive && n > 0) r += read(c.grad_out, 0);
  with_matrix(o.grad_initial + s * N * N, N, N, c.dense_storage, [&](auto&& y) { y = r; });
}

}  // namespace detail

/// matrix_chain_backward and matrix_chain_product_backward on the host (ops/runtime_matrix_chain.hpp, once
/// the arguments are checked): each chain's recurrence in a loop, threads over chains.
template <class S>
void run_matrix_chain_backward(const host& exec, const detail::chain_backward<S>& call) {
  detail::parallel_sequences(detail::host_threads(exec), call.in.count(),
                             [&](index_t s) { detail::chain_backward_on_host(call, s); });
}

/// matrix_chain on the host (called by ops/runtime_matrix_chain.hpp once the arguments are checked).
template <class S>
void run_matrix_chain(const host& exec, chain_order order, const matrix_sequences<const S>& in,
                      const matrix_sequences<S>& out, const matrix_options<S>& opts) {
  const detail::host_chain_call<S> call{in, &out, &opts, order == chain_order::left_to_right};
  detail::run_host_chains(exec, call, opts.final, out.storage);
}

/// matrix_chain_product on the host.
template <class S>
void run_matrix_chain_product(const host& exec, chain_order order, const matrix_sequences<const S>& in, S* result,
                              const matrix_options<S>& opts) {
  const detail::host_chain_call<S> call{in, nullptr, &opts, order == chain_order::left_to_right};
  detail::run_host_chains(exec, call, result, in.storage);
}

}  // namespace parascan
