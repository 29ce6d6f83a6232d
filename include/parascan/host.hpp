// The host backend: parascan::host{threads}. Sequential per sequence, threads over sequences, and a
// three-phase chunked scan when a batch has fewer sequences than threads and they are long: worker 0
// scans the first chunk while the others reduce theirs, the chunk totals are scanned, and every worker
// rescans one of the remaining chunks from its carry. Needs no CUDA toolkit.
#pragma once

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "error.hpp"
#include "host_pool.hpp"
#include "inputs.hpp"
#include "layout.hpp"
#include "operator_traits.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "policy.hpp"
#include "validate.hpp"

namespace parascan {

/// Host execution: `threads` worker threads (0: one per hardware thread).
struct host {
  unsigned threads = 0;
};

/// Memory the backend reads and writes, for wrappers that run several scans and check every pointer
/// first (found by argument-dependent lookup from the execution policy): any pointer on the host.
inline void require_backend_memory(const host&, const void*, const std::string&) {}

/// A view whose offsets the host can read, for such wrappers' checks: on the host, the view itself.
template <class T>
const sequences<T>& host_readable(const host&, const sequences<T>& v, std::vector<index_t>&) {
  return v;
}

namespace detail {

/// The most worker threads a call may ask for.
constexpr unsigned max_host_threads = 4096;

inline unsigned host_threads(const host& exec) {
  static const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());  // read once: ~7 us a query
  if (exec.threads > max_host_threads)
    fail("host.threads", "at most " + std::to_string(max_host_threads) +
                             " worker threads (0: one per hardware thread), got " + std::to_string(exec.threads));
  return exec.threads == 0 ? hardware : exec.threads;
}

/// Runs body(worker) for every worker in [0, workers): the calling thread is worker 0, the others run on
/// the process-wide pool (host_pool.hpp). Workers are independent within a call.
template <class Body>
void run_workers(unsigned workers, Body&& body) {
  worker_pool::instance().run(workers, body);
}

/// For calls that write before they first run workers: starts the pool's threads for `workers` now, so
/// that a refusal (parascan::error, host.threads) comes before any write.
inline void reserve_workers(unsigned workers) { worker_pool::instance().reserve(workers); }

/// Whether any sequence of `v` is at least `length` long (a packed view's lengths are on the host).
template <class View>
bool any_at_least(const View& v, index_t count, index_t length) {
  for (index_t s = 0; s < count; ++s)
    if (v.length_of(s) >= length) return true;
  return false;
}

/// Calls body(s) for s in [0, n), `workers` threads taking grains of sequences from a shared counter,
/// which balances packed batches of unequal lengths.
template <class Body>
void parallel_sequences(unsigned workers, index_t n, Body&& body) {
  if (workers <= 1 || n <= 1) {
    for (index_t s = 0; s < n; ++s) body(s);
    return;
  }
  const index_t grain = std::max<index_t>(1, n / (index_t(workers) * 8));
  std::atomic<index_t> next{0};
  run_workers(std::min<index_t>(workers, n), [&](unsigned) {
    for (index_t first; (first = next.fetch_add(grain)) < n;)
      for (index_t s = first, last = std::min(n, first + grain); s < last; ++s) body(s);
  });
}

/// Scan position p of a sequence of n steps -> its time index.
inline index_t time_of(index_t p, index_t n, bool reverse) { return reverse ? n - 1 - p : p; }

/// How a loop advances its carry. exact: op(carry, x), a state that may be combined further (chunk
/// totals, carries between chunks). projected: parascan::step(op, carry, x), for carries that are only
/// projected (outputs, final states, totals of whole sequences); see operator_traits.hpp.
enum class carry_use { exact, projected };

template <carry_use Use, class Op>
inline state_t<Op> advance(const Op& op, const state_t<Op>& carry, const state_t<Op>& x) {
  if constexpr (Use == carry_use::exact) {
    return op(carry, x);
  } else {
    return step(op, carry, x);
  }
}

/// Combines steps [p0, p1) (scan order) of sequence s onto `carry`, without writing.
template <carry_use Use, class Op, class Pack>
state_t<Op> fold(const Op& op, const Pack& in, index_t s, index_t n, index_t p0, index_t p1, bool reverse,
                 state_t<Op> carry) {
  const auto seq = bind(in, s);
  for (index_t p = p0; p < p1; ++p) carry = advance<Use>(op, carry, lift_at(op, seq, time_of(p, n, reverse)));
  return carry;
}

/// Scans steps [p0, p1) of sequence s from `carry`, writing each output; returns the carry after them.
/// The options are template arguments, so that each of the four loops is compiled without branches.
template <carry_use Use, bool Exclusive, bool Reverse, class Op, class Pack, class Outs>
state_t<Op> scan_loop(const Op& op, const Pack& in, const Outs& out, index_t s, index_t n, index_t p0, index_t p1,
                      state_t<Op> carry) {
  const auto seq = bind(in, s);
  const auto y = bind_outputs(out, s);
  for (index_t p = p0; p < p1; ++p) {
    const index_t t = Reverse ? n - 1 - p : p;
    const state_t<Op> x = lift_at(op, seq, t);  // read before the write: in-place aliasing is allowed
    if constexpr (Exclusive) {
      store_at(y, t, emit_at(op, carry, seq, t));
      carry = advance<Use>(op, carry, x);
    } else {
      carry = advance<Use>(op, carry, x);
      store_at(y, t, emit_at(op, carry, seq, t));
    }
  }
  return carry;
}

template <carry_use Use, class Op, class Pack, class Outs>
state_t<Op> scan_steps(const Op& op, const Pack& in, const Outs& out, index_t s, index_t n, index_t p0, index_t p1,
                       const options<output_t<Op>>& opts, state_t<Op> carry) {
  if (opts.exclusive) {
    return opts.reverse ? scan_loop<Use, true, true>(op, in, out, s, n, p0, p1, carry)
                        : scan_loop<Use, true, false>(op, in, out, s, n, p0, p1, carry);
  }
  return opts.reverse ? scan_loop<Use, false, true>(op, in, out, s, n, p0, p1, carry)
                      : scan_loop<Use, false, false>(op, in, out, s, n, p0, p1, carry);
}

/// Chunk boundaries: `parts` near-equal pieces of n steps.
inline index_t chunk_begin(index_t k, index_t parts, index_t n) { return n / parts * k + std::min(k, n % parts); }

/// The carry after steps [p0, p1) of sequence s, from the carry before them and their total: op(carry,
/// total) where the carry, the total and their combination are finite_state(), else the steps folded onto
/// the carry one by one, as one thread walks them (so that inf and NaN come out as they do on one thread;
/// operator_traits.hpp).
template <class Op, class Pack>
state_t<Op> carry_over(const Op& op, const Pack& in, index_t s, index_t n, index_t p0, index_t p1, bool reverse,
                       const state_t<Op>& carry, const state_t<Op>& total) {
  if (finite_state(op, carry) && finite_state(op, total)) {
    state_t<Op> combined = op(carry, total);
    if (finite_state(op, combined)) return combined;
  }
  return fold<carry_use::exact>(op, in, s, n, p0, p1, reverse, carry);
}

/// Folds one long sequence with `workers` threads: returns the total from `carry`.
template <class Op, class Pack>
state_t<Op> fold_split(const Op& op, const Pack& in, index_t s, index_t n, bool reverse, state_t<Op> carry,
                       unsigned workers) {
  std::vector<state_t<Op>> totals(workers, op.identity());
  run_workers(workers, [&](unsigned k) {
    totals[k] = fold<carry_use::exact>(op, in, s, n, chunk_begin(k, workers, n), chunk_begin(k + 1, workers, n),
                                       reverse, op.identity());
  });
  for (unsigned k = 0; k < workers; ++k)
    carry = carry_over(op, in, s, n, chunk_begin(k, workers, n), chunk_begin(k + 1, workers, n), reverse, carry,
                       totals[k]);
  return carry;
}

}  // namespace detail

