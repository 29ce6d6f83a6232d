// Log-space linear recurrence x[t] = a[t] x[t-1] + b[t], numerically stable over any dynamic range, for
// positive and for signed a, b. Magnitudes are kept as logs and signs explicitly (as +-1), with no complex
// logarithms (Heinsen's method takes log of negative numbers as complex values, and computes
// x[t] = exp(A*[t] + log cumsum exp(log b - A*)) from A* = cumsum(log a), which loses everything once
// A* spans more than the float range; here each combine only ever adds logs of factors that meet).
//
// Math: the affine-map composition of linear_recurrence.hpp, (a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2),
// with A as log A (and its sign) and B as exp(max) * scaled_sum, as logsumexp.hpp keeps a log-sum: the
// sum a2 b1 + b2 rescales the smaller side only, one exp (argument <= 0) per combine (add_scaled), and the
// log is taken once, when a step is written. (States of logs combined by logaddexp paid an exp and a
// log1p in every combine.)
//
// Two operators:
//   log_linear_recurrence<S>: a, b > 0. Inputs log a, log b -> lift(log_a, log_b); state (log A, max,
//       scaled_sum), the sum >= 1 once anything was added and at most the number of steps; output log x
//       (an S). seed(log x0). Zeros are -inf: log_a = -inf resets, log_b = -inf adds nothing.
//   signed_log_linear_recurrence<S>: any signs. Inputs either
//       lift(log_a, b):                        a > 0 as log a, b as its value (the SSM case: a decay
//                                              given in log space, signed tokens), b entering by its
//                                              float exponent and mantissa (no log), or
//       lift(log_a, sign_a, log_b, sign_b):    the general case; a sign input is negative for a
//                                              negative number (-1, or any value < 0), else positive.
//       State (log|A|, sign A, max, scaled_sum) with a signed sum; output x as signed_log<S>{log|x|,
//       sign x}, which a user of log space keeps (x itself may be far outside the float range). An output
//       view of S instead receives x = sign * exp(log|x|) itself (signed_log converts explicitly),
//       overflowing to +-inf beyond range. Exact cancellation leaves zero as max = -inf (so that a stale
//       max cannot outweigh later terms); a sum that near-cancellations shrink below 2^-64 is
//       renormalized by 2^64 (exactly), so it never underflows.
//
// Special values: zero is {-inf, +1}. Exact cancellation (b terms of opposite signs and equal magnitude)
// gives zero = {-inf, +1}, never NaN; 0 + 0 = 0. NaN inputs propagate (through the maximum). log a = +inf
// (an infinite factor) times a zero gives NaN, as in linear arithmetic, and so does inf - inf.
//
// Precision: every log-value rounds to an ulp of its own size, so the relative error of x is about
// eps * max(1, |log x|) per step; the scaled sum rounds an ulp of itself per combine, as any running sum
// (its log: lg2.approx.ftz for fp32 on the GPU, absolute error below 2^-21 for a sum in [1, 2]);
// cancellation loses what it loses in any arithmetic (the error is relative to |a x| + |b|, not to |x|).
// S is fp32 for bf16/fp16 inputs (ops/accumulator.hpp).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <parascan/config.hpp>
#include <parascan/host.hpp>  // the engine's entry points and backward checks
#include <parascan/inputs.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>
#include <vector>

#include "accumulator.hpp"
#include "linear_recurrence.hpp"
#include "logsumexp.hpp"

namespace parascan::ops {

/// A real number as sign and log-magnitude: value = sign * exp(log_abs), sign = +1 or -1; zero is
/// {-inf, +1}.
template <class S>
struct signed_log {
  S log_abs;
  S sign;
  /// The number itself (+-inf when exp overflows, 0 when it underflows).
  PARASCAN_HD explicit operator S() const { return sign * std::exp(log_abs); }
};

/// The map x -> A x + B with A, B > 0: A = exp(log_a), B = exp(max) * scaled_sum (B = 0: max = -inf).
template <class S>
struct log_linear_state {
  S log_a;
  S max;
  S scaled_sum;
};

/// x[t] = a[t] x[t-1] + b[t] for a, b > 0, in log space: inputs log a, log b; output log x.
template <class S>
struct log_linear_recurrence {
  using value_type = log_linear_state<S>;

