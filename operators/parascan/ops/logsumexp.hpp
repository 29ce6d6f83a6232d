// Log-space accumulation: logcumsumexp (prefix) and logsumexp (reduce).
//
// Math: the state is a log-value; combining is logaddexp(x, y) = log(exp(x) + exp(y)), computed stably
// as max(x, y) + log1p(exp(-|x - y|)) so that nothing overflows or underflows before the log. It is
// associative and commutative (time order does not matter here), with identity -inf = log(0).
//
// Special values: logaddexp(-inf, -inf) = -inf (no -inf - -inf = NaN), logaddexp(+inf, y) = +inf for
// any non-NaN y, and NaN propagates (a NaN step makes every later output NaN).
//
// State: Acc = accumulator_t<T> (fp32 for bf16/fp16 storage, else T). Input: one sequence of log-values
// (any type that converts to Acc). project/seed: the state itself (an initial state is a log-value).
//
// Precision: each combine rounds about one ulp of the result; errors stay relative to |result|, so the
// absolute error of a log-value is ~ eps * (|result| + log2(steps) ulps of the terms).
#pragma once

#include <cmath>
#include <limits>

#include <parascan/config.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>

#include "accumulator.hpp"

namespace parascan::ops {

/// log(exp(x) + exp(y)) without overflow, -inf safe, NaN propagating.
template <class S>
PARASCAN_HD PARASCAN_INLINE S logaddexp(S x, S y) {
  const S hi = x > y ? x : y;
  // Equal infinities (both -inf: zero plus zero; both +inf) would make x - y NaN; the max is exact.
  // A NaN fails x > y, so hi = y: the NaN test below catches x.
  if (x != x) return x;
  if (hi == -std::numeric_limits<S>::infinity() || hi == std::numeric_limits<S>::infinity()) return hi;
  const S lo = x > y ? y : x;
  return hi + std::log1p(std::exp(lo - hi));  // lo - hi <= 0: exp cannot overflow; NaN y passes through
}

/// The logaddexp operator over log-values stored as T, accumulated in Acc.
template <class T, class Acc = accumulator_t<T>>
struct log_add_exp {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return -std::numeric_limits<Acc>::infinity(); }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const {
    return logaddexp(earlier, later);
  }
  PARASCAN_HD value_type lift(const T& x) const { return to_accumulator<Acc>(x); }
};

}  // namespace parascan::ops

namespace parascan {

/// out[t] = log(sum over steps up to t of exp(in[step])) for every sequence (options: exclusive, reverse,
/// an initial log-value per sequence, final totals). `out` may be a storage type (bf16 rounds once).
template <class Exec, class T, class Y>
void logcumsumexp(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
                  const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::log_add_exp<std::remove_const_t<T>>{}, in, out, opts);
}

/// result[s] = log(sum over every step of sequence s of exp(in[step])), one value per sequence.
template <class Exec, class T>
void logsumexp(const Exec& exec, const sequences<T>& in, ops::accumulator_t<T>* result,
               const options<ops::accumulator_t<T>>& opts = {}) {
  reduce_scan(exec, ops::log_add_exp<std::remove_const_t<T>>{}, in, result, opts);
}

}  // namespace parascan
