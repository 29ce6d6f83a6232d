// Basic operators: sum, product, max, min over one arithmetic type T (accumulating in Acc).
#pragma once

#include <limits>

#include <parascan/config.hpp>

namespace parascan::ops {

/// Running sum; Acc is the accumulator (e.g. float for bf16 storage).
template <class T, class Acc = T>
struct sum {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return Acc(0); }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const { return earlier + later; }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
};

/// Running product.
template <class T, class Acc = T>
struct product {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const { return Acc(1); }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const { return earlier * later; }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
};

/// Running maximum; NaN propagates (a NaN step makes every later output NaN).
template <class T, class Acc = T>
struct max {
  using value_type = Acc;
  PARASCAN_HD value_type identity() const {
    return std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::lowest();
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
    return std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::max();
  }
  PARASCAN_HD value_type operator()(const Acc& earlier, const Acc& later) const {
    return (earlier != earlier || earlier < later) ? earlier : later;
  }
  PARASCAN_HD value_type lift(const T& x) const { return static_cast<Acc>(x); }
};

}  // namespace parascan::ops