  PARASCAN_HD value_type identity() const { return {S(0), -limits<S>::infinity(), S(0)}; }
  /// earlier first, then later: (log a1 + log a2, a2 b1 + b2 with the smaller term rescaled to the larger).
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    // The carried term a2 b1 = exp(log a2 + max1) sum1 plus b2 = exp(max2) sum2. -inf + +inf (a zero gate
    // times an infinite x) is a NaN maximum, as 0 * inf, and stays NaN.
    const auto b = add_scaled(later.log_a + earlier.max, earlier.scaled_sum, later.max, later.scaled_sum);
    return {earlier.log_a + later.log_a, b.max, b.sum};
  }
  template <class LA, class LB>
  PARASCAN_HD value_type lift(const LA& log_a, const LB& log_b) const {
    return {to_accumulator<S>(log_a), to_accumulator<S>(log_b), S(1)};
  }
  /// log B = max + log(scaled_sum): -inf for B = 0 (max = -inf), +inf and NaN as they came.
  PARASCAN_HD S project(const value_type& s) const { return s.max + scan_log(s.scaled_sum); }
  PARASCAN_HD value_type seed(const S& log_x0) const { return {S(0), log_x0, S(1)}; }
};

/// The adjoint of the positive log-space recurrence y = log x: a reverse, exclusive scan over log a, y,
/// y one step behind (log x0 before the start), log b and dy = dL/dy[t] of each output alone. With
///   r[t] = a[t] x[t-1] / x[t] = exp(log a[t] + y[t-1] - y[t])   (in [0, 1]: the share of x[t] carried)
///   h[t] = x[t] dL/dx[t]                                          (the gradient reaching y[t], all paths)
/// h[t] = dy[t] + r[t+1] h[t+1]: a linear recurrence whose gates lie in [0, 1] whatever the range of x, so
/// nothing over- or underflows that the answer does not. The state carries q[t] = r[t] h[t], so that
/// before step t (exclusive) it holds q[t+1] and emits
///   dL/d(log b[t]) = h[t] b[t] / x[t] = h[t] exp(log b[t] - y[t]),   dL/d(log a[t]) = h[t] r[t];
/// the total q[0] is dL/d(log x0), and seeding with dL/d(final log-value) adds it to h at the last step.
/// An output y[t] = -inf (x[t] = 0) passes no gradient: its step emits zeros and carries nothing back.
template <class S>
struct log_linear_recurrence_adjoint {
  using value_type = linear_state<S>;
  linear_recurrence<S> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  /// r[t], 0 where y[t] = -inf (then y[t-1] + log a[t] is -inf too, and the difference NaN).
  PARASCAN_HD static S carried_share(S log_a, S y, S y_prev) {
    return y == -limits<S>::infinity() ? S(0) : scan_exp(log_a + y_prev - y);
  }
  template <class LA, class Y, class YP, class LB, class G>
  PARASCAN_HD value_type lift(const LA& log_a, const Y& y, const YP& y_prev, const LB&, const G& dy) const {
    const S r = carried_share(to_accumulator<S>(log_a), to_accumulator<S>(y), to_accumulator<S>(y_prev));
    return {r, r == S(0) ? S(0) : r * to_accumulator<S>(dy)};
  }
  PARASCAN_HD S project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const S& h) const { return {S(1), h}; }
  PARASCAN_HD value_type step(const value_type& carry, const value_type& x) const { return rec.step(carry, x); }
  /// (dL/d(log b[t]), dL/d(log a[t])), for parascan::outputs(grad_log_b, grad_log_a).
  template <class LA, class Y, class YP, class LB, class G>
  PARASCAN_HD value_pack<S, S> emit(const value_type& s, const LA& log_a, const Y& y, const YP& y_prev, const LB& log_b,
                                    const G& dy) const {
    const S yt = to_accumulator<S>(y);
    if (yt == -limits<S>::infinity()) return values(S(0), S(0));
    const S h = to_accumulator<S>(dy) + s.b;
    return values(h * scan_exp(to_accumulator<S>(log_b) - yt),
                  h * carried_share(to_accumulator<S>(log_a), yt, to_accumulator<S>(y_prev)));
  }
};

