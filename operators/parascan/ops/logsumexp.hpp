// Log-space accumulation: logcumsumexp (prefix) and logsumexp (reduce).
//
// Math: log(exp x1 + exp x2 + ...) is kept as m + log(s), with m the largest log-value so far and
// s = sum exp(x - m) >= 1 the sum of the steps scaled by it (Milakov and Gimelshein's online softmax
// normaliser). Combining (m1, s1) and (m2, s2) rescales the smaller side only: (m, s_hi + s_lo exp(m_lo - m)),
// m = max(m1, m2): one exp, whose argument is <= 0, so nothing overflows; the log is taken once, when a
// step is written (project). The old state, the log-value itself combined by logaddexp, paid an exp and
// a log1p in every combine and rounded the log-value (an ulp of |x|) at every step; the sum rounds an
// ulp of itself. Associative and commutative, identity (-inf, 0).
//
// Special values: all -inf gives -inf (-inf - -inf, like inf - inf, is a NaN difference, which the rescale
// takes as a factor of 1: add_scaled), +inf gives +inf, and NaN propagates through the maximum (a NaN step
// makes every later output NaN).
//
// State: log_sum<Acc>, Acc = accumulator_t<T> (fp32 for bf16/fp16 storage, else T). Input: one sequence of
// log-values (any type that converts to Acc). project: m + log(s), a log-value; seed(y) = (y, 1).
// On the GPU, fp32 states use the hardware's exp2/log2 approximations (ex2/lg2.approx.ftz: relative error
// of a few ulp on the scaled terms, absolute error below 2^-21 on log(s) for s in [1, 2]; a rescale
// below 2^-126 flushes to 0, which the host keeps as a denormal: far under a rounding of the sum either
// way), which keeps the scan memory-bound; fp64 and the host use exp and log.
//
// Precision: the sum rounds an ulp of itself per combine, like any running sum (error ~ eps * sqrt(steps)
// relative to the result, in the log domain an absolute error of that size).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <parascan/config.hpp>
#include <parascan/layout.hpp>
#include <parascan/error.hpp>
#include <parascan/inputs.hpp>
#include <parascan/options.hpp>
#include <parascan/policy.hpp>
#include <parascan/shifted.hpp>
#include <parascan/validate.hpp>

#include "accumulator.hpp"
#include "linear_recurrence.hpp"

namespace parascan::ops {

/// exp of an accumulator, for the adjoints' shares and weights (x <= 0 in every use: results in [0, 1]).
/// GPU fp32: ex2.approx.ftz, two instructions (a result below 2^-126 is 0; __expf's non-ftz form adds a
/// denormal fix-up to each); else std::exp.
template <class S>
PARASCAN_HD PARASCAN_INLINE S scan_exp(S x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<S, float>::value) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * 1.44269504088896341f));
    return e;
  }
#endif
  return std::exp(x);
}
/// log of a scaled sum (never a denormal: >= 1, or >= 2^-64 when signed; zero gives -inf). GPU fp32:
/// lg2.approx.ftz times log 2, two instructions (__logf's non-ftz form adds a denormal fix-up to each).
template <class S>
PARASCAN_HD PARASCAN_INLINE S scan_log(S x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<S, float>::value) {
    float log2_x;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_x) : "f"(x));
    return log2_x * 0.693147180559945309f;
  }
#endif
  return std::log(x);
}

/// exp(-gap) for the rescaling of a log-sum's smaller side, gap = |max difference| >= 0; a NaN gap (equal
/// infinities subtracted, or a NaN maximum, which the larger maximum carries on) gives 1 (fmin drops the
/// NaN: one instruction). A scale below 2^-126 on the GPU is 0, far under a rounding of the larger side.
template <class S>
PARASCAN_HD PARASCAN_INLINE S rescale_factor(S gap) {
  return scan_exp(std::fmin(-gap, S(0)));
}

/// max(x, y), NaN if either is NaN (max.NaN from sm_80: one instruction).
template <class S>
PARASCAN_HD PARASCAN_INLINE S max_or_nan(S x, S y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<S, float>::value) {
    float m;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(x), "f"(y));
    return m;
  }
#endif
  return x != x || x >= y ? x : y;
}

/// exp(max_x) sum_x + exp(max_y) sum_y as (max, sum): the larger maximum (NaN if either is), the other
/// side's sum rescaled by one exp of the maxima's difference (1 for equal infinities: no inf - inf).
template <class S>
struct scaled_sum_pair {
  S max, sum;
};
template <class S>
PARASCAN_HD PARASCAN_INLINE scaled_sum_pair<S> add_scaled(S max_x, S sum_x, S max_y, S sum_y) {
  // (Selects on the fields, not references to whole states: those put the states in local memory.)
  const bool x_hi = max_x >= max_y;
  const S hi_sum = x_hi ? sum_x : sum_y, lo_sum = x_hi ? sum_y : sum_x;
  return {max_or_nan(max_x, max_y), hi_sum + lo_sum * rescale_factor(std::fabs(max_x - max_y))};
}