/// Inclusive or exclusive prefix scan of every sequence of `inputs` (one view or parascan::inputs(...)),
/// writing emit(state, inputs at the step) -- project(state) by default -- to `outputs` (one view, or
/// parascan::outputs(...) for an emit() that gives parascan::values(...); every view of one shape). See
/// options.hpp for the options.
template <class Policy = use_default_policy, class Op, class In, class Outs>
void prefix_scan(const host& exec, const Op& op, const In& inputs, const Outs& outputs,
                 const options<output_t<Op>>& opts = {}) {
  static_assert(check_operator<Op>());
  using policy = std::conditional_t<std::is_same<Policy, use_default_policy>::value,
                                    default_policy_t<Op, arch::host>, Policy>;
  using S = state_t<Op>;
  const auto& in = as_pack(inputs);
  const auto& output = as_outputs(outputs);
  static_assert(check_outputs<Op, std::decay_t<decltype(in)>, std::decay_t<decltype(output)>>());
  const index_t count = output.head.count();
  detail::check_scan_arguments(in, output, detail::span_of(opts.initial, count), detail::span_of(opts.final, count),
                               "options.final");
  detail::check_scan_options<Op>(opts);

  const unsigned workers = detail::host_threads(exec);
  const auto finish = [&](index_t s, const S& carry) {
    if (opts.final != nullptr) opts.final[s] = project(op, carry);
  };
  using detail::carry_use;
  if (count >= index_t(workers) || workers == 1) {
    detail::parallel_sequences(workers, count, [&](index_t s) {
      const index_t n = output.head.length_of(s);
      finish(s, detail::scan_steps<carry_use::projected>(op, in, output, s, n, 0, n, opts,
                                                         start_state(op, opts.initial, s)));
    });
    return;
  }
  // Fewer sequences than threads: split each long one into workers + 1 chunks (scan positions).
  //   phase 1: worker 0 scans chunk 0 from the start state, writing it; worker k >= 1 reduces chunk k;
  //   phase 2: the carries before chunks 2..workers, from chunk 0's end state and the totals;
  //   phase 3: worker k rescans chunk k + 1 from its carry (the last chunk's total is never needed).
  // Every worker is busy in both parallel phases, and each element is read twice except in chunk 0:
  // on 2 threads a sequence takes ~2/3 of the sequential time (phase 1 had worker p-1 idle before).
  // Short sequences are written before the first long one runs its workers: their threads start first.
  if (detail::any_at_least(output.head, count, policy::split_length)) detail::reserve_workers(workers);
  for (index_t s = 0; s < count; ++s) {
    const index_t n = output.head.length_of(s);
    const S start = start_state(op, opts.initial, s);
    if (n < policy::split_length) {
      finish(s, detail::scan_steps<carry_use::projected>(op, in, output, s, n, 0, n, opts, start));
      continue;
    }
    const index_t parts = index_t(workers) + 1;
    const auto chunk = [&](index_t k) {
      return std::pair(detail::chunk_begin(k, parts, n), detail::chunk_begin(k + 1, parts, n));
    };
    std::vector<S> carry(parts, op.identity());  // carry[k]: the state before chunk k (a total, in phase 1)
    detail::run_workers(workers, [&](unsigned k) {  // phase 1
      const auto [p0, p1] = chunk(k);
      carry[k + 1] = k == 0 ? detail::scan_steps<carry_use::exact>(op, in, output, s, n, p0, p1, opts, start)
                            : detail::fold<carry_use::exact>(op, in, s, n, p0, p1, opts.reverse, op.identity());
    });
    for (index_t k = 2; k < parts; ++k) {  // phase 2 (carry[k] held chunk k - 1's total)
      const auto [p0, p1] = chunk(k - 1);
      carry[k] = detail::carry_over(op, in, s, n, p0, p1, opts.reverse, carry[k - 1], carry[k]);
    }
    S last = op.identity();
    detail::run_workers(workers, [&](unsigned k) {  // phase 3
      const auto [p0, p1] = chunk(k + 1);
      const S end = detail::scan_steps<carry_use::projected>(op, in, output, s, n, p0, p1, opts, carry[k + 1]);
      if (k + 1 == workers) last = end;
    });
    finish(s, last);
  }
}