/// The map x -> A x + B with signed A, B: A = sign_a exp(log_a), B = exp(max) * scaled_sum (signed; zero
/// is max = -inf).
template <class S>
struct signed_log_linear_state {
  S log_a;
  S sign_a;
  S max;
  S scaled_sum;
};

/// x[t] = a[t] x[t-1] + b[t] for any signs, in log space; output x as signed_log<S>.
template <class S>
struct signed_log_linear_recurrence {
  using value_type = signed_log_linear_state<S>;

  PARASCAN_HD value_type identity() const { return {S(0), S(1), -limits<S>::infinity(), S(0)}; }
  /// earlier first, then later: (a1 a2, a2 b1 + b2), the smaller term rescaled to the larger (one exp).
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    constexpr S inf = limits<S>::infinity();
    const S carried_max = later.log_a + earlier.max, carried_sum = later.sign_a * earlier.scaled_sum;
    const auto b = add_scaled(carried_max, carried_sum, later.max, later.scaled_sum);
    S max = b.max, sum = b.sum;
    if (carried_max == inf && later.max == inf && (carried_sum < S(0)) != (later.scaled_sum < S(0))) {
      max = limits<S>::quiet_NaN();  // inf - inf
    } else if (sum == S(0) && max == max) {  // (a NaN maximum stays: its sums may cancel by chance)
      // Exact cancellation: zero is max = -inf, so that a stale max cannot outweigh (and underflow) the
      // terms that come later.
      max = -inf;
    } else if (std::fabs(sum) < S(5.42101086242752217e-20)) {
      // Near-cancellation shrinks the sum by up to an ulp each time: renormalize (exactly, by 2^64) before
      // it could underflow, so that it never falls below the terms it is compared with.
      sum *= S(18446744073709551616.0);
      max -= S(44.3614195558364998);  // 64 log 2
    }
    return {earlier.log_a + later.log_a, earlier.sign_a * later.sign_a, max, sum};
  }
  /// a > 0 given as log a; b given as its (signed) value, split into exponent and mantissa (no log).
  template <class LA, class B>
  PARASCAN_HD value_type lift(const LA& log_a, const B& b) const {
    const S v = to_accumulator<S>(b);
    if (v == S(0)) return {to_accumulator<S>(log_a), S(1), -limits<S>::infinity(), S(0)};
    if (!(std::fabs(v) <= limits<S>::max()))  // +-inf, NaN: max inf or NaN, the sign in the sum
      return {to_accumulator<S>(log_a), S(1), std::fabs(v), v < S(0) ? S(-1) : S(1)};
    int e = 0;
    const S mantissa = std::frexp(v, &e);  // v = mantissa 2^e, |mantissa| in [0.5, 1)
    return {to_accumulator<S>(log_a), S(1), S(e) * S(0.693147180559945309), mantissa};
  }
  /// Both as log-magnitude and sign (a sign < 0 means negative).
  template <class LA, class SA, class LB, class SB>
  PARASCAN_HD value_type lift(const LA& log_a, const SA& sign_a, const LB& log_b, const SB& sign_b) const {
    return {to_accumulator<S>(log_a), to_accumulator<S>(sign_a) < S(0) ? S(-1) : S(1), to_accumulator<S>(log_b),
            to_accumulator<S>(sign_b) < S(0) ? S(-1) : S(1)};
  }
  /// x = B as {log|B|, sign B}; zero as {-inf, +1}.
  PARASCAN_HD signed_log<S> project(const value_type& s) const {
    const bool zero = s.max == -limits<S>::infinity();
    return {s.max + scan_log(std::fabs(s.scaled_sum)), zero || !(s.scaled_sum < S(0)) ? S(1) : S(-1)};
  }
  PARASCAN_HD value_type seed(const signed_log<S>& x0) const { return {S(0), S(1), x0.log_abs, x0.sign}; }
};