/// The log-value max + log(scaled_sum).
template <class Acc>
struct log_sum {
  Acc max;
  Acc scaled_sum;
};

/// The logaddexp operator over log-values stored as T, accumulated in Acc as a log_sum.
template <class T, class Acc = accumulator_t<T>>
struct log_add_exp {
  using value_type = log_sum<Acc>;
  PARASCAN_HD value_type identity() const { return {-limits<Acc>::infinity(), Acc(0)}; }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    const auto r = add_scaled(earlier.max, earlier.scaled_sum, later.max, later.scaled_sum);
    return {r.max, r.sum};
  }
  PARASCAN_HD value_type lift(const T& x) const { return {to_accumulator<Acc>(x), Acc(1)}; }
  PARASCAN_HD Acc project(const value_type& s) const { return s.max + scan_log(s.scaled_sum); }
  PARASCAN_HD value_type seed(const Acc& y) const { return {y, Acc(1)}; }
};

/// The adjoint of logcumsumexp: dL/dx[t] = sum over the outputs u that step t reached of
/// dy[u] exp(x[t] - y[u]), a reverse scan over (x, y, dy). Its state is a log_sum whose scaled sum is
/// signed: (max, s) stands for s exp(max) = sum dy[u] exp(-y[u]) (the combine is linear in s, so
/// log_add_exp's serves), and step t emits s exp(x[t] + max), whose exponent is <= 0 (y[u] >= x[t]).
/// An output that is -inf (every input up to it -inf) passes no gradient on: the inputs it covers get 0.
template <class Acc>
struct log_add_exp_adjoint {
  using value_type = log_sum<Acc>;
  log_add_exp<Acc, Acc> sum;
  PARASCAN_HD value_type identity() const { return sum.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return sum(earlier, later);
  }
  template <class X, class Y, class G>
  PARASCAN_HD value_type lift(const X&, const Y& y, const G& dy) const {
    const Acc log_value = to_accumulator<Acc>(y);
    if (log_value == -limits<Acc>::infinity()) return identity();
    return {-log_value, to_accumulator<Acc>(dy)};
  }
  template <class X, class Y, class G>
  PARASCAN_HD Acc emit(const value_type& s, const X& x, const Y&, const G&) const {
    return s.scaled_sum * scan_exp(to_accumulator<Acc>(x) + s.max);
  }
};

/// The adjoint of an inclusive logcumsumexp written as that of the log-space recurrence it is
/// (y[t] = logaddexp(y[t-1], x[t]), gates 1): h[t] = dL/dy[t] through every later output, h[t] = dy[t] +
/// r[t+1] h[t+1] with the carried shares r[t] = exp(y[t-1] - y[t]) in [0, 1], and dL/dx[t] = h[t]
/// exp(x[t] - y[t]). A linear reverse scan over (x, y, y[t-1], dy): its carried value takes dL/d(final
/// log-value) as its initial and gives dL/d(initial log-value) = r[0] h[0] as its total, which
/// log_add_exp_adjoint cannot. Steps whose output is -inf pass no gradient.
template <class Acc>
struct log_add_exp_recurrence_adjoint {
  using value_type = linear_state<Acc>;
  linear_recurrence<Acc> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  /// r[t], 0 where y[t] = -inf (then y[t-1] is -inf too, and the difference NaN).
  PARASCAN_HD static Acc carried_share(Acc y, Acc y_prev) {
    return y == -limits<Acc>::infinity() ? Acc(0) : scan_exp(y_prev - y);
  }
  template <class X, class Y, class YP, class G>
  PARASCAN_HD value_type lift(const X&, const Y& y, const YP& y_prev, const G& dy) const {
    const Acc r = carried_share(to_accumulator<Acc>(y), to_accumulator<Acc>(y_prev));
    return {r, r == Acc(0) ? Acc(0) : r * to_accumulator<Acc>(dy)};
  }
  PARASCAN_HD Acc project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const Acc& h) const { return {Acc(1), h}; }
  PARASCAN_HD value_type step(const value_type& carry, const value_type& x) const { return rec.step(carry, x); }
  template <class X, class Y, class YP, class G>
  PARASCAN_HD Acc emit(const value_type& s, const X& x, const Y& y, const YP&, const G& dy) const {
    const Acc yt = to_accumulator<Acc>(y);
    if (yt == -limits<Acc>::infinity()) return Acc(0);
    return (to_accumulator<Acc>(dy) + s.b) * scan_exp(to_accumulator<Acc>(x) - yt);
  }
};