namespace detail {

/// result[s] = the composed state of sequence s (from its start state, in scan order), project()ed when
/// Projected (then sequential loops may use step()). Checks the arguments first.
template <class Policy, bool Projected, class Op, class In, class R>
void reduce_sequences(const host& exec, const Op& op, const In& inputs, R* result, const options<output_t<Op>>& opts) {
  static_assert(check_operator<Op>());
  using policy = std::conditional_t<std::is_same<Policy, use_default_policy>::value,
                                    default_policy_t<Op, arch::host>, Policy>;
  constexpr carry_use use = Projected ? carry_use::projected : carry_use::exact;
  const auto& in = as_pack(inputs);
  const auto& shape = in.head;
  const index_t count = shape.count();
  check_reduce_arguments(in, span_of(opts.initial, count), span_of(result, count), count);
  check_reduce_options<Op>(opts);
  const auto write = [&](index_t s, const state_t<Op>& total) {
    if constexpr (Projected) result[s] = project(op, total);
    else result[s] = total;
  };
  const unsigned workers = host_threads(exec);
  if (count >= index_t(workers) || workers == 1) {
    parallel_sequences(workers, count, [&](index_t s) {
      const index_t n = shape.length_of(s);
      write(s, fold<use>(op, in, s, n, 0, n, opts.reverse, start_state(op, opts.initial, s)));
    });
    return;
  }
  if (any_at_least(shape, count, policy::split_length)) reserve_workers(workers);  // as prefix_scan
  for (index_t s = 0; s < count; ++s) {
    const index_t n = shape.length_of(s);
    const auto start = start_state(op, opts.initial, s);
    write(s, n < policy::split_length ? fold<use>(op, in, s, n, 0, n, opts.reverse, start)
                                      : fold_split(op, in, s, n, opts.reverse, start, workers));
  }
}

}  // namespace detail

/// Total of every sequence: result[s] = project(initial + all steps of sequence s), in scan order
/// (options.reverse combines from the last step). `result` holds one value per sequence.
template <class Policy = use_default_policy, class Op, class In>
void reduce_scan(const host& exec, const Op& op, const In& inputs, output_t<Op>* result,
                 const options<output_t<Op>>& opts = {}) {
  detail::reduce_sequences<Policy, true>(exec, op, inputs, result, opts);
}

/// The whole composed state of every sequence, not project() of it: result[s] = initial + all steps of
/// sequence s, in scan order, as a state_t<Op> (the linear recurrence's (gate product, x), a matrix
/// chain's product). What combines further: chunks of one long sequence reduced apart (or on different
/// devices) compose with the operator, op(result of the earlier chunk, result of the later one).
template <class Policy = use_default_policy, class Op, class In>
void reduce_states(const host& exec, const Op& op, const In& inputs, state_t<Op>* result,
                   const options<output_t<Op>>& opts = {}) {
  detail::reduce_sequences<Policy, false>(exec, op, inputs, result, opts);
}

}  // namespace parascan