/// The adjoint of the signed log-space recurrence, whose outputs are x = {log|x|, sign}: gradients with
/// respect to the log-magnitudes (a sign has none), dy[t] = dL/d(log|x[t]|) of each output alone. As the
/// positive adjoint, with the signs kept:
///   r[t] = a[t] x[t-1] / x[t] = sign(a[t] x[t-1] x[t]) exp(log|a[t]| + log|x[t-1]| - log|x[t]|)
///   h[t] = x[t] dL/dx[t] = dy[t] + r[t+1] h[t+1]                 (dL/d(log|x[t]|), all paths)
/// and it emits dL/d(log|a[t]|) = h[t] r[t] with dL/d(log|b[t]|) = h[t] b[t] / x[t] (four-input form) or
/// dL/db[t] = h[t] / x[t] (the (log a, b) form: b as its value). Unlike the positive shares, |r| exceeds 1
/// where x[t] nearly cancels: the sensitivity of log|x| near a zero crossing, not rounding. A step whose
/// output is zero (log|x| = -inf) passes no gradient: it emits zeros and carries nothing back.
/// Inputs: (log_a, x, x_prev, b, dy) or (log_a, sign_a, x, x_prev, log_b, sign_b, dy).
template <class S>
struct signed_log_linear_recurrence_adjoint {
  using value_type = linear_state<S>;
  linear_recurrence<S> rec;
  PARASCAN_HD value_type identity() const { return rec.identity(); }
  PARASCAN_HD value_type operator()(const value_type& earlier, const value_type& later) const {
    return rec(earlier, later);
  }
  PARASCAN_HD S project(const value_type& s) const { return s.b; }
  PARASCAN_HD value_type seed(const S& h) const { return {S(1), h}; }
  PARASCAN_HD value_type step(const value_type& carry, const value_type& x) const { return rec.step(carry, x); }

  /// The sign of a sign input (negative below zero), and an output of any precision as signed_log<S>.
  template <class V>
  PARASCAN_HD static S sign_of(const V& v) {
    return to_accumulator<S>(v) < S(0) ? S(-1) : S(1);
  }
  template <class T>
  PARASCAN_HD static signed_log<S> as_signed(const signed_log<T>& v) {
    return {S(v.log_abs), S(v.sign)};
  }
  /// r[t] (see above), 0 where x[t] = 0.
  PARASCAN_HD static S carried_share(S log_a, S sign_a, const signed_log<S>& y, const signed_log<S>& y_prev) {
    if (y.log_abs == -limits<S>::infinity()) return S(0);
    const S magnitude = scan_exp(log_a + y_prev.log_abs - y.log_abs);
    return sign_a * y_prev.sign * y.sign < S(0) ? -magnitude : magnitude;
  }
  PARASCAN_HD value_type lifted(S r, S dy) const { return {r, r == S(0) ? S(0) : r * dy}; }

  template <class LA, class Y, class YP, class B, class G>
  PARASCAN_HD value_type lift(const LA& log_a, const Y& y, const YP& y_prev, const B&, const G& dy) const {
    return lifted(carried_share(to_accumulator<S>(log_a), S(1), as_signed(y), as_signed(y_prev)),
                  to_accumulator<S>(dy));
  }
  template <class LA, class SA, class Y, class YP, class LB, class SB, class G>
  PARASCAN_HD value_type lift(const LA& log_a, const SA& sign_a, const Y& y, const YP& y_prev, const LB&, const SB&,
                              const G& dy) const {
    return lifted(carried_share(to_accumulator<S>(log_a), sign_of(sign_a), as_signed(y), as_signed(y_prev)),
                  to_accumulator<S>(dy));
  }
  /// (dL/db[t], dL/d(log a[t])), for parascan::outputs(grad_b, grad_log_a). No gradient reaching the step
  /// (h = 0, as past the last step a loss reads) is 0 even where 1 / x[t] or r[t] overflow; h / x[t] is
  /// h q q with q = exp(-log|x[t]| / 2), so that a small h over a tiny x[t] stays in range.
  template <class LA, class Y, class YP, class B, class G>
  PARASCAN_HD value_pack<S, S> emit(const value_type& s, const LA& log_a, const Y& y, const YP& y_prev, const B&,
                                    const G& dy) const {
    const signed_log<S> yt = as_signed(y);
    const S h = to_accumulator<S>(dy) + s.b;
    if (yt.log_abs == -limits<S>::infinity() || h == S(0)) return values(S(0), S(0));
    const S q = scan_exp(S(-0.5) * yt.log_abs);
    return values(yt.sign * (h * q) * q, h * carried_share(to_accumulator<S>(log_a), S(1), yt, as_signed(y_prev)));
  }
  /// (dL/d(log|b[t]|), dL/d(log|a[t]|)), for parascan::outputs(grad_log_b, grad_log_a).
  template <class LA, class SA, class Y, class YP, class LB, class SB, class G>
  PARASCAN_HD value_pack<S, S> emit(const value_type& s, const LA& log_a, const SA& sign_a, const Y& y,
                                    const YP& y_prev, const LB& log_b, const SB& sign_b, const G& dy) const {
    const signed_log<S> yt = as_signed(y);
    const S h = to_accumulator<S>(dy) + s.b;
    if (yt.log_abs == -limits<S>::infinity() || h == S(0)) return values(S(0), S(0));
    const S share_b = scan_exp(to_accumulator<S>(log_b) - yt.log_abs);
    return values(sign_of(sign_b) * yt.sign < S(0) ? -(h * share_b) : h * share_b,
                  h * carried_share(to_accumulator<S>(log_a), sign_of(sign_a), yt, as_signed(y_prev)));
  }
};

}  // namespace parascan::ops

