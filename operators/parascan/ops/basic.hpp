// Basic operators: sum, product, max, min over one arithmetic type T (accumulating in Acc), and their
// named wrappers cumsum, cumprod, cummax, cummin (state in accumulator_t<T>: fp32 for bf16/fp16).
#pragma once

#include <limits>
#include <type_traits>

#include <parascan/config.hpp>
#include <parascan/layout.hpp>
#include <parascan/options.hpp>

#include "accumulator.hpp"

namespace parascan::ops {

/// Running sum; Acc is the accumulator (e.g. float for bf16 storage).
template <class T, class Acc = T>
struct sum {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return Acc(0); }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const { return earlier + later; }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
  bool finite(const Acc& s) const { return finite_value(s); }
};

/// Running product.
template <class T, class Acc = T>
struct product {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return Acc(1); }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const { return earlier * later; }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
  bool finite(const Acc& s) const { return finite_value(s); }
};

/// Running maximum; NaN propagates (a NaN step makes every later output NaN).
template <class T, class Acc = T>
struct max {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const {
    return limits<Acc>::has_infinity ? -limits<Acc>::infinity()
                                                  : limits<Acc>::lowest();
  }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const {
    return (earlier != earlier || earlier > later) ? earlier : later;
  }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
};

/// Running minimum; NaN propagates.
template <class T, class Acc = T>
struct min {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const {
    return limits<Acc>::has_infinity ? limits<Acc>::infinity()
                                                  : limits<Acc>::max();
  }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const {
    return (earlier != earlier || earlier < later) ? earlier : later;
  }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
};

}  // namespace parascan::ops

namespace parascan {

/// Running sum, product, max, min of every sequence of `in` into `out` (same shape; `out` may be a
/// storage type, rounded once per step). initial/final values are in accumulator_t<T>.
template <class Exec, class T, class Y>
void cumsum(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
            const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::sum<std::remove_const_t<T>, ops::accumulator_t<T>>{}, in, out, opts);
}
template <class Exec, class T, class Y>
void cumprod(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
             const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::product<std::remove_const_t<T>, ops::accumulator_t<T>>{}, in, out, opts);
}
template <class Exec, class T, class Y>
void cummax(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
            const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::max<std::remove_const_t<T>, ops::accumulator_t<T>>{}, in, out, opts);
}
template <class Exec, class T, class Y>
void cummin(const Exec& exec, const sequences<T>& in, const sequences<Y>& out,
            const options<ops::accumulator_t<T>>& opts = {}) {
  prefix_scan(exec, ops::min<std::remove_const_t<T>, ops::accumulator_t<T>>{}, in, out, opts);
}

}  // namespace parascan