/// The adjoint of logsumexp, the reduction r = log(sum exp(x[t])): dL/dx[t] = g exp(x[t] - r) for the
/// result's gradient g (the softmax of the inputs, times g), step by step from x and per-sequence views of
/// r and g; 0 where r = -inf (every input -inf), as log_add_exp_adjoint. Every step stands alone: the
/// scan's state is unused (a constant), the engine only walks the layout.
template <class Acc>
struct log_sum_exp_total_adjoint {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return Acc(0); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type&) const { return earlier; }
  template <class X, class R, class G>
  PARASCAN_HD value_type lift(const X&, const R&, const G&) const {
    return Acc(0);
  }
  template <class X, class R, class G>
  PARASCAN_HD Acc emit(const value_type&, const X& x, const R& r, const G& g) const {
    const Acc total = to_accumulator<Acc>(r);
    if (total == -limits<Acc>::infinity()) return Acc(0);
    return to_accumulator<Acc>(g) * scan_exp(to_accumulator<Acc>(x) - total);
  }
};

}  // namespace parascan::ops

namespace parascan {

/// logcumsumexp's CUDA tuning (fp32 state): its combine costs an exp and a log1p, so it streams with more
/// items a thread over more warps than the other pair states (policy.hpp, sm90_tuning::costly_combine_streams).
/// bf16 / fp16 inputs run this policy widened to 8 items (with_items_at_least), which has no stream: the
/// pair states' narrow streams were measured on the recurrence only (before this tuning, bf16 logcumsumexp
/// took them from 16384 steps, unmeasured).
template <class T>
struct default_policy<ops::log_add_exp<T, float>, arch::sm90> {
  // From 2048 steps on devices from 4.5 TB/s, the next tile prefetched into the L2 (policy_sweep part
  // stream_prefetch, H200, 2026-11-27, % of cudaMemcpy at T = 2048 / 4096 / 8192 / 16384 / 65536):
  // 128 x 8@8 72.3 / 77.1 / 79.1 / 80.3 / 81.4, with the prefetch 78.4 / 85.2 / 88.3 / 89.8 / 91.1,
  // 64 x 8@16 with it 83.0 / 88.1 / 90.3 / 90.1 / 88.3 (on the H100 the prefetch gains nothing: 91.4 ->
  // 91.9 at 4096, 94.7 -> 90.4 at 65536).
  using type = streamed_ladder<
      sm90_tuning::costly_combine_streams<sm90_tuning::pair_warps>,
      stream_rung<2048, sm90_tuning::stream<64, 8, 16, 2>, 0, sm90_tuning::from_4_5_tbs>,
      stream_rung<16384, sm90_tuning::stream<128, 8, 8, 2>, 0, sm90_tuning::from_4_5_tbs>>;
};

/// out[t] = log(sum over steps up to t of exp(in[step])) for every sequence (options: exclusive, reverse,
/// an initial log-value per sequence, final totals). `out` may be a storage type (bf16 rounds once).
template <class Exec, class T, class Y>
void logcumsumexp(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
                  const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::log_add_exp<std::remove_const_t<T>>{}, in, out, opts);
}

/// dL/dx of y = logcumsumexp(x, opts) from the inputs x, the outputs y and the upstream gradient dy
/// (dL/dy[t] of each output alone): one reverse scan, every layout; opts says how the forward ran
/// (reverse, exclusive, initial: the forward's initial log-values, needed only for grad_initial). Stable
/// with -inf inputs (their gradient is 0). opts.grad_final adds dL/d(final log-value) and
/// opts.grad_initial receives dL/d(initial log-value), for an inclusive forward (an exclusive one's final
/// value is not among its outputs: refused); they run the recurrence form of the adjoint
/// (ops::log_add_exp_recurrence_adjoint, which also reads y one step behind), the plain call
/// ops::log_add_exp_adjoint. dx may be x itself (in place).
template <class Exec, class T, class Y, class G, class D>
void logcumsumexp_backward(const Exec& exec, const sequences<T>& x, const sequences<Y>& y, const sequences<G>& dy,
                           const sequences<D>& dx, const backward_options<ops::accumulator_t<T>>& opts = {}) {
  using Acc = ops::accumulator_t<std::remove_const_t<T>>;
  if (opts.grad_final != nullptr || opts.grad_initial != nullptr) {
    if (opts.exclusive)
      detail::fail(opts.grad_final != nullptr ? "options.grad_final" : "options.grad_initial",
                   "null with an exclusive forward (its final log-value is not among its outputs)");
    const auto y_prev =
        parascan::shifted(y, previous_step(opts), std::remove_const_t<Y>(-limits<Acc>::infinity()), opts.initial);
    prefix_scan(exec, ops::log_add_exp_recurrence_adjoint<Acc>{}, parascan::inputs(x, y, y_prev, dy), dx,
                adjoint_options(opts));
    return;
  }
  options<ops::log_sum<Acc>> scan;
  scan.reverse = !opts.reverse;
  scan.exclusive = opts.exclusive;  // an exclusive forward's y[u] covers the steps before u
  prefix_scan(exec, ops::log_add_exp_adjoint<Acc>{}, parascan::inputs(x, y, dy), dx, scan);
}