namespace parascan {

/// The log-space recurrence's CUDA tuning (a 12-byte state, whose combine costs an exp and a log1p):
/// streamed as logcumsumexp (policy.hpp, sm90_tuning::costly_combine_streams), its warps the wide states'.
template <>
struct default_policy<ops::log_linear_recurrence<float>, arch::sm90> {
  using type = sm90_tuning::costly_combine_streams<sm90_tuning::wide_warps>;
};

/// The log-space adjoint's CUDA tuning (five inputs, two outputs a step; H100, .scratch probe, fp32
/// (8, 1536, T), % of its floor at T = 4096 / 65536): 4 items at 4 blocks, 3 stages 90.0 / 88.3%; the pair
/// states' default (8 items at 4 blocks, of whose 4 stages 2 fit) 67 / 69 (76.5% at 65536 unstaged, as it
/// ran before the stages fitted); 4 items at 5 blocks 81 / 82; 8 items at 3 blocks, 2 stages 90.5 / 88.6.
template <>
struct default_policy<ops::log_linear_recurrence_adjoint<float>, arch::sm90> {
  using type = cuda_policy<128, 4, combine_variant::warp, 4, 3>;
};

/// The signed adjoint's: its state and combine are the positive adjoint's, with five or seven inputs (x
/// and x one step behind as 8-byte signed logs): the same shape, by analogy (not measured yet: the bench
/// case signed_log_linear_recurrence_backward is there to measure it).
template <>
struct default_policy<ops::signed_log_linear_recurrence_adjoint<float>, arch::sm90> {
  using type = cuda_policy<128, 4, combine_variant::warp, 4, 3>;
};

/// log x[t] for x[t] = a[t] x[t-1] + b[t] with a, b > 0 given as log_a, log_b; x[-1] = exp(opts.initial)
/// (log-values; default: x[-1] = 0). Views of one shape; log_x may be a storage type.
template <class Exec, class LA, class LB, class Y>
void log_linear_recurrence(const Exec& exec, const sequences<LA>& log_a, const sequences<LB>& log_b,
                           const sequences<Y>& log_x, const options<ops::common_accumulator_t<LA, LB>>& opts = {}) {
  prefix_scan(exec, ops::log_linear_recurrence<ops::common_accumulator_t<LA, LB>>{}, parascan::inputs(log_a, log_b),
              log_x, opts);
}

namespace detail {
/// A log-space backward's check of an input check_backward_call does not see: of the gates' shape, in the
/// backend's memory, apart from both outputs but for exact in-place aliasing (each step reads its inputs
/// before it writes), and apart from opts.grad_initial.
template <class Exec, class LA, class In, class DA, class DB, class Y, class GY>
void check_backward_input(const Exec& exec, const sequences<LA>& log_a, const sequences<In>& input, const char* name,
                          const sequences<DA>& grad_a, const char* grad_a_name, const sequences<DB>& grad_b,
                          const char* grad_b_name, const backward_options<Y, GY>& opts) {
  std::vector<index_t> o0, o1, o2, o3;
  const auto v = host_readable(exec, input, o0);
  check_view(v, name);
  check_same_shape(v, host_readable(exec, log_a, o1), name);
  check_alias(v, host_readable(exec, grad_a, o2), name, grad_a_name);
  check_alias(v, host_readable(exec, grad_b, o3), name, grad_b_name);
  if (span_of(opts.grad_initial, log_a.count()).overlaps(span_of(v)))
    fail("options.grad_initial", std::string("no overlap with ") + name);
  if (log_a.count() > 0 && time_extent(v) > 0) require_backend_memory(exec, input.data, std::string(name) + ".data");
}
}  // namespace detail

/// Gradients of log_x = log_linear_recurrence(log_a, log_b, log_x, {reverse, initial}) for a loss L, from
/// the inputs, the forward's outputs log_x and the upstream gradient grad_log_x (dL/d(log x[t]) of each
/// output alone): grad_log_a = dL/d(log a), grad_log_b = dL/d(log b); opts.grad_final adds dL/d(final
/// log-value), opts.grad_initial receives dL/d(initial log-value) (the initial log-values are
/// opts.initial, as in the forward). One reverse scan (ops::log_linear_recurrence_adjoint) whose gates are
/// the shares r[t] in [0, 1]: stable at any range of x. Steps whose output is -inf (x = 0) get 0.
/// All views share one shape (any layout); outputs apart from every input (grad_log_b may be log_b itself).
template <class Policy = use_default_policy, class Exec, class LA, class LB, class Y, class G, class DA, class DB,
          class Acc = ops::common_accumulator_t<std::remove_const_t<LA>, std::remove_const_t<LB>,
                                                std::remove_const_t<Y>, std::remove_const_t<G>>>
void log_linear_recurrence_backward(const Exec& exec, const sequences<LA>& log_a, const sequences<LB>& log_b,
                                    const sequences<Y>& log_x, const sequences<G>& grad_log_x,
                                    const sequences<DA>& grad_log_a, const sequences<DB>& grad_log_b,
                                    const backward_options<Acc>& opts = {}) {
  detail::check_backward_call(exec, log_a, log_x, grad_log_x, grad_log_a, &grad_log_b, opts,
                              {"log_a", "log_x", "grad_log_x", "grad_log_a", "grad_log_b"});
  detail::check_backward_input(exec, log_a, log_b, "log_b", grad_log_a, "grad_log_a", grad_log_b, "grad_log_b", opts);
  const ops::log_linear_recurrence_adjoint<Acc> adjoint;
  const auto y_prev =
      parascan::shifted(log_x, previous_step(opts), std::remove_const_t<Y>(-limits<Acc>::infinity()), opts.initial);
  prefix_scan<Policy>(exec, adjoint, parascan::inputs(log_a, log_x, y_prev, log_b, grad_log_x),
                      parascan::outputs(grad_log_b, grad_log_a), adjoint_options(opts));
}

/// x[t] = a[t] x[t-1] + b[t] with a > 0 given as log_a and b as its signed value; x is written as
/// signed_log<S> (or as S itself when `x` is a view of S). initial/final are signed_log<S>.
template <class Exec, class LA, class B, class Y>
void signed_log_linear_recurrence(const Exec& exec, const sequences<LA>& log_a, const sequences<B>& b,
                                  const sequences<Y>& x,
                                  const options<ops::signed_log<ops::common_accumulator_t<LA, B>>>& opts = {}) {
  prefix_scan(exec, ops::signed_log_linear_recurrence<ops::common_accumulator_t<LA, B>>{}, parascan::inputs(log_a, b),
              x, opts);
}

/// x[t] = a[t] x[t-1] + b[t] with a and b given as log-magnitudes and signs (a sign < 0 is negative).
template <class Exec, class LA, class SA, class LB, class SB, class Y>
void signed_log_linear_recurrence(const Exec& exec, const sequences<LA>& log_a, const sequences<SA>& sign_a,
                                  const sequences<LB>& log_b, const sequences<SB>& sign_b, const sequences<Y>& x,
                                  const options<ops::signed_log<ops::common_accumulator_t<LA, LB>>>& opts = {}) {
  prefix_scan(exec, ops::signed_log_linear_recurrence<ops::common_accumulator_t<LA, LB>>{},
              parascan::inputs(log_a, sign_a, log_b, sign_b), x, opts);
}

/// Gradients of x = signed_log_linear_recurrence(log_a, b, x, {reverse, initial}) (x as signed_log<S>)
/// for a loss L of the log-magnitudes log|x| (a sign has no gradient; for a loss of x itself pass
/// dL/d(log|x|) = x dL/dx), from the inputs, the forward's outputs x and grad_log_abs_x (dL/d(log|x[t]|) of
/// each output alone): grad_log_a = dL/d(log a), grad_b = dL/db (= dL/dx[t]: beyond the float range
/// where |x[t]| is tiny); opts.grad_final adds dL/d(final log|x|), opts.grad_initial receives dL/d(log|x0|)
/// (x0 = opts.initial, as in the forward). One reverse scan (ops::signed_log_linear_recurrence_adjoint).
/// Steps whose output is zero, or that no gradient reaches, get 0. All views share one shape; outputs
/// apart from every input but b, which either may be exactly (in place).
template <class Policy = use_default_policy, class Exec, class LA, class B, class Y, class G, class DA, class DB,
          class S = ops::common_accumulator_t<std::remove_const_t<LA>, std::remove_const_t<B>, std::remove_const_t<G>>>
void signed_log_linear_recurrence_backward(const Exec& exec, const sequences<LA>& log_a, const sequences<B>& b,
                                           const sequences<Y>& x, const sequences<G>& grad_log_abs_x,
                                           const sequences<DA>& grad_log_a, const sequences<DB>& grad_b,
                                           const backward_options<ops::signed_log<S>, S>& opts = {}) {
  detail::check_backward_call(exec, log_a, x, grad_log_abs_x, grad_log_a, &grad_b, opts,
                              {"log_a", "x", "grad_log_abs_x", "grad_log_a", "grad_b"});
  detail::check_backward_input(exec, log_a, b, "b", grad_log_a, "grad_log_a", grad_b, "grad_b", opts);
  const auto x_prev = parascan::shifted(x, previous_step(opts), std::remove_const_t<Y>{-limits<S>::infinity(), S(1)},
                                        opts.initial);
  prefix_scan<Policy>(exec, ops::signed_log_linear_recurrence_adjoint<S>{},
                      parascan::inputs(log_a, x, x_prev, b, grad_log_abs_x), parascan::outputs(grad_b, grad_log_a),
                      adjoint_options(opts));
}

/// The same for the four-input form (log|a|, sign a, log|b|, sign b): grad_log_a = dL/d(log|a|),
/// grad_log_b = dL/d(log|b|); either output may be exactly sign_a, log_b or sign_b (in place).
template <class Policy = use_default_policy, class Exec, class LA, class SA, class LB, class SB, class Y, class G,
          class DA, class DB,
          class S = ops::common_accumulator_t<std::remove_const_t<LA>, std::remove_const_t<LB>, std::remove_const_t<G>>>
void signed_log_linear_recurrence_backward(const Exec& exec, const sequences<LA>& log_a, const sequences<SA>& sign_a,
                                           const sequences<LB>& log_b, const sequences<SB>& sign_b,
                                           const sequences<Y>& x, const sequences<G>& grad_log_abs_x,
                                           const sequences<DA>& grad_log_a, const sequences<DB>& grad_log_b,
                                           const backward_options<ops::signed_log<S>, S>& opts = {}) {
  detail::check_backward_call(exec, log_a, x, grad_log_abs_x, grad_log_a, &grad_log_b, opts,
                              {"log_a", "x", "grad_log_abs_x", "grad_log_a", "grad_log_b"});
  const auto input = [&](const auto& view, const char* name) {
    detail::check_backward_input(exec, log_a, view, name, grad_log_a, "grad_log_a", grad_log_b, "grad_log_b", opts);
  };
  input(sign_a, "sign_a"), input(log_b, "log_b"), input(sign_b, "sign_b");
  const auto x_prev = parascan::shifted(x, previous_step(opts), std::remove_const_t<Y>{-limits<S>::infinity(), S(1)},
                                        opts.initial);
  prefix_scan<Policy>(exec, ops::signed_log_linear_recurrence_adjoint<S>{},
                      parascan::inputs(log_a, sign_a, x, x_prev, log_b, sign_b, grad_log_abs_x),
                      parascan::outputs(grad_log_b, grad_log_a), adjoint_options(opts));
}

}  // namespace parascan