/// result[s] = log(sum over every step of sequence s of exp(in[step])), one value per sequence.
template <class Exec, class T>
void logsumexp(const Exec& exec, const sequences<T>& in, ops::accumulator_t<T>* result,
               const options<ops::accumulator_t<T>>& opts = {}) {
  reduce_scan(exec, ops::log_add_exp<std::remove_const_t<T>>{}, in, result, opts);
}

/// dL/dx of result = logsumexp(x, result, {initial}) from the inputs x, the result and its gradient
/// `grad_result` (one value a sequence each): grad_x[t] = grad_result exp(x[t] - result), 0 where the
/// result is -inf (every input -inf); opts.grad_initial receives dL/d(initial log-value) (0 without an
/// initial). opts.grad_final stays null (the result's gradient is grad_result); reverse changes nothing.
/// grad_x may be x itself (in place). One pass over the steps (ops::log_sum_exp_total_adjoint, result and
/// gradient read through per_sequence views), and one over the sequences for grad_initial.
template <class Exec, class T, class D>
void logsumexp_backward(const Exec& exec, const sequences<T>& x, const ops::accumulator_t<T>* result,
                        const ops::accumulator_t<T>* grad_result, const sequences<D>& grad_x,
                        const backward_options<ops::accumulator_t<T>>& opts = {}) {
  using Acc = ops::accumulator_t<std::remove_const_t<T>>;
  const index_t count = x.count();
  if (opts.exclusive) detail::fail("options.exclusive", "false: a reduction has no exclusive form");
  if (opts.grad_final != nullptr)
    detail::fail("options.grad_final", "null: the result's gradient is the argument grad_result");
  if (count > 0 && result == nullptr) detail::fail("result", "a non-null array of one value per sequence");
  if (count > 0 && grad_result == nullptr) detail::fail("grad_result", "a non-null array of one value per sequence");
  // Every check before the first pass writes, under the wrapper's own names (the passes' checks would name
  // their inputs by position).
  std::vector<index_t> x_offsets, grad_x_offsets;
  const auto& x_h = host_readable(exec, x, x_offsets);
  const auto& grad_x_h = host_readable(exec, grad_x, grad_x_offsets);
  detail::check_view(x_h, "x");
  detail::check_view(grad_x_h, "grad_x");
  detail::check_same_shape(grad_x_h, x_h, "grad_x");
  detail::check_no_self_overlap(grad_x_h, "grad_x");
  detail::check_alias(x_h, grad_x_h, "x", "grad_x");
  const detail::byte_span grad_initial = detail::span_of(opts.grad_initial, count);
  const detail::byte_span grad_x_span = detail::span_of(grad_x_h);
  for (const auto& [span, name] : {std::pair{detail::span_of(result, count), "result"},
                                   std::pair{detail::span_of(grad_result, count), "grad_result"},
                                   std::pair{detail::span_of(opts.initial, count), "options.initial"}}) {
    if (grad_x_span.overlaps(span)) detail::fail("grad_x", std::string("no overlap with ") + name);
    if (grad_initial.overlaps(span)) detail::fail("options.grad_initial", std::string("no overlap with ") + name);
  }
  if (grad_initial.overlaps(grad_x_span)) detail::fail("options.grad_initial", "no overlap with grad_x");
  if (count > 0) {
    require_backend_memory(exec, result, "result");
    require_backend_memory(exec, grad_result, "grad_result");
    require_backend_memory(exec, opts.initial, "options.initial");
    require_backend_memory(exec, opts.grad_initial, "options.grad_initial");
  }
  prefix_scan(exec, ops::log_sum_exp_total_adjoint<Acc>{},
              parascan::inputs(x, parascan::per_sequence(result, x), parascan::per_sequence(grad_result, x)),
              grad_x);
  if (opts.grad_initial == nullptr || count == 0) return;
  // The initial log-value is one more input: dL/dI = g exp(I - r), over one-step views of the sequences,
  // I being the boundary one step past each result (-inf without an initial).
  const auto totals = parascan::bdt(result, count, 1, 1);
  prefix_scan(exec, ops::log_sum_exp_total_adjoint<Acc>{},
              parascan::inputs(parascan::shifted(totals, +1, -limits<Acc>::infinity(), opts.initial), totals,
                               parascan::bdt(grad_result, count, 1, 1)),
              parascan::bdt(opts.grad_initial, count, 1, 1));
}

}  // namespace parascan
